"""Moved to :mod:`roofline.core.names`. This path stays importable for one release (0.x), then goes.

``import roofline.names`` and ``from roofline.names import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.core import names as _moved
from roofline.core.names import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
