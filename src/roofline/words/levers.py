"""The records of advice: a :class:`Lever` (one change and its computed effect), the top ops' :class:`OpAdvice`
and the whole :class:`Advice`, with their text.  :mod:`roofline.words.advice` computes them; the summary
(:mod:`roofline.words.summary`, below advice) carries them and the renderers read them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from roofline.core.units import format_count, format_speedup
from roofline.engine.analysis import Analysis

NO_LEVER = "no lever found"


@dataclass(frozen=True)
class Lever:
    """One change and its computed effect.

    ``before`` / ``after``: roofline seconds of the scope (the whole workload, or the op(s) the
    lever touches) before and after; ``after_analysis``: the re-analysed workload with the lever
    applied, from which every figure was read.
    """

    name: str
    text: str
    before: float
    after: float
    after_analysis: Analysis
    figures: dict[str, float] = field(default_factory=dict)
    #: what ``speedup`` is the gain in: 'time' (the scope's seconds, what one request waits) or 'throughput'
    #: (seconds per token over the batch: tokens/s, while each sequence may wait longer, ``latency_x``)
    gains: str = "time"
    latency_x: float = 1.0  # throughput levers: each sequence's wait after / before (> 1: slower per token)

    @property
    def speedup(self) -> float:
        return self.before / self.after if self.after > 0 else math.inf

    def effect(self) -> str:
        """What the lever improves, and by how much: '3.16x faster' (time), or for a throughput lever its gain
        and what it costs each sequence: '70.4x throughput, 3.64x slower per token'."""
        if self.gains != "throughput":
            return format_speedup(self.speedup)
        text = f"{format_count(self.speedup)}x throughput"
        if self.latency_x >= 1.005:
            return text + f", {format_count(self.latency_x)}x slower per token"
        if 0 < self.latency_x <= 1 / 1.005:
            return text + f", {format_count(1 / self.latency_x)}x faster per token"
        return text

    def line(self) -> str:
        """'batching: 70.4x throughput, 3.64x slower per token; batch 1 -> 64: ...': what it improves first."""
        return f"{self.name}: {self.effect()}; {self.text}"

    def __repr__(self) -> str:  # not the dataclass dump: after_analysis holds a whole workload
        from roofline.core.text import one_line

        return f"<Lever {one_line(self.line(), 300)}>"


@dataclass
class OpAdvice:
    """One of the top ops by time: its roof, its headroom and its levers."""

    index: int
    name: str
    share: float
    roof: str
    headroom: str
    levers: list[Lever]

    def __repr__(self) -> str:
        from roofline.core.text import one_line

        return (f"<OpAdvice {one_line(self.name, 80)!r} ({self.share:.0%} of the time): "
                f"{len(self.levers)} lever{'' if len(self.levers) == 1 else 's'}>")


@dataclass
class Block:
    heading: str
    lines: list[str]


@dataclass
class Advice:
    """The whole-workload verdict and levers, then the top ops'."""

    analysis: Analysis
    roof: str
    headroom: str
    levers: list[Lever]
    ops: list[OpAdvice]
    notes: list[str] = field(default_factory=list)  # what advice left out, and why (e.g. zero-time ops)

    def blocks(self) -> list[Block]:
        a = self.analysis
        out = [Block(f"whole workload: {a.workload.title} on {a.device.name}",
                     [f"limiting roof: {self.roof}", f"headroom: {self.headroom}",
                      *([lv.line() for lv in self.levers] or [NO_LEVER]), *(f"note: {n}" for n in self.notes)])]
        for o in self.ops:
            out.append(Block(f"op {o.name} ({o.share:.0%} of the time)",
                             [f"limiting roof: {o.roof}", f"headroom: {o.headroom}",
                              *([lv.line() for lv in o.levers] or [NO_LEVER])]))
        return out

    def __repr__(self) -> str:
        """One line: what on what, how many levers and the best one (its speed-up), not the dataclass dump."""
        from roofline.core.text import one_line

        a = self.analysis
        best = max(self.levers, key=lambda lv: lv.speedup, default=None)
        found = (f"{len(self.levers)} lever{'' if len(self.levers) == 1 else 's'}, best: {best.name} "
                 f"({best.effect()})" if best is not None else NO_LEVER)
        return (f"<Advice for '{one_line(a.workload.title, 80)}' on '{one_line(a.device.name, 80)}': {found}; "
                f"limiting roof: {one_line(self.roof, 160)}>")

    def _repr_html_(self) -> str:
        """Jupyter: the limiting roof, the headroom and the levers as short lists (the top ops' levers after)."""
        from roofline.core.text import for_html

        def items(lines: list[str]) -> str:
            return "".join(f"<li>{for_html(x, 400)}</li>" for x in lines)

        whole = self.blocks()[0]
        parts = [f"<p><b>{for_html(whole.heading, 200)}</b></p><ul>{items(whole.lines[:2])}</ul>",
                 f"<ol>{items(whole.lines[2:])}</ol>"]
        ops = []
        for o in self.ops:
            best = max(o.levers, key=lambda lv: lv.speedup, default=None)
            ops.append(f"{o.name} ({o.share:.0%} of the time, {o.roof.split(';')[0]}): "
                       + (f"best of {len(o.levers)} lever(s): {best.line()}" if best is not None else NO_LEVER))
        if ops:
            parts.append(f"<p>top ops by roofline time:</p><ul>{items(ops)}</ul>")
        return "<div>" + "".join(parts) + "</div>"

    def lines(self) -> list[str]:
        """Plain text, for the terminal."""
        out = []
        for b in self.blocks():
            out.append(b.heading)
            out += [f"  {x}" for x in b.lines]
        return out
