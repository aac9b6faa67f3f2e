"""Moved to :mod:`roofline.engine.gemm_shape`. This path stays importable for one release (0.x), then goes.

``import roofline.gemm_shape`` and ``from roofline.gemm_shape import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.engine import gemm_shape as _moved
from roofline.engine.gemm_shape import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
