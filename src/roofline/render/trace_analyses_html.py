"""The trace analyses (:class:`roofline.frontends.trace.analyses.suite.TraceAnalyses`) as sections of the HTML
report: a sentence per analysis (the terminal's own, :mod:`roofline.render.trace_analyses`) and its rows as
sortable tables, each kernel and op with its roofline point.

It only reads the typed results; every name from the trace is escaped (:func:`~.html_parts.esc`,
:func:`~.html_parts.name`).  The page (:func:`roofline.render.html.render_report`) places the fragment after
the roofline section.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from roofline.core.units import format_bandwidth, format_bytes, format_flops, format_seconds
from roofline.render.html_parts import details, esc
from roofline.render.html_parts import num_cell as _num
from roofline.render.html_parts import sortable_table as _table
from roofline.render.html_parts import text_cell as _txt
from roofline.render.trace_analyses import section_lines

if TYPE_CHECKING:
    from roofline.frontends.trace.analyses.critical import CriticalPath
    from roofline.frontends.trace.analyses.idle import IdleTime
    from roofline.frontends.trace.analyses.kernels import KernelBreakdown
    from roofline.frontends.trace.analyses.launch import LaunchDelay
    from roofline.frontends.trace.analyses.memory import MemoryTimeline
    from roofline.frontends.trace.analyses.overlap import Overlap
    from roofline.frontends.trace.analyses.suite import TraceAnalyses
    from roofline.frontends.trace.analyses.timeline import RooflinePoint

POINT_HEADS = ["op", "bound", "roof", "FLOP/B", "attained", "roof rate", "of roof", "efficiency"]


def _s(x: float) -> str:
    return format_seconds(x) if math.isfinite(x) else "-"


def _share(x: float) -> str:
    return f"{x:.1%}" if math.isfinite(x) else "-"


def _secs(x: float) -> str:
    return _num(x, _s(x))


def _pcell(x: float) -> str:
    return _num(x, _share(x))


def _point_cells(p: RooflinePoint | None) -> str:
    """The roofline point's cells (:data:`POINT_HEADS`); dashes without one."""
    if p is None:
        return "<td>-</td>" * len(POINT_HEADS)
    rate = format_flops if p.unit == "FLOP/s" else format_bandwidth

    def r(x: float) -> str:
        return _num(x, rate(x, 3) if math.isfinite(x) else "-")

    return (_txt(p.op) + f"<td>{esc(p.bound)}</td>" + _txt(p.roof)
            + _num(p.intensity, f"{p.intensity:.3g}" if math.isfinite(p.intensity) else "-")
            + r(p.attained) + r(p.roof_rate)
            + _num(p.of_roof, f"{p.of_roof:.2g}" if math.isfinite(p.of_roof) else "-")
            + _num(p.efficiency, f"{p.efficiency:.2g}" if math.isfinite(p.efficiency) else "-"))


def _para(lines: Sequence[str]) -> str:
    return "".join(f"<p>{esc(x)}</p>" for x in lines)


def _idle_html(i: IdleTime) -> str:
    gpu = i.device == "gpu"
    heads = ["stream" if gpu else "thread", "kernels" if gpu else "ops", "busy", "idle",
             *(["host wait", "kernel wait", "other"] if gpu else [])]
    rows = [f"<tr>{_txt(s.stream)}{_num(s.kernels, f'{s.kernels:,}')}{_secs(s.busy)}{_secs(s.idle)}"
            + (f"{_secs(s.host_wait)}{_secs(s.kernel_wait)}{_secs(s.other)}" if gpu else "") + "</tr>"
            for s in i.streams]
    gaps = [f"<tr>{_txt(g.stream)}{_secs(g.start)}{_secs(g.seconds)}<td>{esc(g.cause)}</td>{_txt(g.after)}"
            f"{_txt(g.op)}</tr>" for g in i.gaps]
    return (_table(heads, rows, "idle")
            + (_table(["where", "at (from the first kernel)", "gap", "cause", "before", "its op"], gaps, "gaps")
               if gaps else ""))


def _kernels_html(k: KernelBreakdown) -> str:
    heads = ["kernel", "kind", "calls", "time", f"% of {k.step_share_of}", f"% of {k.share_of}", "median",
             "25%", "75%", "max", *POINT_HEADS]
    rows = [f"<tr>{_txt(r.name)}<td>{esc(r.kind)}</td>{_num(r.count, f'{r.count:,}')}{_secs(r.seconds)}"
            f"{_pcell(r.step_share)}{_pcell(r.share)}{_secs(r.q[2])}{_secs(r.q[1])}{_secs(r.q[3])}{_secs(r.q[4])}"
            f"{_point_cells(r.point)}</tr>" for r in k.rows]
    return _table(heads, rows, "kernels")


def _overlap_html(o: Overlap) -> str:
    rows = [f"<tr>{_txt(s.step)}{_secs(s.comm)}{_pcell(s.ratio)}</tr>" for s in o.steps]
    return _table(["step", "communication", "ran beside compute"], rows, "overlap") if rows else ""


def _launch_html(d: LaunchDelay) -> str:
    stretches = [f"<tr>{_txt(s.stream)}{_secs(s.start)}{_secs(s.seconds)}{_num(s.kernels, str(s.kernels))}"
                 f"{_pcell(s.busy)}</tr>" for s in d.stretches]
    slow = [f"<tr>{_secs(w.delay)}{_txt(w.kernel)}{_txt(w.op)}</tr>" for w in d.slowest]
    return ((_table(["stream", "at", "stretch", "kernels", "GPU busy"], stretches, "stretches") if stretches else "")
            + (_table(["launch delay", "kernel", "op"], slow, "delays") if slow else ""))


def _critical_html(c: CriticalPath) -> str:
    heads = ["op", "its longest kernel", "time on the path", f"% of {c.share_of}", f"% of {c.step_share_of}",
             *POINT_HEADS]
    rows = [f"<tr>{_txt(o.op or '(no op)')}{_txt(o.kernel)}{_secs(o.seconds)}{_pcell(o.share)}{_pcell(o.step_share)}"
            f"{_point_cells(o.point)}</tr>" for o in c.ops]
    segs = [f"<tr><td>{esc(k)}</td>{_secs(v)}</tr>" for k, v in c.by_segment]
    return _table(["segment", "time"], segs, "segments") + _table(heads, rows, "path")


def _memory_html(m: MemoryTimeline) -> str:
    def b(x: float) -> str:
        return _num(x, format_bytes(x))

    rows = [f"<tr>{_txt(d.device)}{b(d.peak)}{_secs(d.peak_at)}{_txt(d.peak_step)}{b(d.start)}{b(d.end)}"
            f"{_num(d.events, f'{d.events:,}')}{b(d.allocated)}{b(d.freed)}</tr>" for d in m.devices]
    return _table(["device", "peak", "at", "in step", "at the start", "at the end", "events", "allocated", "freed"],
                  rows, "memory")


#: (attribute, its section's lines that are sentences, not rows of its tables, table renderer), in report order
TABLES: tuple[tuple[str, int, Any], ...] = (
    ("idle", 2, _idle_html), ("kernels", 1, _kernels_html), ("overlap", 1, _overlap_html),
    ("launch", 2, _launch_html), ("critical_path", 1, _critical_html), ("memory", 0, _memory_html))


def analyses_html(t: TraceAnalyses, heading: str = "Trace analyses", anchor: str = "analyses") -> str:
    """Every analysis computed, a block each (its sentences, then its tables), then the skipped ones and why."""
    blocks = []
    for attr, lead, table in TABLES:
        got = getattr(t, attr)
        if got is None:
            continue
        title, lines = section_lines(t, attr)
        lead = 1 if attr == "idle" and t.device != "cuda" else lead  # a CPU trace's idle has no line by cause
        body = _para(lines[:lead]) + f'<div style="overflow-x:auto">{table(got)}</div>'  # wide tables scroll
        blocks.append(details(title[:1].upper() + title[1:], body, open_=True))
    skipped = "".join(f"<li>{esc(a)}: {esc(why)}</li>" for a, why in t.skipped)
    return (f'<section id="{esc(anchor)}"><h2>{esc(heading)}</h2>'
            '<p class="note">Shares say what they are of: "% of step time" is of the profiler steps\' time (the '
            'kernels\' span without steps), "% of GPU kernel time" of all kernels\' time.  Each kernel and op sits on '
            "its roofline point: its intensity (FLOP/B), the rate it attained in its binding unit (FLOP/s when "
            "compute-bound, B/s otherwise) against that roof, and its efficiency (roofline time / measured).</p>"
            + "".join(blocks) + (f"<p>skipped:</p><ul>{skipped}</ul>" if skipped else "") + "</section>")


def ranks_analyses_html(ranks: Sequence[tuple[Any, TraceAnalyses]]) -> str:
    """Each rank's analyses, a section each."""
    return "".join(analyses_html(t, f"Trace analyses: rank {key}", f"analyses-rank{key}") for key, t in ranks)
