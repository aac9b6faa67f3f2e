"""Renderers of the cross-rank view (:class:`roofline.frontends.trace.crossrank.MultiRankTrace`): JSON, CSV, HTML.

They only read the view; every figure is computed in :mod:`roofline.frontends.trace.crossrank`.
"""

from __future__ import annotations

import csv
import html
import io
import json
from typing import Any

from roofline.frontends.trace.crossrank import MultiRankTrace, rank_totals, roofline_points, view_lines


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
            w.writerow([r.rank, r.file, s.step, s.seconds, s.compute, s.comm_exposed, s.comm_overlapped, s.memcpy,
                        s.idle])
    return out.getvalue()


def _figures(view: MultiRankTrace) -> list[Any]:
    from roofline.errors import require

    go = require("plotly.graph_objects", "html")
    ranks = [f"rank {r.rank}" for r in view.ranks]
    heat = go.Figure(go.Heatmap(z=[[v * 1e3 for v in row] for row in view.step_matrix()],
                                x=[f"step {n}" for n in view.steps], y=ranks, colorbar={"title": "ms"}))
    heat.update_layout(title="step time per rank and iteration [ms]")
    totals = rank_totals(view)
    bar = go.Figure([go.Bar(name=label, x=ranks, y=[t[k] * 1e3 for t in totals])
                     for label, k in (("compute", 2), ("exposed comm", 3), ("memcpy", 5), ("idle", 6))])
    bar.update_layout(barmode="stack", title="per rank over the common steps [ms]")
    figs = [heat, bar]
    if view.stragglers:
        s = view.stragglers[0]
        chart = go.Figure()
        for number, label in ((s.rank, f"rank {s.rank} (straggler)"), (s.median_rank, f"rank {s.median_rank} "
                                                                                       "(median)")):
            pts = roofline_points(view.rank(number))
            chart.add_trace(go.Scatter(x=[p[1] for p in pts], y=[p[2] for p in pts], mode="markers", name=label,
                                       text=[p[0] for p in pts]))
        chart.update_layout(title="ops of the straggler against the median rank (achieved FLOP/s)",
                            xaxis={"type": "log", "title": "FLOP/byte"}, yaxis={"type": "log", "title": "FLOP/s"})
        figs.append(chart)
    return figs


def render_html(view: MultiRankTrace) -> str:
    body = "".join(f.to_html(full_html=False, include_plotlyjs="cdn" if i == 0 else False)
                   for i, f in enumerate(_figures(view)))
    text = "<br>".join(html.escape(line) for line in view_lines(view))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>roofline: ranks</title></head><body>"
            f"<pre>{text}</pre>{body}</body></html>\n")


def render(view: MultiRankTrace, path: str) -> str:
    """By the file's extension: .json, .csv or .html."""
    from roofline.errors import RooflineError

    for ext, fn in ((".json", render_json), (".csv", render_csv), (".html", render_html)):
        if str(path).lower().endswith(ext):
            return fn(view)
    raise RooflineError(f"--ranks {path}: give a .json, .csv or .html file")
