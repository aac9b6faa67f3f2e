"""Citations under a table: each source numbered once, so a table row stays one line, with the figure each row
took from it (the provenance's note) listed under it (``roofline device``)."""

from __future__ import annotations

from dataclasses import replace

from roofline.core.text import display
from roofline.hardware.ceilings import Provenance
from roofline.render.fit import wrap_line


class Citations:
    """Call it with a provenance and what it is for ('bf16 matrix'): '[3]', the number of its source (kind,
    source, url); :meth:`lines` writes the sources with the notes taken from each.

    >>> cite = Citations()
    >>> cite(Provenance("datasheet", "NVIDIA H100", note="989 TFLOP/s"), "bf16 matrix")
    '[1]'
    >>> cite(Provenance("datasheet", "NVIDIA H100", note="67 TFLOP/s"), "fp32 vector")
    '[1]'
    >>> len(cite.lines(80))  # the source once, then one line per figure taken from it
    3
    """

    def __init__(self) -> None:
        self.sources: dict[str, int] = {}
        self.taken: dict[int, list[str]] = {}

    def __call__(self, p: Provenance, what: str) -> str:
        k = self.sources.setdefault(display(replace(p, note="").describe(), 2000), len(self.sources) + 1)
        if p.note:
            self.taken.setdefault(k, []).append(f"{what}: {display(p.note, 2000)}")
        return f"[{k}]"

    def lines(self, width: int) -> list[str]:
        out: list[str] = []
        for text, n in self.sources.items():
            out.extend(wrap_line(f"  [{n}] {text}", width, subsequent="      "))
            out.extend(x for note in self.taken.get(n, ()) for x in wrap_line(f"      {note}", width,
                                                                                subsequent="        "))
        return out
