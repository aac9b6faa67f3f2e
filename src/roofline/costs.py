"""Moved to :mod:`roofline.work.costs`. This path stays importable for one release (0.x), then goes.

``import roofline.costs`` and ``from roofline.costs import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.work import costs as _moved
from roofline.work.costs import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
