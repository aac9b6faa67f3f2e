"""Moved to :mod:`roofline.engine.analysis`. This path stays importable for one release (0.x), then goes.

``import roofline.analysis`` and ``from roofline.analysis import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.engine import analysis as _moved
from roofline.engine.analysis import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
