"""Moved to :mod:`roofline.core.formula`. This path stays importable for one release (0.x), then goes.

``import roofline.formula`` and ``from roofline.formula import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.core import formula as _moved
from roofline.core.formula import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
