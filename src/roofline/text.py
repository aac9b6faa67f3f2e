"""Moved to :mod:`roofline.core.text`. This path stays importable for one release (0.x), then goes.

``import roofline.text`` and ``from roofline.text import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.core import text as _moved
from roofline.core.text import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
