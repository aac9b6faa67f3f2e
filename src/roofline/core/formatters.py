"""How core objects show themselves (``repr``, ``print``, Jupyter's HTML): a registry the render layer fills.

The core data classes (:class:`~roofline.engine.analysis.Analysis`) look their display up here at call time and
fall back to a plain form when nothing is registered; :mod:`roofline.render` registers its formatters when
it is imported (``import roofline`` imports it), as pandas attaches its formatters.  Neither side imports
the other: this module sits below both.

>>> FORMATTERS.get("no such kind") is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: kind ("repr", "str", "html") -> a function of the object that returns its text
FORMATTERS: dict[str, Callable[[Any], str]] = {}
