"""Moved to :mod:`roofline.hardware.calibration_curves`. This path stays importable for one release (0.x), then goes.

``import roofline.calibration_curves`` and ``from roofline.calibration_curves import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.hardware import calibration_curves as _moved
from roofline.hardware.calibration_curves import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
