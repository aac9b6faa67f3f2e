"""Moved to :mod:`roofline.core.precision`. This path stays importable for one release (0.x), then goes.

``import roofline.precision`` and ``from roofline.precision import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.core import precision as _moved
from roofline.core.precision import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
