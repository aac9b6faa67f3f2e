"""The output paths renderers accept: known extensions, writable, or a one-line error naming the valid ones."""

from __future__ import annotations

from pathlib import Path

from roofline.core.errors import RooflineError
from roofline.core.fileio import check_writable

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
