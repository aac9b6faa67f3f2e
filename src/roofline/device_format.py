"""Moved to :mod:`roofline.hardware.device_format`. This path stays importable for one release (0.x), then goes.

``import roofline.device_format`` and ``from roofline.device_format import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.hardware import device_format as _moved
from roofline.hardware.device_format import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
