"""The pieces of the HTML report: escaping, sortable tables (ops, groups, provenance, bench), the summary,
advice and LLM lists, collapsed blocks.  Every string that came from a model or a file is escaped here
(:func:`esc`, :func:`name`); the page (:mod:`roofline.render.html`) assembles the pieces.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.core.text import LIMIT, display, for_html
from roofline.core.units import (
    format_bandwidth,
    format_bytes,
    format_flop,
    format_flops,
    format_gib,
    format_seconds,
    format_share,
)
from roofline.words.summary import noisy_ops

if TYPE_CHECKING:
    from roofline.engine.analysis import Analysis
    from roofline.hardware.device import Device
    from roofline.words.levers import Advice
    from roofline.words.llm_report import LLMReport
    from roofline.words.summary import Summary

MAX_TABLE_ROWS = 1000  # per-op table rows beyond this: only the top ops by time

#: any text longer than this is shortened on the page (a name alone: text.LIMIT)
TEXT_LIMIT = 8 * LIMIT
def esc(value: Any) -> str:
    """HTML-escape anything (quotes too), control characters visible, very long text shortened."""
    return html.escape(display(value, TEXT_LIMIT), quote=True)


def name(value: Any) -> str:
    """A name from a file (op, module, device, memory level) for HTML or plotly text: escaped and shortened."""
    return for_html(value)


def intensity_text(x: float) -> str:
    """An arithmetic intensity for reading: 'inf', '0.2', '153'."""
    return "inf" if math.isinf(x) else f"{x:.3g}"


def _num(v: float, text: str) -> str:
    """A table cell that sorts by ``v``."""
    key = "" if v is None or not math.isfinite(v) else repr(float(v))
    if v is not None and math.isinf(v):
        key = "1e308" if v > 0 else "-1e308"
    return f'<td class="n" data-v="{key}">{esc(text)}</td>'


def pct(x: float) -> str:
    """Efficiency as a percentage with 3 significant digits (0.06% must not print as 0%)."""
    return f"{x * 100:.3g}%"


def _txt(text: str) -> str:
    """A text cell (names from files among them): escaped and shortened."""
    return f"<td>{name(text)}</td>"


def _opt(v: float, fmt: Any) -> str:
    return "-" if v is None or not math.isfinite(v) else fmt(v)


def summary_items(s: Summary) -> list[str]:
    """Summary lines (plain text, escaped later): the terminal's headline, then time by kind."""
    from roofline.render.terminal import summary_lines

    lines = list(summary_lines(s))
    kinds = s.analysis.by("kind")
    if kinds and s.total_time > 0:
        lines.append("time by kind: " + ", ".join(f"{r.name} {format_share(r.share)}" for r in kinds if r.share >= 0.005))
    return lines


def ops_table(a: Analysis, limit: int = MAX_TABLE_ROWS) -> str:
    w = a.workload
    measured = w.has_measurements
    fc = a.forecast
    fc_ratio = fc.over_measured(w.columns["measured_seconds"]) if fc is not None else np.array([])
    heads = ["#", "op", "module", "kind", "count", "FLOPs", "bytes", "FLOP/B", "bound", "ceiling", "attainable",
             "time", "share"] + (["measured", "achieved", "efficiency"] if measured else [])
    if fc is not None:  # beside the bound, never in its place
        heads += ["forecast", "fc verdict"] + (["fc/meas"] if measured else [])
    rows = []
    order = a.order()
    noisy = noisy_ops(a)
    for rank, i in enumerate(order[:limit], 1):
        count = w.columns["count"][i]
        cells = [_num(rank, str(rank)), _txt(w.strings("name", i)), _txt(w.strings("group", i)),
                 _txt(w.strings("kind", i)), _num(count, f"{count:g}"),
                 _num(w.columns["flops"][i], format_flop(w.columns["flops"][i])),
                 _num(w.bytes[i], format_bytes(w.bytes[i])), _num(a.intensity[i], intensity_text(float(a.intensity[i]))),
                 _txt(a.bound[i]), _txt(a.ceiling_label(i) + (f" ({a.fallback(i)})" if a.fallback(i) else "")),
                 _num(a.attainable_flops[i], format_flops(a.attainable_flops[i])),
                 _num(a.total_op_time[i], format_seconds(a.total_op_time[i])), _num(a.share[i], f"{a.share[i]:.1%}")]
        if measured:
            sec = w.columns["measured_seconds"][i] * count
            cells += [_num(sec, _opt(sec, format_seconds) + (" ±" if noisy[i] else "")),
                      _num(a.achieved_flops[i], _opt(a.achieved_flops[i], format_flops)),
                      _num(a.efficiency[i], _opt(a.efficiency[i], pct))]
        if fc is not None:
            total = fc.total_op_time[i]  # x count, as the time column
            cells += [_num(total, _opt(total, format_seconds)), _txt(str(fc.verdict[i]))]
            if measured:
                ratio = fc_ratio[i]
                cells.append(_num(ratio, _opt(ratio, lambda x: f"{x:.3g}")))
        cls = ' class="above"' if a.above_roof[i] else ""
        rows.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    more = len(order) - limit
    foot = f'<p class="note">{more} more ops not listed (the chart and the JSON/CSV exports have all)</p>' if more > 0 else ""
    return _table(heads, rows, "ops") + foot


def groups_table(a: Analysis, key: str, label: str, depth: int | None = None, limit: int = 200) -> str:
    rows = []
    measured = a.workload.has_measurements
    for r in [r for r in a.by(key, depth) if r.ops > 0][:limit]:
        cells = [_txt(r.name), _num(r.ops, str(r.ops)), _num(r.flops, format_flop(r.flops)),
                 _num(r.bytes, format_bytes(r.bytes)), _num(r.intensity, intensity_text(r.intensity)), _txt(r.bound),
                 _num(r.time, format_seconds(r.time)), _num(r.share, f"{r.share:.1%}")]
        if measured:
            cells.append(_num(r.measured_seconds, _opt(r.measured_seconds, format_seconds)))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    heads = [label, "ops", "FLOPs", "bytes", "FLOP/B", "bound", "time", "share"] + (["measured"] if measured else [])
    return _table(heads, rows, f"by-{key}")


def _table(heads: list[str], rows: list[str], cls: str) -> str:
    head = "".join(f'<th title="click to sort">{esc(h)}</th>' for h in heads)
    return (f'<table class="sortable {esc(cls)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def provenance_html(a: Analysis) -> str:
    d = a.device
    rows = []
    for c in sorted(d.compute, key=lambda c: -c.flops):
        rows.append(f"<tr>{_txt('compute ' + c.label)}{_txt(format_flops(c.flops))}{_txt(c.provenance.describe())}</tr>")
    for m in d.memory:
        cap = (f", {format_gib(m.capacity)}" + (f" (reserve {format_gib(m.reserve)})" if m.reserve else "")
               if m.capacity else "")
        rows.append(f"<tr>{_txt('memory ' + m.level)}{_txt(format_bandwidth(m.bandwidth) + cap)}"
                    f"{_txt(m.provenance.describe())}</tr>")
    if d.interconnect is not None:
        ic = d.interconnect
        rows.append(f"<tr>{_txt('interconnect ' + ic.name)}{_txt(format_bandwidth(ic.bandwidth))}"
                    f"{_txt(ic.provenance.describe())}</tr>")
    meta = "".join(f"<li>{esc(k)}: {esc(_brief(v))}</li>" for k, v in dict(d.metadata).items())
    return (f"<p>{esc(d.name)} ({esc(d.vendor_kind())})</p>"
            + _table(["ceiling", "value", "provenance"], rows, "provenance")
            + bench_html(d) + details("Machine and settings", f"<ul>{meta}</ul>" if meta else ""))


def _brief(value: Any, limit: int = 160) -> str:
    """A metadata value for reading: numbers to 4 significant digits, long lists as their count and ends."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        if len(value) > 6:
            return f"{len(value)} values, {_brief(value[0])} .. {_brief(value[-1])}"
        text = ", ".join(_brief(v) for v in value)
    elif isinstance(value, dict):
        text = ", ".join(f"{k}: {_brief(v)}" for k, v in value.items())
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bench_html(d: Device) -> str:
    """What ``roofline bench`` measured, rounded: threads, native precisions, spec roofs, the audit, the ERT fit."""
    b = d.bench
    if b is None:
        return ""
    rows = [f"<tr>{_txt('threads')}{_txt(str(b.threads or '?'))}</tr>",
            f"<tr>{_txt('native precisions')}{_txt(', '.join(b.native) or '-')}</tr>"]
    rows += [f"<tr>{_txt(f'spec {r.precision} {r.unit}')}{_txt(format_flops(r.flops))}</tr>" for r in b.spec]
    for r in b.audit:
        raised = f"; raised {r.raised}" if r.raised else ""
        rows.append(f"<tr>{_txt('audit: ' + r.kernel)}"
                    f"{_txt(f'efficiency {r.efficiency:.2f} vs {r.roof}, {r.level} (spread {r.noise:.0%}){raised}')}</tr>")
    ert = b.ert
    if ert is not None and ert.deviation:
        worst = f"{ert.deviation[ert.worst]:+.0%} at {ert.intensity[ert.worst]:.3g} FLOP/B"
        rows.append(f"<tr>{_txt('ERT curve')}{_txt(f'{len(ert.flops)} points; largest deviation from the roofs {worst}')}</tr>")
    return details("Bench details (rounded)", _table(["measured", "figure"], rows, "bench"))


def bullets(title: str, items: Sequence[str]) -> str:
    if not items:
        return ""
    return f"<h4>{esc(title)}</h4><ul>" + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>"


def advice_html(advice: Advice) -> str:
    parts = []
    for block in advice.blocks():
        items = "".join(f"<li>{esc(x)}</li>" for x in block.lines)
        parts.append(f"<h4>{esc(block.heading)}</h4><ul>{items}</ul>")
    return "".join(parts)


def llm_html(report: LLMReport | None) -> str:
    """LLM runs (roofline.llm): the same TTFT / time per token / tokens/s / memory / ridge-batch lines the
    terminal prints under the table; '' for other workloads."""
    if report is None:
        return ""
    from roofline.render.terminal import llm_text

    lines = llm_text(report).splitlines()
    items = "".join(f"<li>{esc(x.strip().removeprefix('* '))}</li>" for x in lines[1:])
    return f"<h3>LLM inference</h3><p>{esc(lines[0].removeprefix('LLM: '))}</p><ul>{items}</ul>"


#: the table pieces other report sections build with (the trace analyses: render/trace_analyses_html.py)
num_cell, text_cell, sortable_table = _num, _txt, _table


def details(title: str, body: str, *, open_: bool = False) -> str:
    """A collapsed block (``<details>``): the page stays short, everything stays one click away."""
    return f"<details{' open' if open_ else ''}><summary>{esc(title)}</summary>{body}</details>" if body else ""
