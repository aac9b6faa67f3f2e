"""Moved to :mod:`roofline.core.stats`. This path stays importable for one release (0.x), then goes.

``import roofline.stats`` and ``from roofline.stats import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.core import stats as _moved
from roofline.core.stats import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
