"""Serving results drawn: the HTML report and the latency-throughput chart (read the figures' JSON document,
compute nothing)."""

from __future__ import annotations

from typing import Any

from roofline.core.text import for_chart
from roofline.render.chart import figure_bytes
from roofline.render.html_parts import esc

_ROWS = (("TTFT", "ttft"), ("TPOT", "tpot"), ("end to end", "e2e"))


def _sec(x: Any) -> str:
    if not isinstance(x, (int, float)) or x != x:
        return "n/a"
    return f"{x * 1e3:.3g} ms" if x < 1 else f"{x:.3g} s"


def _usage_svg(use: dict[str, list[float]]) -> str:
    """KV-cache use over time as an inline SVG line (share of blocks, 0..1)."""
    t, u = use.get("time_s") or [], use.get("used_share") or []
    if len(t) < 2 or t[-1] <= 0:
        return "<p>too few iterations to draw the KV-cache use</p>"
    w, h = 600, 160
    pts = " ".join(f"{x / t[-1] * w:.1f},{h - y * h:.1f}" for x, y in zip(t, u, strict=False))
    return (f'<svg width="{w}" height="{h + 20}" role="img" aria-label="KV cache use over time">'
            f'<rect width="{w}" height="{h}" fill="#f7f7f7"/><polyline fill="none" stroke="#1f4e79" '
            f'stroke-width="1.5" points="{pts}"/><text x="0" y="{h + 15}" font-size="11">0 s</text>'
            f'<text x="{w - 60}" y="{h + 15}" font-size="11">{t[-1]:.3g} s</text></svg>')


def _result_html(doc: dict[str, Any]) -> str:
    rows = "".join(f"<tr><th>{name}</th>" + "".join(f"<td>{esc(_sec(doc.get(f'{key}_{p}_s')))}</td>"
                                                   for p in ("p50", "p90", "p99", "mean")) + "</tr>"
                   for name, key in _ROWS)
    return (f"<h2>{esc(doc.get('headline', ''))}</h2><p>{esc(doc.get('model', ''))}: {esc(doc.get('requests_model', ''))}; "
            f"{esc(doc.get('scheduler', ''))}</p><table><tr><th></th><th>p50</th><th>p90</th><th>p99</th><th>mean"
            f"</th></tr>{rows}</table><p>{doc.get('output_tokens_per_s', 0):,.0f} output tokens/s, "
            f"{doc.get('preemptions', 0)} preemption(s), {doc.get('iterations', 0):,} iterations</p>"
            f"<h3>KV-cache use</h3>{_usage_svg(doc.get('kv_cache_use') or {})}"
            + "".join(f"<p class=note>{esc(n)}</p>" for n in doc.get("notes", [])))


def serve_html(doc: dict[str, Any], results: list[Any], curves: Any) -> str:
    """A standalone HTML page of a serving run (or a rate sweep: each curve's points and best run)."""
    body = []
    if "curves" in doc:
        for c in doc["curves"]:
            rows = "".join(f"<tr><td>{p['rate_per_s']:.3g}</td><td>{p['output_tokens_per_s']:,.0f}</td>"
                           f"<td>{esc(_sec(p['ttft_p99_s']))}</td><td>{esc(_sec(p['tpot_p99_s']))}</td>"
                           f"<td>{'met' if p['meets_slo'] else 'missed'}</td></tr>" for p in c["points"])
            body.append(f"<h2>tp{c['tp']}: best rate {esc(c['best_rate_per_s'])} req/s</h2><table><tr><th>rate/s"
                        f"</th><th>tokens/s</th><th>TTFT p99</th><th>TPOT p99</th><th>SLO</th></tr>{rows}</table>")
        body += [_result_html(r.to_dict()) for r in results]
    else:
        body.append(_result_html(doc))
    return ("<!doctype html><html><head><meta charset=utf-8><title>roofline serve</title><style>body{font-family:"
            "sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px}"
            ".note{color:#666}</style></head><body>" + "".join(body) + "</body></html>\n")


def serve_chart_bytes(doc: dict[str, Any], path: str) -> bytes:
    """p99 TPOT and TTFT against output tokens/s, one curve per tp size (a rate sweep's document), each panel
    with its SLO limit drawn; x is the whole run's throughput, all devices together (the axis says so)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fig = Figure(figsize=(10, 4.4), dpi=110)
    axes = fig.subplots(1, 2)
    devices = sorted({int(c.get("devices") or 0) for c in doc.get("curves", [])} - {0})
    for c in doc.get("curves", []):
        pts = c["points"]
        x = [p["output_tokens_per_s"] for p in pts]
        for ax, key in zip(axes, ("tpot_p99_s", "ttft_p99_s"), strict=True):
            ax.plot(x, [p[key] for p in pts], marker="o", label=f"tp{c['tp']}")
    limits = doc.get("slo_limits") or {}
    on = ", ".join(str(d) for d in devices) or "all"
    for ax, key, label in zip(axes, ("tpot_p99_s", "ttft_p99_s"), ("p99 TPOT", "p99 TTFT"), strict=True):
        limit = limits.get(key)
        if isinstance(limit, (int, float)) and limit > 0:
            ax.axhline(limit, color="#a00000", ls="--", lw=1.2, label=f"SLO: {label} <= {_sec(limit)}")
        ax.set_xlabel(f"output tokens/s, total over all {on} devices (not per device)", fontsize=8)
        ax.set_ylabel(label)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))  # 1-2-5 ticks: several per decade
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, pos: _sec(v)))  # '10 ms', one style per axis
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.legend(fontsize=8)
    fig.suptitle(for_chart(f"{doc.get('model', '')}: latency vs throughput ({doc.get('slo', '')})"), fontsize=10)
    fig.tight_layout()
    return figure_bytes(fig, path.rsplit(".", 1)[-1].lower())
