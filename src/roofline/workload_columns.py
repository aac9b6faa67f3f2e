"""Moved to :mod:`roofline.work.workload_columns`. This path stays importable for one release (0.x), then goes.

``import roofline.workload_columns`` and ``from roofline.workload_columns import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.work import workload_columns as _moved
from roofline.work.workload_columns import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
