"""Moved to :mod:`roofline.hardware.bench_facts`. This path stays importable for one release (0.x), then goes.

``import roofline.bench_facts`` and ``from roofline.bench_facts import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.hardware import bench_facts as _moved
from roofline.hardware.bench_facts import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
