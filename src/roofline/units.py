"""Moved to :mod:`roofline.core.units`. This path stays importable for one release (0.x), then goes.

``import roofline.units`` and ``from roofline.units import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.core import units as _moved
from roofline.core.units import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
