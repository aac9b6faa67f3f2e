"""Serving results drawn: the report's text, the HTML report and the latency-throughput chart.  They read the
typed results of :mod:`roofline.serving` (a :class:`~roofline.serving.run.ServeResult` and its figures, a
sweep's :class:`~roofline.serving.sweep.RateCurve` s) and compute nothing."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from roofline.core.text import for_chart
from roofline.core.units import format_seconds
from roofline.render.chart import figure_bytes
from roofline.render.html_parts import esc

if TYPE_CHECKING:
    from roofline.serving.figures import Load, ServingFigures, Slo
    from roofline.serving.run import ServeResult
    from roofline.serving.sweep import RateCurve

_ROWS = (("TTFT", "ttft"), ("TPOT", "tpot"), ("end to end", "e2e"))


def sec(x: Any) -> str:
    """Seconds as a person reads them (:func:`roofline.core.units.format_seconds`); 'n/a' for none."""
    if not isinstance(x, (int, float)) or not math.isfinite(x):
        return "n/a"
    return format_seconds(x)


def load_words(load: Load) -> str:
    """A Poisson run's rate served against the rate offered, in words (:class:`~roofline.serving.figures.Load`)."""
    served = (f"serves {load.served_per_s:.3g} req/s of the {load.arrived_per_s:.3g} that arrived "
              f"({load.served_share:.0%}; {load.offered_per_s:.3g} offered, as drawn)")
    if load.verdict == "keeps up":
        return served
    if load.verdict == "saturated":
        return f"saturated: {served}, under the {1 - load.tolerance:.0%} a run that keeps up serves; its queue grows"
    return (f"too short to reach steady state: {served}, and the arrivals span {sec(load.arrival_span_s)}, under "
            f"{load.steady_lifetimes:g}x the p99 generation time ({sec(load.generation_p99_s)}): give more "
            "--requests")


def slo_words(f: ServingFigures) -> str:
    """'meets the SLO', 'misses the SLO', or why a run within the p99 limits still misses ('' with no SLO)."""
    if f.slo is None:
        return ""
    if f.slo.meets_slo:
        return "meets the SLO"
    if f.slo.within and f.load is not None:
        return f"misses the SLO: {load_words(f.load)}"
    return "misses the SLO"


def headline(r: ServeResult) -> str:
    """One sentence: the rate served, its p99s, where, and the SLO's verdict."""
    f = r.figures
    where = f"{r.devices}x {r.device} tp{r.tp}" + (f" ({r.replicas} replicas)" if r.replicas > 1 else "")
    text = (f"serves {f.requests_per_s:.3g} req/s ({f.output_tokens_per_s:,.0f} output tokens/s) at p99 "
            f"TTFT {sec(f.ttft.p99)} and TPOT {sec(f.tpot.p99)} on {where} ({r.ranked_by}"
            + (f", {r.uncalibrated})" if r.uncalibrated else ")"))
    if f.kv_cache_full_at_s is not None:
        text += f"; KV cache full at {f.kv_cache_full_at_s:.3g} s, {f.preemptions} preemption(s)"
    return text + (f"; {slo_words(f)}" if f.slo is not None else "")


def result_text(r: ServeResult, usd: float | None = None) -> str:
    """The report of one run: headline, setup, memory, the percentiles table, throughput, SLO, cost, notes."""
    from roofline.core.units import format_gib
    from roofline.render.fit import Column, table_lines

    f, m = r.figures, r.memory
    lines = [headline(r) + ".",
             f"{r.model} on {r.devices}x {r.device}: {r.requests}; {r.scheduler}",
             *([_setup_line(r.setup)] if r.setup else []),
             # capacities in GiB, as every command shows them
             f"memory per device: weights {format_gib(m['weights'])}, activations {format_gib(m['activations'])}, "
             f"KV cache {format_gib(m['kv_cache'])} ({f.kv_cache_blocks:,} blocks) of {format_gib(m['usable'])}"]
    rows = [{"": key, **{k: sec(getattr(getattr(f, key), k)) for k in ("p50", "p90", "p99", "mean")}}
            for _, key in _ROWS]
    lines += table_lines([Column("", kind="label", keep=True), *(Column(k, keep=True) for k in ("p50", "p90", "p99")),
                          Column("mean", priority=1)], rows)
    lines.append(f"throughput {f.output_tokens_per_s:,.0f} output tokens/s ({f.per_device_output_tokens_per_s:,.0f}"
                 f" per device), {f.requests_per_s:.3g} req/s over {f.makespan_s:.3g} s; {f.iterations:,} "
                 f"iterations, at most {f.max_running} running, {f.preemptions} preemption(s)")
    if f.load is not None:
        lines.append(f"load: {load_words(f.load)}")
    if f.slo is not None:
        lines.append(f"SLO (p99 TTFT {sec(f.slo.slo.ttft)}, TPOT {sec(f.slo.slo.tpot)}): "
                     f"{'met' if f.slo.meets_slo else 'missed'}; goodput {f.slo.goodput_tokens_per_s:,.0f} tokens/s; "
                     f"{f.slo.slo_attainment:.1%} of requests within both")
    if usd is not None:
        lines.append(f"cost ${usd:.3g} per million output tokens at this rate")
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines) + "\n"


def _setup_line(s: Mapping[str, Any]) -> str:
    """The run's model, read from :func:`roofline.serving.run.setup`: precisions, length laws, bytes model."""
    from roofline.core.text import display

    return (f"model: wbits {s['wbits']}, abits {s['abits']}, kvbits {s['kvbits']}, rbits {s['rbits']}"
            + (f", routed experts {s['experts']}" if s.get("experts") else "") + "; "
            f"kv reads {s['kv_reads']}; isl {display(s['isl'], 80)}, osl {display(s['osl'], 80)}; "
            f"bytes model: {s['bytes_model']}" + (f"; {s['parallel']}" if s.get("parallel") else ""))


def point_verdict(f: ServingFigures) -> str:
    """A swept rate's SLO cell: met, missed, or why a rate within the p99 limits missed."""
    if f.slo is not None and not f.slo.meets_slo and f.slo.within and f.load is not None:
        return f.load.verdict
    return "met" if f.meets_slo else "missed"


def sweep_text(curves: Sequence[RateCurve], slo: Slo, usd: Mapping[int, float]) -> str:
    """Per tp size: the highest rate meeting ``slo`` (``usd``: $/Mtok by tp, where priced) and every rate's row."""
    from roofline.render.fit import Column, table_lines

    lines: list[str] = []
    for c in curves:
        best = c.best
        if best is None:
            lines.append(f"tp{c.tp}: no rate swept meets {slo.describe()}")
        else:
            full, load = c.kv_full_from(), best.figures.load
            arrived = f" ({load.arrived_per_s:.3g} arrived)" if load is not None else ""
            lines.append(f"tp{c.tp}: highest rate meeting {slo.describe()}: {c.best_rate:.3g} req/s offered{arrived}; "
                         f"{headline(best)}" + (f"; KV cache full from {full:.3g} req/s" if full else "")
                         + (f"; ${usd[c.tp]:.3g}/Mtok" if c.tp in usd else "") + _bounded_by(c))
        rows = [{"rate/s": f"{rate:.3g}", "tokens/s": f"{r.figures.output_tokens_per_s:,.0f}",
                 "TTFT p99": sec(r.figures.ttft.p99), "TPOT p99": sec(r.figures.tpot.p99),
                 "preempt": str(r.figures.preemptions), "SLO": point_verdict(r.figures)} for rate, r in c.points]
        lines += table_lines([Column("rate/s", keep=True), Column("tokens/s", keep=True), Column("TTFT p99", keep=True),
                              Column("TPOT p99", keep=True), Column("preempt", priority=1),
                              Column("SLO", kind="label", keep=True)], rows)
    return "\n".join(lines) + "\n"


def _bounded_by(c: RateCurve) -> str:
    """Why no higher rate met, when it is not the latency: the next rate missed by the load."""
    miss = c.next_miss()
    if miss is None:
        return ""
    rate, r = miss
    load = r.figures.load
    if load is None or point_verdict(r.figures) in ("met", "missed"):
        return ""
    return f"; at {rate:.3g} req/s: {load_words(load)}"


def _usage_svg(time_s: Sequence[float], used: Sequence[float]) -> str:
    """KV-cache use over time as an inline SVG line (share of blocks, 0..1)."""
    t, u = time_s, used
    if len(t) < 2 or t[-1] <= 0:
        return "<p>too few iterations to draw the KV-cache use</p>"
    w, h = 600, 160
    pts = " ".join(f"{x / t[-1] * w:.1f},{h - y * h:.1f}" for x, y in zip(t, u, strict=False))
    return (f'<svg width="{w}" height="{h + 20}" role="img" aria-label="KV cache use over time">'
            f'<rect width="{w}" height="{h}" fill="#f7f7f7"/><polyline fill="none" stroke="#1f4e79" '
            f'stroke-width="1.5" points="{pts}"/><text x="0" y="{h + 15}" font-size="11">0 s</text>'
            f'<text x="{w - 60}" y="{h + 15}" font-size="11">{t[-1]:.3g} s</text></svg>')


def _result_html(r: ServeResult) -> str:
    f = r.figures
    rows = "".join(f"<tr><th>{name}</th>" + "".join(f"<td>{esc(sec(getattr(getattr(f, key), p)))}</td>"
                                                   for p in ("p50", "p90", "p99", "mean")) + "</tr>"
                   for name, key in _ROWS)
    return (f"<h2>{esc(headline(r))}</h2><p>{esc(r.model)}: {esc(r.requests)}; "
            f"{esc(r.scheduler)}</p><table><tr><th></th><th>p50</th><th>p90</th><th>p99</th><th>mean"
            f"</th></tr>{rows}</table><p>{f.output_tokens_per_s:,.0f} output tokens/s, "
            f"{f.preemptions} preemption(s), {f.iterations:,} iterations</p>"
            f"<h3>KV-cache use</h3>{_usage_svg(f.kv_cache_use.time_s, f.kv_cache_use.used_share)}"
            + "".join(f"<p class=note>{esc(n)}</p>" for n in r.notes))


def serve_html(results: Sequence[ServeResult], curves: Sequence[RateCurve] | None = None) -> str:
    """A standalone HTML page of a serving run (or a rate sweep: each curve's points and best run)."""
    body = []
    for c in curves or ():
        rows = "".join(f"<tr><td>{rate:.3g}</td><td>{r.figures.output_tokens_per_s:,.0f}</td>"
                       f"<td>{esc(sec(r.figures.ttft.p99))}</td><td>{esc(sec(r.figures.tpot.p99))}</td>"
                       f"<td>{esc(point_verdict(r.figures))}</td></tr>" for rate, r in c.points)
        body.append(f"<h2>tp{c.tp}: best rate {esc(c.best_rate)} req/s</h2><table><tr><th>rate/s"
                    f"</th><th>tokens/s</th><th>TTFT p99</th><th>TPOT p99</th><th>SLO</th></tr>{rows}</table>")
    body += [_result_html(r) for r in results]
    return ("<!doctype html><html><head><meta charset=utf-8><title>roofline serve</title><style>body{font-family:"
            "sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px}"
            ".note{color:#666}</style></head><body>" + "".join(body) + "</body></html>\n")


def serve_chart_bytes(model: str, curves: Sequence[RateCurve], slo: Slo, path: str) -> bytes:
    """p99 TPOT and TTFT against output tokens/s, one curve per tp size (a rate sweep), each panel with its SLO
    limit drawn; x is the whole run's throughput, all devices together (the axis says so)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fig = Figure(figsize=(10, 4.4), dpi=110)
    axes = fig.subplots(1, 2)
    devices = sorted({r.devices for c in curves for _, r in c.points[:1]})
    for c in curves:
        x = [r.figures.output_tokens_per_s for _, r in c.points]
        for ax, key in zip(axes, ("tpot", "ttft"), strict=True):
            ax.plot(x, [getattr(r.figures, key).p99 for _, r in c.points], marker="o", label=f"tp{c.tp}")
    on = ", ".join(str(d) for d in devices) or "all"
    for ax, limit, label in zip(axes, (slo.tpot, slo.ttft), ("p99 TPOT", "p99 TTFT"), strict=True):
        if limit is not None and limit > 0:
            ax.axhline(limit, color="#a00000", ls="--", lw=1.2, label=f"SLO: {label} <= {sec(limit)}")
        ax.set_xlabel(f"output tokens/s, total over all {on} devices (not per device)", fontsize=8)
        ax.set_ylabel(label)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))  # 1-2-5 ticks: several per decade
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, pos: sec(v)))  # '10 ms', one style per axis
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.legend(fontsize=8)
    fig.suptitle(for_chart(f"{model}: latency vs throughput ({slo.describe()})"), fontsize=10)
    fig.tight_layout()
    return figure_bytes(fig, path.rsplit(".", 1)[-1].lower())
