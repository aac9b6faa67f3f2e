"""Moved to :mod:`roofline.hardware.device`. This path stays importable for one release (0.x), then goes.

``import roofline.device`` and ``from roofline.device import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.hardware import device as _moved
from roofline.hardware.device import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
