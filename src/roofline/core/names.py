"""The one name matcher: how a user's spelling of a device, model, system or option is looked up, and what
is suggested.  One rule for all of them (:func:`resolve`):

- an exact name or alias (case and punctuation ignored) resolves silently: ``llama3-8b`` is ``llama-3-8b``;
- a unique prefix resolves and says so (a :class:`NameResolved` warning, which the command line prints on
  stderr as ``roofline: note: 'mi300' taken as AMD Instinct MI300X``);
- an ambiguous prefix is refused with its matches listed;
- anything else is refused with the closest names suggested.

>>> normalize("H100-SXM5 80GB"), normalize("meta-llama/Llama-2-7b-hf")
('h100sxm580gb', 'metallamallama27bhf')
>>> closest("h10", {"h100": "NVIDIA H100", "a100": "NVIDIA A100", "h200": "NVIDIA H200"}, 2)
['NVIDIA H100', 'NVIDIA A100']
>>> import warnings
>>> with warnings.catch_warnings(record=True) as seen:
...     warnings.simplefilter("always")
...     resolve("mi300", {"mi300x": "MI300X", "mi250x": "MI250X"}, "device")
'MI300X'
>>> str(seen[0].message)
"'mi300' taken as MI300X (the one device it starts)"
"""

from __future__ import annotations

import difflib
import re
import warnings
from collections.abc import Callable, Mapping
from typing import TypeVar

from roofline.core.errors import RooflineError

#: Added to the similarity of a known name that starts with, or contains, what was typed.
CONTAINS_BONUS = 0.5
#: an ambiguous prefix lists at most this many of its matches (then "and N more")
MAX_LISTED = 6
#: a typo's suggestions: names this similar (difflib's ratio; its own get_close_matches default), the best always
TYPO_CUTOFF = 0.6

T = TypeVar("T")


class NameResolved(UserWarning):
    """A name was taken as another (a unique prefix): the command line prints it as a note on stderr."""


def normalize(name: str) -> str:
    """Lower case, letters and digits only: case and punctuation do not matter."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def closest(name: str, index: Mapping[str, str], n: int = 3, cutoff: float = 0.0) -> list[str]:
    """The ``n`` names in ``index`` (normalised alias -> name) closest to ``name``, best first.

    Score: difflib's similarity ratio of the normalised spellings, plus :data:`CONTAINS_BONUS`
    when an alias starts with or contains what was typed; a name scores its best alias; ties by name.
    Names scoring under ``cutoff`` are left out, except the best one (a suggestion is always made).
    """
    key = normalize(name)
    scored: dict[str, float] = {}
    for alias, target in index.items():
        score = difflib.SequenceMatcher(None, key, alias).ratio()
        if key and (alias.startswith(key) or key in alias):
            score += CONTAINS_BONUS
        scored[target] = max(scored.get(target, 0.0), score)
    ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return [t for k, (t, score) in enumerate(ranked) if k == 0 or score >= cutoff]


def prefix_matches(name: str, index: Mapping[str, T], shown: Callable[[T], str] = str) -> list[T]:
    """The distinct targets of ``index`` (normalised alias -> target) with an alias that starts with
    ``name`` (normalised), in the order of their names; none for an empty name.

    >>> prefix_matches("h1", {"h100": "H100", "h100sxm": "H100", "h100pcie": "H100 PCIe", "h200": "H200"})
    ['H100', 'H100 PCIe']
    """
    key = normalize(name)
    if not key:
        return []
    found: dict[str, T] = {}
    for alias, target in index.items():
        if alias.startswith(key):
            found.setdefault(shown(target), target)
    return [found[k] for k in sorted(found)]


def resolve(name: str, index: Mapping[str, T], what: str, *, shown: Callable[[T], str] = str,
            hint: str = "") -> T:
    """``name`` looked up in ``index`` (normalised alias -> target) by the module's rule: exact, else a unique
    prefix (with a :class:`NameResolved` warning), else a one-line error listing an ambiguous prefix's
    matches or the closest names.  ``what`` names the kind ('device'), ``shown`` a target's name, ``hint``
    ends the error (" (see 'roofline devices')")."""
    from roofline.core.text import display

    key = normalize(name)
    if key in index:
        return index[key]
    typed = f"'{display(name, 100)}'"  # escaped once: display() already shows control characters
    matches = prefix_matches(name, index, shown)
    if len(matches) == 1:
        warnings.warn(NameResolved(f"{typed} taken as {shown(matches[0])} (the one {what} it starts)"),
                      stacklevel=2)
        return matches[0]
    if matches:
        listed = ", ".join(shown(m) for m in matches[:MAX_LISTED])
        more = f" and {len(matches) - MAX_LISTED} more" if len(matches) > MAX_LISTED else ""
        raise RooflineError(f"ambiguous {what} {typed}: it starts {len(matches)} names ({listed}{more}); give more of it{hint}")
    near = closest(name[:100], {k: shown(v) for k, v in index.items()}, 3, TYPO_CUTOFF)
    raise RooflineError(f"unknown {what} {typed}; closest: {', '.join(near)}{hint}" if near
                        else f"unknown {what} {typed}{hint}")
