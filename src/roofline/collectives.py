"""Moved to :mod:`roofline.engine.collectives`. This path stays importable for one release (0.x), then goes.

``import roofline.collectives`` and ``from roofline.collectives import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.engine import collectives as _moved
from roofline.engine.collectives import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
