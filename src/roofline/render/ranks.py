"""Renderers of the cross-rank view (:class:`roofline.frontends.trace.crossrank.MultiRankTrace`): text, JSON,
CSV, HTML (and images: :mod:`roofline.render.ranks_chart`).

They only read the view: every figure (totals, the heat map's step times, the longest waits, the chart's
points) is computed in :mod:`roofline.frontends.trace.crossrank`.  Names from the traces (files, ops,
collectives) are escaped for each medium (:mod:`roofline.core.text`).
"""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING, Any

from roofline.core.errors import RooflineError, require
from roofline.core.text import for_csv, for_html, visible

if TYPE_CHECKING:
    from roofline.frontends.trace.crossrank import MultiRankTrace

MS = 1e3  # seconds -> milliseconds, for display


def view_lines(view: MultiRankTrace, top: int = 5, width: int | None = None) -> list[str]:
    """The cross-rank view as plain text, as wide as the terminal (:mod:`roofline.render.fit`): headline,
    per rank, the ``top`` longest waits, the stragglers."""
    from roofline.render.fit import Column, table_lines, terminal_width, wrap_line

    width = width or terminal_width()
    prose = [view.headline(), *(f"  skipped: {s}" for s in view.skipped)]
    rows = [{"rank": str(t.key), "step ms": f"{t.seconds * MS:.3f}", "compute": f"{t.compute * MS:.3f}",
             "exposed comm": f"{t.comm_exposed * MS:.3f}", "overlapped": f"{t.comm_overlapped * MS:.3f}",
             "memcpy": f"{t.memcpy * MS:.3f}", "idle": f"{t.idle * MS:.3f}", "waited": f"{d.waited * MS:.3f}",
             "caused": f"{d.caused * MS:.3f}",
             "": "slowest" if t.key == view.slowest_rank else "straggler" if t.key in stragglers else ""}
            for t, d in zip(view.totals, view.delays, strict=True)
            for stragglers in ({s.rank for s in view.stragglers},)]
    columns = [Column("rank", keep=True), Column("step ms", keep=True), Column("compute", priority=4),
               Column("exposed comm", priority=5), Column("overlapped", priority=2), Column("memcpy", priority=1),
               Column("idle", priority=3), Column("waited", priority=6), Column("caused", priority=7),
               Column("", priority=8)]
    table = table_lines(columns, rows, width, title="  per rank, ms (sums over the common steps; waited: for "
                        "others, in collectives; caused: the delay the others waited for it)",
                        more="--ranks FILE.csv has every figure")
    after = [f"  collective #{c.index} {c.name} (step {c.step}): longest wait {c.longest_wait * MS:.3f} ms; "
             f"rank {c.last_rank} arrived last, {c.caused * MS:.3f} ms after the one before it"
             for c in (view.collectives[k] for k in view.longest_waits[:top])]
    after += [f"  {s.line()}" for s in view.stragglers] or ["  no straggler (no rank delayed the others by more "
                                                            f"than {view.straggler_share:.0%} of the median rank's "
                                                            "work)"]
    lines = ([x for p in prose for x in wrap_line(visible(p), width)] + table
             + [x for p in after for x in wrap_line(visible(p), width)])
    return [visible(line) for line in lines]  # names from the traces: control characters shown, never applied


def render_json(view: MultiRankTrace) -> str:
    return json.dumps(view.to_dict(), indent=1, default=float) + "\n"


def render_csv(view: MultiRankTrace) -> str:
    """One row per rank and step."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["rank", "file", "step", "seconds", "compute_s", "comm_exposed_s", "comm_overlapped_s", "memcpy_s",
                "idle_s"])
    for r in view.ranks:
        for s in r.steps:
            w.writerow([r.rank, for_csv(r.file), s.key, s.seconds, s.compute, s.comm_exposed, s.comm_overlapped,
                        s.memcpy, s.idle])
    return out.getvalue()


def _figures(view: MultiRankTrace) -> list[Any]:
    go = require("plotly.graph_objects", "html")
    ranks = [f"rank {t.key}" for t in view.totals]
    heat = go.Figure(go.Heatmap(z=[[v * MS for v in row] for row in view.step_seconds],
                                x=[f"step {n}" for n in view.steps], y=ranks, colorbar={"title": "ms"},
                                texttemplate="%{z:.4g}" if len(ranks) * len(view.steps) <= 160 else None))
    heat.update_layout(title="step time per rank and iteration [ms]", yaxis={"autorange": "reversed"})
    bar = go.Figure([go.Bar(name=label, x=ranks, y=[getattr(t, field) * MS for t in view.totals])
                     for label, field in (("compute", "compute"), ("exposed comm", "comm_exposed"),
                                          ("memcpy", "memcpy"), ("idle", "idle"))])
    bar.update_layout(barmode="stack", title="per rank over the common steps [ms]", yaxis={"title": "ms"})
    figs = [heat, bar]
    if view.stragglers:
        s = view.stragglers[0]
        chart = go.Figure()
        for pts, label in ((s.points, f"rank {s.rank} (straggler)"), (s.median_points, f"rank {s.median_rank} "
                                                                                        "(median)")):
            chart.add_trace(go.Scatter(x=[p.intensity for p in pts], y=[p.achieved_flops for p in pts],
                                       mode="markers", name=label, text=[for_html(p.name) for p in pts]))
        chart.update_layout(title="ops of the straggler against the median rank (achieved FLOP/s)",
                            xaxis={"type": "log", "title": "FLOP/byte"}, yaxis={"type": "log", "title": "FLOP/s"})
        figs.append(chart)
    return figs


def render_html(view: MultiRankTrace) -> str:
    """One self-contained page (plotly.js inline, as the analysis report): the text view, then the figures."""
    body = "".join(f.to_html(full_html=False, include_plotlyjs=i == 0) for i, f in enumerate(_figures(view)))
    text = "<br>".join(for_html(line, None) for line in view_lines(view, width=160))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>roofline: ranks</title></head><body>"
            f"<pre>{text}</pre>{body}</body></html>\n")


#: --ranks file extensions: text ones, and images (matplotlib: :mod:`roofline.render.ranks_chart`)
TEXT_EXTENSIONS, IMAGE_EXTENSIONS = (".json", ".csv", ".html"), (".png", ".svg", ".pdf")


def render(view: MultiRankTrace, path: str) -> bytes:
    """By the file's extension: .json, .csv, .html, or an image (.png, .svg, .pdf)."""
    for ext, fn in zip(TEXT_EXTENSIONS, (render_json, render_csv, render_html), strict=True):
        if str(path).lower().endswith(ext):
            return fn(view).encode()
    for ext in IMAGE_EXTENSIONS:
        if str(path).lower().endswith(ext):
            from roofline.render.ranks_chart import render_image

            return render_image(view, ext[1:])
    raise RooflineError(f"--ranks {path}: give a .json, .csv, .html, .png, .svg or .pdf file")
