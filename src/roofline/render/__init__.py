"""Renderers read an :class:`~roofline.analysis.Analysis`; they never compute the model.

Renderers are classes picked by name or by output-file extension
(:func:`renderer_for`), as pyinstrument's are:

    .png .svg .pdf   chart.py   the log-log roofline chart (matplotlib)
    .html .htm       html.py    the interactive, self-contained report (plotly)
    .json            Analysis.save (roofline.analysis/2)
    .csv             export.py  per-op results
    .txt             terminal.py  the terminal tables, as text

Plotting libraries are imported only inside the renderer that uses them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from roofline.errors import RooflineError
from roofline.fileio import check_writable

if TYPE_CHECKING:
    from roofline.analysis import Analysis
    from roofline.summary import Summary

CHART_EXTENSIONS = (".png", ".svg", ".pdf")
EXTENSIONS = (*CHART_EXTENSIONS, ".html", ".htm", ".json", ".csv", ".txt")


def check_chart_path(path: str | Path) -> Path:
    """A writable chart path with a known image extension, or a one-line error."""
    ext = Path(path).suffix.lower()
    if ext not in CHART_EXTENSIONS:
        raise RooflineError(f"unknown chart format {ext or '(no extension)'!r}; "
                            f"valid: {', '.join(CHART_EXTENSIONS)}", where=str(path))
    return check_writable(path)


def check_output_path(path: str | Path) -> Path:
    """A writable output path with any known renderer's extension."""
    ext = Path(path).suffix.lower()
    if ext not in EXTENSIONS:
        raise RooflineError(f"unknown output format {ext or '(no extension)'!r}; valid: {', '.join(EXTENSIONS)}",
                            where=str(path))
    return check_writable(path)


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
