"""Moved to :mod:`roofline.words.advice`. This path stays importable for one release (0.x), then goes.

``import roofline.advice`` and ``from roofline.advice import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.words import advice as _moved
from roofline.words.advice import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
