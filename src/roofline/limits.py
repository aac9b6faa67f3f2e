"""Moved to :mod:`roofline.core.limits`. This path stays importable for one release (0.x), then goes.

``import roofline.limits`` and ``from roofline.limits import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.core import limits as _moved
from roofline.core.limits import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
