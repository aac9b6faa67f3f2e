"""Moved to :mod:`roofline.hardware.calibration`. This path stays importable for one release (0.x), then goes.

``import roofline.calibration`` and ``from roofline.calibration import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.hardware import calibration as _moved
from roofline.hardware.calibration import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
