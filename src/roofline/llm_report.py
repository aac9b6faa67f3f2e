"""Moved to :mod:`roofline.words.llm_report`. This path stays importable for one release (0.x), then goes.

``import roofline.llm_report`` and ``from roofline.llm_report import X`` give the module itself (one object, so a patch
through either name is seen through both).
"""

import sys

from roofline.words import llm_report as _moved
from roofline.words.llm_report import *  # noqa: F403  (for static tools; at run time the alias below is what counts)

sys.modules[__name__] = _moved
