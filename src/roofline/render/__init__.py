"""Renderers read an :class:`~roofline.analysis.Analysis`; they never compute the model.

Picked by output-file extension:

    .png .svg .pdf   chart.py   the log-log roofline chart (matplotlib)
    .html .htm       html.py    the interactive, self-contained report (plotly)
    .json            Analysis.save (roofline.analysis/1)
    .csv             export.py  per-op results
    .txt             terminal.py  the terminal tables, as text

Plotting libraries are imported only inside the renderer that uses them.
"""

from __future__ import annotations

from pathlib import Path

from roofline.errors import RooflineError
from roofline.fileio import check_writable

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


def render_file(analysis, path: str | Path, *, title: str | None = None) -> None:  # type: ignore[no-untyped-def]
    """Write ``analysis`` to ``path`` with the renderer its extension names."""
    check_output_path(path)
    ext = Path(path).suffix.lower()
    if ext in CHART_EXTENSIONS:
        from roofline.render.chart import save_chart

        save_chart(analysis, path, title=title)
    elif ext in (".html", ".htm"):
        from roofline.render.html import save_html

        save_html(analysis, path, title=title)
    elif ext == ".json":
        analysis.save(path)
    elif ext == ".csv":
        from roofline.render.export import save_csv

        save_csv(analysis, path)
    else:
        from roofline.fileio import write_text_atomic
        from roofline.render.terminal import render

        write_text_atomic(path, render(analysis, color=False))
