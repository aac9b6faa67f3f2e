"""Moved to :mod:`roofline.core.arguments`. This path stays importable for one release (0.x), then goes.

``import roofline.arguments`` and ``from roofline.arguments import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.core import arguments as _moved
from roofline.core.arguments import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
