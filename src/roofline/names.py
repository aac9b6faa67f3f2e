"""The one name matcher: how a user's spelling of a device or model name is looked up, and what is suggested.

>>> normalize("H100-SXM5 80GB"), normalize("meta-llama/Llama-2-7b-hf")
('h100sxm580gb', 'metallamallama27bhf')
>>> closest("h10", {"h100": "NVIDIA H100", "a100": "NVIDIA A100", "h200": "NVIDIA H200"}, 2)
['NVIDIA H100', 'NVIDIA A100']
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

#: Added to the similarity of a known name that starts with, or contains, what was typed.
CONTAINS_BONUS = 0.5


def normalize(name: str) -> str:
    """Lower case, letters and digits only: case and punctuation do not matter."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def closest(name: str, index: Mapping[str, str], n: int = 3) -> list[str]:
    """The ``n`` names in ``index`` (normalised alias -> name) closest to ``name``, best first.

    Score: difflib's similarity ratio of the normalised spellings, plus :data:`CONTAINS_BONUS`
    when an alias starts with or contains what was typed; a name scores its best alias; ties by name.
    """
    key = normalize(name)
    scored: dict[str, float] = {}
    for alias, target in index.items():
        score = difflib.SequenceMatcher(None, key, alias).ratio()
        if key and (alias.startswith(key) or key in alias):
            score += CONTAINS_BONUS
        scored[target] = max(scored.get(target, 0.0), score)
    return [t for t, _ in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]
