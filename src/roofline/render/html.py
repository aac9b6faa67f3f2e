"""The interactive, self-contained HTML report (plotly, embedded inline: opens offline).

One file holds plotly.js, the roofline chart(s) and every table.  Chart: one
trace per compute ceiling and per memory level (click the legend, or use the
buttons, to toggle them), the device's achievable (sustained) figures for them
dashed and labelled "achievable", the op points by kind (hover: name, module,
kind, FLOPs, bytes, intensity, bound, time, efficiency, and the forecast when
there is one), measured points joined to their prediction by a line.  Tables:
per op (with the forecast's columns when there is one) and per group, sortable
by a click on a header.  Then the summary, the advice, the device's provenance, the
workload's assumptions, warnings and unsupported ops.

Every string that came from a model or a file is escaped: in HTML with
:func:`html.escape`, and in the chart's JSON with ``<``/``>``/``&`` written as
``\\u003c``/``\\u003e``/``\\u0026`` (so nothing can close the ``<script>``) and
HTML-escaped again because plotly renders hover text as HTML.

>>> from roofline import Device, Op, Workload, analyze
>>> from roofline.render.html import render_html
>>> a = analyze(Workload.from_ops([Op("<b>app</b>", flops=8e8, bytes_read=4e9)]),
...             Device.simple("seed", "100 GFLOP/s", "10 GB/s"))
>>> page = render_html(a)
>>> "&lt;b&gt;app&lt;/b&gt;" in page and "<b>app</b>" not in page
True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.core.text import display
from roofline.core.units import format_bandwidth, format_bytes, format_flops
from roofline.render.html_chart import compare_figure, figure, script_json
from roofline.render.html_parts import (
    advice_html,
    bullets,
    details,
    esc,
    groups_table,
    llm_html,
    ops_table,
    provenance_html,
    summary_items,
)
from roofline.words.summary import Summary, headline, measurement_warning, summarize, table_glossary

if TYPE_CHECKING:
    from roofline.engine.analysis import Analysis
    from roofline.hardware.device import Device
    from roofline.words.levers import Advice

#: The page's public face; the charts are built in :mod:`roofline.render.html_chart`, the pieces in
#: :mod:`roofline.render.html_parts`.
__all__ = ["COMPARE_CAPTION", "NOTEBOOK_SVG_OPS", "Section", "caption", "compare_figure", "figure", "notebook_html",
           "render_html", "render_report", "save_html", "save_report"]


@dataclass
class Section:
    """One analysis in a report: its heading, the analysis, optional advice, optional extra chart."""

    title: str
    analysis: Analysis
    advice: Advice | None = None
    note: str = ""
    summary: Summary | None = None  # the facts, when the caller has them (else summarised from analysis, advice)


def caption(s: Summary) -> str:
    """What to look at in the chart of ``s`` (plain text), after the measurement's warning when it has one."""
    a = s.analysis
    main = a.device.main_memory
    lead = measurement_warning(s)
    return (f"{lead}. " if lead else "") + (
            f"Each point is an op: across, its arithmetic intensity (FLOP per byte moved); up, the FLOP/s its roofs "
            f"allow (bigger points take more of the time). Left of the ridge ({s.ridge:.3g} "
            f"FLOP/B for {s.dominant.label} over {main.level}) an op is memory-bound, right of it compute-bound. "
            f"Here the binding roof is {s.binding.label}."
            + (f" Ops asking for a roof this device lacks run on the next one: {s.describe_fallbacks()}."
               if s.fallbacks else "")
            + _achievable_caption(a.device))


def _achievable_caption(d: Device) -> str:
    """' Dashed lines labelled "achievable": ...' when the device has sustained figures ('' otherwise)."""
    figures = [f"{c.label} {format_flops(c.flops)}" for c in d.achievable_compute]
    figures += [f"{m.level} {format_bandwidth(m.bandwidth)}" for m in d.achievable_memory]
    if not figures:
        return ""
    return (f" Dashed lines labelled \"achievable\" are the device's sustained figures ({', '.join(figures)}): "
            "the roofs the forecast runs on, shown beside the peak roofs, which the roofline bound keeps.")


COMPARE_CAPTION = ("One colour per device: the roofs its ops are bounded or judged by (solid: the ceiling carrying "
                   "the most time; dashed: other ceilings; dotted: cache levels) and its ops. An op sits at the same "
                   "intensity on every device; the vertical gap between two devices' points is the speed-up their "
                   "roofs allow.")


def _section_html(s: Section, facts: Summary, k: int, charts: list[tuple[str, dict[str, Any]]], *,
                  open_summary: bool = True) -> str:
    a = s.analysis
    w = a.workload
    div = f"chart{k}"
    charts.append((div, figure(a, facts)))
    from roofline.render.terminal import lead_lines

    lead = lead_lines(facts)  # a trace's far-off note, then the headline (a trace's: per profiler step)
    summary = "".join(f"<li>{esc(x)}</li>" for x in summary_items(facts)[len(lead):])
    if w.source:
        summary += f"<li>source: {esc(w.source)}</li>"
    unsupported = [f"{u.name} x{u.count} ({format_bytes(u.bytes)} counted, 0 FLOPs)" for u in w.unsupported]
    parts = [f'<section id="s{k}"><h2>{esc(s.title)}</h2>', *(f'<p class="warn">{esc(x)}</p>' for x in lead[:-1]),
             f'<p class="headline">{esc(lead[-1])}</p>']
    if s.note:
        parts.append(f'<p class="note">{esc(s.note)}</p>')
    parts += [f'<figure><div id="{div}" class="chart"></div><figcaption>{esc(caption(facts))} Hover a point for its '
              'figures; click a legend entry to hide or show it; the buttons switch between the roofs the ops use, '
              'every precision ceiling and memory level, and main memory only. Hollow diamonds are measured; a '
              'dotted line joins each to its prediction.</figcaption></figure>',
              details("Summary", f"<ul>{summary}</ul>" + llm_html(facts.llm), open_=open_summary)]
    if facts.advice is not None:
        parts.append(details("Advice (levers with their computed effect)", advice_html(facts.advice)))
    ops_glossary = f'<p class="note">{esc(table_glossary(facts))}</p>'
    groups_glossary = f'<p class="note">{esc(table_glossary(facts, grouped=True))}</p>'
    parts += [details(f"Ops by roofline time ({len(w)})", ops_table(a) + ops_glossary),
              details("By module", groups_table(a, "group", "module") + groups_glossary),
              details("By kind", groups_table(a, "kind", "kind") + groups_glossary),
              details("Device and provenance", provenance_html(a)),
              details("Workload: bytes model, assumptions, warnings",
                       f"<p>bytes model: {esc(w.bytes_model)}</p>" + bullets("Assumptions", a.assumptions)
                       + bullets("Warnings", [*w.warnings, *a.warnings])
                       + (bullets("Unsupported ops (no FLOP formula)", unsupported) or "<p>unsupported ops: none</p>")),
              "</section>"]
    return "".join(parts)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1300px;padding:1em 2em;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #ccc;padding-top:.6em}h3{margin-top:1.4em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0;max-width:100%}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f2f2f2;cursor:pointer;user-select:none;position:sticky;top:0}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.above td{background:#ffe0e0}
.note{color:#555;font-size:.85em}.warn{background:#fff4e0;border-left:4px solid #c77700;padding:.4em .8em}.chart{min-height:620px}
.headline{font-size:1.15em;font-weight:600;background:#f4f8fc;border-left:4px solid #1f4e79;padding:.5em .8em}
figure{margin:0}figcaption{color:#555;font-size:.85em;margin:.3em 0 .8em}
details{margin:.4em 0}details>summary{cursor:pointer;font-weight:600;font-size:1.05em;padding:.2em 0}
ul.answers li{margin:.3em 0;font-weight:600}ul.answers a{color:#1f4e79;text-decoration:none}
"""

_SORT_JS = """
(function(){
  function key(td){var v=td.getAttribute('data-v');if(v===null)return td.textContent.toLowerCase();
    return v===''?-Infinity:parseFloat(v);}
  document.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('th').forEach(function(th){
      th.addEventListener('click',function(){
        var i=th.cellIndex,asc=!th.classList.contains('asc'),b=t.tBodies[0];
        t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc');});
        th.classList.add(asc?'asc':'desc');
        var rows=Array.prototype.slice.call(b.rows);
        rows.sort(function(r,s){var x=key(r.cells[i]),y=key(s.cells[i]);
          if(x<y)return asc?-1:1;if(x>y)return asc?1:-1;return 0;});
        rows.forEach(function(r){b.appendChild(r);});
      });
    });
  });
})();
"""


def render_report(sections: Sequence[Section], title: str = "roofline report", *,
                  extra_charts: Sequence[tuple[str, dict[str, Any]]] = (), intro: Sequence[str] = (),
                  extra_headlines: Sequence[str] = (), after: Sequence[str] = ()) -> str:
    """A whole self-contained page: one section per analysis, plotly.js inline (no network needed).

    ``after``: more sections, rendered HTML from a renderer that escaped what it took from files (the trace
    analyses: :mod:`roofline.render.trace_analyses_html`), placed after the analyses' sections.
    ``extra_charts``: (heading, plotly figure dict) pairs drawn before the sections (e.g. a device comparison);
    ``extra_headlines``: the answer sentence each of them starts with, as every section does (one per chart).
    ``intro``: plain-text paragraphs under the title.
    """
    from roofline.core.errors import require

    offline = require("plotly.offline", "html")
    charts: list[tuple[str, dict[str, Any]]] = []
    facts = [s.summary or summarize(s.analysis, advice=s.advice) for s in sections]
    body: list[str] = [f"<h1>{esc(title)}</h1>"]
    # the answer first: one sentence per section, each linking to its section
    if len(sections) > 1:  # (one section leads with its own headline right below)
        body.append('<ul class="answers">' + "".join(f'<li><a href="#s{k}">{esc(headline(f))}</a></li>'
                                                    for k, f in enumerate(facts)) + "</ul>")
    body += [f"<p>{esc(p)}</p>" for p in intro]
    for j, (heading, fig) in enumerate(extra_charts):
        div = f"extra{j}"
        charts.append((div, fig))
        lead = f'<p class="headline">{esc(extra_headlines[j])}</p>' if j < len(extra_headlines) else ""
        body.append(f'<h2>{esc(heading)}</h2>{lead}<figure><div id="{div}" class="chart"></div>'
                    f"<figcaption>{esc(COMPARE_CAPTION)}</figcaption></figure>")
    for k, (s, f) in enumerate(zip(sections, facts, strict=True)):
        body.append(_section_html(s, f, k, charts, open_summary=len(sections) == 1))
    body += list(after)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    from roofline.core.version import __version__

    body.append(f'<p class="note">generated by roofline {esc(__version__)} on {stamp}; '
                "the roofline time is a lower bound under the bytes model stated above.</p>")
    plots = "".join(
        f"Plotly.newPlot({json.dumps(div)}, FIG[{j}].data, FIG[{j}].layout, "
        '{"responsive": true, "displaylogo": false});'
        for j, (div, _) in enumerate(charts))
    figs = "[" + ",".join(script_json(fig) for _, fig in charts) + "]"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{_CSS}</style>"
            f"<script>{offline.get_plotlyjs()}</script></head><body>"
            + "".join(body)
            + f"<script>var FIG={figs};{plots}</script><script>{_SORT_JS}</script></body></html>\n")


def render_html(analysis: Analysis, title: str | None = None, *, summary: Summary | None = None,
                after: Sequence[str] = ()) -> str:
    """The report of one analysis as a string.  Advice appears when ``summary`` carries it
    (:func:`roofline.words.summary.summarize` with ``advice=``): the renderer computes none.  ``after``: more
    sections, rendered (:func:`render_report`)."""
    title = title or f"{display(analysis.workload.title)} on {display(analysis.device.name)}"
    return render_report([Section(title, analysis, summary=summary)], f"roofline report: {title}", after=after)


def save_html(analysis: Analysis, path: str | Path, title: str | None = None, *,
              summary: Summary | None = None) -> None:
    """Write the report, all-or-nothing (see :func:`render_html`)."""
    from roofline.core.fileio import write_text_atomic

    write_text_atomic(path, render_html(analysis, title, summary=summary))


def save_report(sections: Sequence[Section], path: str | Path, title: str = "roofline report", **kw: Any) -> None:
    from roofline.core.fileio import write_text_atomic

    write_text_atomic(path, render_report(sections, title, **kw))


#: The notebook table's sorter: self-contained (no network, no library), bound to the tables of its own
#: output only (``__ROOT__`` is replaced by the output's id), once per table however often it runs.  The
#: "click to sort" hint is set by the script, so a viewer that strips scripts makes no such claim.
_NOTEBOOK_SORT_JS = """
(function(){
  var root=document.getElementById('__ROOT__');if(!root)return;
  function key(td){var v=td.getAttribute('data-v');if(v===null)return td.textContent.toLowerCase();
    return v===''?-Infinity:parseFloat(v);}
  root.querySelectorAll('table.sortable').forEach(function(t){
    if(t.getAttribute('data-sorter'))return;t.setAttribute('data-sorter','1');
    var heads=t.querySelectorAll('th');
    heads.forEach(function(th){
      th.setAttribute('data-label',th.textContent);th.title='click to sort';th.style.cursor='pointer';
      th.addEventListener('click',function(){
        var i=th.cellIndex,asc=th.getAttribute('data-dir')!=='asc',b=t.tBodies[0];
        heads.forEach(function(h){h.removeAttribute('data-dir');h.textContent=h.getAttribute('data-label');});
        th.setAttribute('data-dir',asc?'asc':'desc');th.textContent+=asc?' \u25B2':' \u25BC';
        var rows=Array.prototype.slice.call(b.rows);
        rows.sort(function(r,s){var x=key(r.cells[i]),y=key(s.cells[i]);
          if(x<y)return asc?-1:1;if(x>y)return asc?1:-1;return 0;});
        rows.forEach(function(r){b.appendChild(r);});
      });
    });
  });
})();
"""


#: Up to this many ops the notebook chart is inline SVG; beyond, a PNG (an SVG grows by ~270 bytes a point).
NOTEBOOK_SVG_OPS = 500


def _notebook_chart(a: Analysis, summary: Summary) -> str:
    """The chart as inline SVG (matplotlib escapes its text; a PNG past :data:`NOTEBOOK_SVG_OPS` ops),
    or one line saying why there is none."""
    import base64
    import io

    try:
        from roofline.render.chart import plot

        fig = plot(a, max_labels=10, figsize=(8, 5.2), summary=summary)  # labels are placed for this size
        if len(a.workload) > NOTEBOOK_SVG_OPS:
            png = io.BytesIO()
            fig.savefig(png, format="png", bbox_inches="tight", dpi=100)
            out = f'<img alt="roofline chart" src="data:image/png;base64,{base64.b64encode(png.getvalue()).decode()}">'
        else:
            buf = io.StringIO()
            fig.savefig(buf, format="svg", bbox_inches="tight")
            svg = buf.getvalue()
            out = svg[svg.find("<svg"):]  # drop the XML prolog
        return out  # the figure is no pyplot figure (render.chart builds it alone): nothing to close
    except Exception as exc:  # a notebook repr must never raise
        return f"<p>(chart unavailable: {esc(exc)})</p>"


def notebook_html(a: Analysis, top: int = 10) -> str:
    """Jupyter ``_repr_html_``: summary, the chart as an inline SVG (no plotly needed; a PNG for a large
    workload) and the top ops.

    The ops table sorts on a click on its header: a small inline script (:data:`_NOTEBOOK_SORT_JS`, no
    network) bound to this output's own tables by a unique id.
    """
    import uuid

    root = f"roofline-{uuid.uuid4().hex}"
    facts = summarize(a)  # once: the summary list and the chart both read it
    table = ops_table(a, limit=top).replace(' title="click to sort"', "")  # the script adds the hint
    items = summary_items(facts)  # [0] is the headline: the answer first, as in every report
    return "".join([f'<div id="{root}">', f'<p class="headline"><b>{esc(items[0])}</b></p>',
                    "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in items[1:]) + "</ul>",
                    _notebook_chart(a, facts), table, f"<p>{esc(table_glossary(facts))}</p>", "</div>",
                    f"<script>{_NOTEBOOK_SORT_JS.replace('__ROOT__', root)}</script>"])
