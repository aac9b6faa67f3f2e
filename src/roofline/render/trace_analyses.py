"""Renderers of the trace analyses (:class:`roofline.frontends.trace.analyses.suite.TraceAnalyses`) and of a
trace diff (:class:`roofline.frontends.trace.analyses.diff.TraceDiff`): text sections and JSON.

They only read: every figure is computed in :mod:`roofline.frontends.trace.analyses`.  Names from the trace
(kernels, ops, streams) are made visible for the terminal (:func:`roofline.core.text.visible`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import TYPE_CHECKING, Any

from roofline.core.fileio import json_ready
from roofline.core.text import visible
from roofline.core.units import format_bandwidth, format_bytes, format_flops, format_seconds

if TYPE_CHECKING:
    from roofline.frontends.trace.analyses.critical import CriticalPath
    from roofline.frontends.trace.analyses.diff import TraceDiff
    from roofline.frontends.trace.analyses.idle import IdleTime
    from roofline.frontends.trace.analyses.kernels import KernelBreakdown
    from roofline.frontends.trace.analyses.launch import LaunchDelay
    from roofline.frontends.trace.analyses.memory import MemoryTimeline
    from roofline.frontends.trace.analyses.overlap import Overlap
    from roofline.frontends.trace.analyses.suite import TraceAnalyses
    from roofline.frontends.trace.analyses.timeline import RooflinePoint

SCHEMA = "roofline.trace-analyses/1"
DIFF_SCHEMA = "roofline.trace-diff/1"
NAME = 60  # characters of a kernel name shown


def _s(x: float) -> str:
    return format_seconds(x) if math.isfinite(x) else "-"


def _signed(x: float) -> str:
    return ("+" if x >= 0 else "-") + _s(abs(x))


def _pct(x: float) -> str:
    return f"{x:.0%}" if math.isfinite(x) else "-"


def _name(text: str) -> str:
    t = visible(text)
    return t if len(t) <= NAME else t[:NAME - 3] + "..."


def point_text(p: RooflinePoint | None) -> str:
    """'op mm, 45.8 FLOP/B: 1.2 TB/s of HBM 3.35 TB/s, at 0.36 of its memory roof' ('' without a point)."""
    if p is None:
        return ""
    rate = format_flops if p.unit == "FLOP/s" else format_bandwidth
    ai = f", {p.intensity:.3g} FLOP/B" if math.isfinite(p.intensity) else ""
    if not math.isfinite(p.of_roof):
        return f"op {visible(p.op)}{ai}: {p.bound}-bound, no work on its {visible(p.roof)} roof"
    return (f"op {visible(p.op)}{ai}: {rate(p.attained, 3)} of {visible(p.roof)} {rate(p.roof_rate, 3)}, "
            f"at {p.of_roof:.2g} of its {p.bound} roof")


def section_lines(t: TraceAnalyses, attr: str) -> tuple[str, list[str]]:
    """One analysis's section (``attr``: a field of :class:`TraceAnalyses` it is not None in): its title and
    lines, unwrapped (the terminal wraps them, the HTML report makes paragraphs of its first ones)."""
    got = getattr(t, attr)
    if attr == "idle":
        return ("GPU idle time" if t.device == "cuda" else "CPU idle time"), _idle(got)
    title, lines_of = _SECTIONS[attr]
    return title, lines_of(got)


#: the analyses' fields of TraceAnalyses, in report order
FIELDS = ("idle", "kernels", "overlap", "launch", "critical_path", "memory")


def analyses_lines(t: TraceAnalyses) -> list[str]:
    """Every analysis computed, as text sections, then the skipped ones and why (each line wrapped by words to
    the terminal's width)."""
    from roofline.render.fit import wrap_line

    out: list[str] = []
    for attr in FIELDS:
        if getattr(t, attr) is not None:
            title, lines = section_lines(t, attr)
            out.extend(["", f"{title}:", *(w for x in lines for w in wrap_line("  " + x, None, "  ", "      "))])
    for a, why in t.skipped:
        out.extend(wrap_line(f"  skipped {a}: {why}", None, "  ", "      "))
    return out


def _idle(i: IdleTime) -> list[str]:
    out = [f"idle {_s(i.idle)} of a {_s(i.span)} span ({_pct(i.idle_share)}); busy {_s(i.busy)}"]
    if i.device == "gpu":
        out.append(f"by cause, summed over streams: host wait {_s(i.host_wait)}, kernel wait {_s(i.kernel_wait)}, "
                   f"other {_s(i.other)}")
    for s in i.streams:
        out.append(f"{visible(s.stream)}: {s.kernels} {'kernels' if i.device == 'gpu' else 'ops'}, busy {_s(s.busy)}, "
                   f"idle {_s(s.idle)}" + (f" (host wait {_s(s.host_wait)}, kernel wait {_s(s.kernel_wait)}, other "
                                          f"{_s(s.other)})" if i.device == "gpu" else ""))
    for g in i.gaps:
        out.append(f"gap {_s(g.seconds)} at +{_s(g.start)} on {visible(g.stream)}: {g.cause}"
                   + (f", before {_name(g.after)}" if g.after else "") + (f" (op {visible(g.op)})" if g.op else ""))
    return out


def _kernels(k: KernelBreakdown) -> list[str]:
    out = [f"{k.kernels:,} kernels ({k.distinct:,} distinct), {_s(k.seconds)} of {k.share_of}: "
           + ", ".join(f"{name} {_pct(share)}" for name, _, share in k.by_kind)]
    for r in k.rows:
        point = point_text(r.point)
        out.append(f"{_pct(r.step_share):>4} of {k.step_share_of}, {_pct(r.share):>4} of {k.share_of}: "
                   f"{_s(r.seconds)} x{r.count} {_name(r.name)} [{r.kind}]; median {_s(r.q[2])} (quartiles "
                   f"{_s(r.q[1])}..{_s(r.q[3])}, max {_s(r.q[4])})" + (f"; {point}" if point else ""))
    return out


def _overlap(o: Overlap) -> list[str]:
    out = [f"{_pct(o.ratio)} of the communication ({_s(o.comm)}) ran beside compute ({_s(o.overlapped)}); "
           f"{_s(o.comm - o.overlapped)} exposed"]
    out += [f"{visible(s.step)}: {_pct(s.ratio)} of {_s(s.comm)}" for s in o.steps]
    return out


def _launch(d: LaunchDelay) -> list[str]:
    out = [f"{d.linked:,} of {d.kernels:,} kernels joined to their launch: delay median {_s(d.median)}, p90 "
           f"{_s(d.p90)}, max {_s(d.max)}; launch calls {_s(d.launch_median)} (median)",
           f"{d.launch_bound:,} kernels launch-bound (the stream had drained); {d.short_kernels:,} shorter than their "
           f"launch call; {len(d.stretches)} launch-bound stretch(es) shown, {_s(d.stretch_seconds)} in all"]
    out += [f"stretch {_s(s.seconds)} at +{_s(s.start)} on {visible(s.stream)}: {s.kernels} kernels, GPU busy "
            f"{_pct(s.busy)}" for s in d.stretches]
    out += [f"delay {_s(w.delay)}: {_name(w.kernel)}" + (f" (op {visible(w.op)})" if w.op else "") for w in d.slowest]
    return out


def _critical(c: CriticalPath) -> list[str]:
    out = [f"{visible(c.step)} ({_s(c.step_seconds)}): path {_s(c.seconds)} through {c.kernels} kernel(s): "
           + ", ".join(f"{k} {_s(v)}" for k, v in c.by_segment if v > 0)]
    for o in c.ops:
        point = point_text(o.point)
        out.append(f"{_pct(o.share):>4} of {c.share_of} ({_pct(o.step_share)} of {c.step_share_of}): "
                   f"{_s(o.seconds)} {visible(o.op) or '(no op)'}: {_name(o.kernel)}" + (f"; {point}" if point else ""))
    return out


def _memory(m: MemoryTimeline) -> list[str]:
    out = []
    for d in m.devices:
        out.append(f"{d.device}: peak {format_bytes(d.peak)} at +{_s(d.peak_at)}"
                   + (f" ({visible(d.peak_step)})" if d.peak_step else "") + f"; {format_bytes(d.start)} at the "
                   f"start, {format_bytes(d.end)} at the end; {d.events:,} events, {format_bytes(d.allocated)} "
                   f"allocated, {format_bytes(d.freed)} freed")
        if len(d.steps) > 1:
            out.append("  at each step's end: " + ", ".join(format_bytes(s.end) for s in d.steps[:8])
                       + (" ..." if len(d.steps) > 8 else ""))
    return out


#: each analysis but idle (whose title names the device): its section's title and its lines
_SECTIONS: dict[str, tuple[str, Any]] = {"kernels": ("kernel breakdown", _kernels),
                                        "overlap": ("compute/communication overlap", _overlap),
                                        "launch": ("launch delay", _launch), "critical_path": ("critical path", _critical),
                                        "memory": ("memory", _memory)}


def analyses_json(t: TraceAnalyses) -> str:
    """The analyses as JSON (``roofline.trace-analyses/1``: the dataclasses' fields; NaN as null)."""
    return json.dumps({"schema": SCHEMA, **json_ready(dataclasses.asdict(t))}, indent=1)


def ranks_analyses_json(ranks: list[tuple[Any, TraceAnalyses]]) -> str:
    """Several ranks' analyses as one JSON document (``roofline.trace-analyses/1`` with ``ranks``)."""
    return json.dumps({"schema": SCHEMA, "ranks": [{"rank": key, **json_ready(dataclasses.asdict(t))}
                                                   for key, t in ranks]}, indent=1)


def diff_lines(d: TraceDiff, top: int = 10) -> list[str]:
    """A trace diff as text: the headline, then the largest changes, then what was added or removed."""
    out = [visible(d.headline()), f"  {visible(d.a)} -> {visible(d.b)}: {_s(d.seconds_a)} -> {_s(d.seconds_b)}"
                                  f" ({_signed(d.seconds_b - d.seconds_a)})"]
    if d.expected_ratio is not None:
        out.append(f"  devices differ: the roofs expect {d.expected_ratio:.3g}x the time on B")
    for c in d.changes[:top]:
        out.append(f"  {_signed(c.delta):>10}  {visible(c.kind)} {_name(c.name)}" + (f" ({visible(c.where)})" if c.where
                                                                                 else "")
                   + f": {_s(c.seconds_a)} -> {_s(c.seconds_b)}; {c.cause}: {c.why}")
    for what, names in (("added", d.added), ("removed", d.removed)):
        if names:
            out.append(f"  {what}: " + ", ".join(_name(n) for n in names[:top]) + (" ..." if len(names) > top else ""))
    return out


def diff_json(d: TraceDiff) -> str:
    return json.dumps({"schema": DIFF_SCHEMA, **json_ready(dataclasses.asdict(d))}, indent=1)


def as_dict(x: Any) -> dict[str, Any]:
    return json_ready(dataclasses.asdict(x))
