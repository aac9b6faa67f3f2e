"""Renderers read an :class:`~roofline.analysis.Analysis`; they never compute the model.

Renderers are classes picked by name or by output-file extension
(:func:`renderer_for`), as pyinstrument's are:

    .png .svg .pdf   chart.py   the log-log roofline chart (matplotlib)
    .html .htm       html.py    the interactive, self-contained report (plotly)
    .json            Analysis.save (roofline.analysis/2)
    .csv             export.py  per-op results
    .txt             terminal.py  the terminal tables, as text

Plotting libraries are imported only inside the renderer that uses them.

Importing this package registers how an :class:`~roofline.analysis.Analysis` shows itself (``repr``,
``print``, Jupyter's HTML) in :data:`roofline.formatters.FORMATTERS`, as pandas attaches its formatters;
``import roofline`` imports it, and each formatter loads its renderer on first use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from roofline.formatters import FORMATTERS
from roofline.render.paths import CHART_EXTENSIONS, EXTENSIONS, check_chart_path, check_output_path

if TYPE_CHECKING:
    from roofline.analysis import Analysis
    from roofline.summary import Summary

__all__ = [
    "CHART_EXTENSIONS", "EXTENSIONS", "RENDERERS", "ChartRenderer", "CsvRenderer", "HtmlRenderer", "JsonRenderer",
    "Renderer", "TextRenderer", "check_chart_path", "check_output_path", "renderer_for",
]

class Renderer:
    """Writes an analysis in one medium; ``save`` is all-or-nothing.  Subclasses import their libraries lazily."""

    name = ""
    extensions: tuple[str, ...] = ()

    def render(self, analysis: Analysis, *, title: str | None = None, summary: Summary | None = None,
               path: str | Path = "") -> str | bytes:
        raise NotImplementedError

    def save(self, analysis: Analysis, path: str | Path, *, title: str | None = None,
             summary: Summary | None = None) -> None:
        from roofline.fileio import write_bytes_atomic, write_text_atomic

        out = self.render(analysis, title=title, summary=summary, path=path)
        if isinstance(out, bytes):
            write_bytes_atomic(path, out)
        else:
            write_text_atomic(path, out)


class ChartRenderer(Renderer):
    """The log-log roofline chart (matplotlib), PNG/SVG/PDF by extension."""

    name, extensions = "chart", CHART_EXTENSIONS

    def render(self, analysis: Analysis, *, title: str | None = None, summary: Summary | None = None,
               path: str | Path = "chart.png") -> bytes:
        from roofline.render.chart import chart_bytes

        return chart_bytes(analysis, Path(path).suffix.lower().lstrip(".") or "png", title=title, summary=summary)


class HtmlRenderer(Renderer):
    """The interactive, self-contained report (plotly)."""

    name, extensions = "html", (".html", ".htm")

    def render(self, analysis: Analysis, *, title: str | None = None, summary: Summary | None = None,
               path: str | Path = "") -> str:
        from roofline.render.html import render_html

        return render_html(analysis, title, summary=summary)


class JsonRenderer(Renderer):
    """The analysis itself (roofline.analysis/2): re-renders identically without the model."""

    name, extensions = "json", (".json",)

    def render(self, analysis: Analysis, *, title: str | None = None, summary: Summary | None = None,
               path: str | Path = "") -> str:
        return json.dumps(analysis.to_dict()) + "\n"


class CsvRenderer(Renderer):
    """Per-op results as CSV."""

    name, extensions = "csv", (".csv",)

    def render(self, analysis: Analysis, *, title: str | None = None, summary: Summary | None = None,
               path: str | Path = "") -> str:
        from roofline.render.export import to_csv

        return to_csv(analysis)


class TextRenderer(Renderer):
    """The terminal tables, as plain text."""

    name, extensions = "text", (".txt",)

    def render(self, analysis: Analysis, *, title: str | None = None, summary: Summary | None = None,
               path: str | Path = "") -> str:
        from roofline.render.terminal import render

        return render(analysis, title=title, color=False, summary=summary)


RENDERERS: tuple[Renderer, ...] = (ChartRenderer(), HtmlRenderer(), JsonRenderer(), CsvRenderer(), TextRenderer())


def renderer_for(name_or_path: str | Path) -> Renderer:
    """The renderer called ``name_or_path`` ('chart', 'html', ...) or named by its extension ('run.html')."""
    key = str(name_or_path)
    for r in RENDERERS:
        if key == r.name:
            return r
    check_output_path(name_or_path)
    ext = Path(name_or_path).suffix.lower()
    return next(r for r in RENDERERS if ext in r.extensions)


def _analysis_repr(a: Analysis) -> str:
    from roofline.render.terminal import analysis_repr

    return analysis_repr(a)


def _analysis_text(a: Analysis) -> str:
    from roofline.render.terminal import analysis_text

    return analysis_text(a)


def _analysis_html(a: Analysis) -> str:
    from roofline.render.html import notebook_html

    return notebook_html(a)


FORMATTERS.update({"repr": _analysis_repr, "str": _analysis_text, "html": _analysis_html})
