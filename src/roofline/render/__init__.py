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
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
               path: str | Path = "") -> bytes:
        return dumps_bytes(analysis.to_dict(), end=b"\n")


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


def dumps(value: Any) -> str:
    """``json.dumps(value)``, the same JSON values, with each long list of plain numbers (a per-op column) encoded
    by msgspec when it is installed (about 8x faster: a 250k-op analysis is ~5M numbers): :func:`dumps_bytes`
    as text (it is ASCII: json escapes every other character)."""
    return dumps_bytes(value).decode("ascii")


def dumps_bytes(value: Any, end: bytes = b"") -> bytes:
    """``json.dumps(value)`` as ASCII bytes, the same JSON values, with each long list of plain numbers encoded by
    msgspec when it is installed.  A spliced list is written compactly and its floats in msgspec's shortest
    round-trip form (``0.00001`` for ``1e-05``): the same numbers when read.  Lists with NaN or infinity (json
    writes ``NaN``, msgspec ``null``), big integers or anything else stay with json.  Each list is swapped for a
    placeholder string carrying a random nonce, so no string from a file can match one, and the placeholders
    are cut out of json's text by one split (no pattern scan over the whole text; no text copy of the lists).
    ``end`` is written after the value (a file's last newline, without another copy of the whole text)."""
    try:
        import msgspec
    except ImportError:
        return json.dumps(value).encode("ascii") + end
    import secrets

    nonce, raw = secrets.token_hex(8), []
    numbers, scalars = {float, int, bool, type(None)}, {str, float, int, bool, type(None)}

    def plain(v: list[Any], types: set[type]) -> bytes | None:
        floats = v if types == {float} else [x for x in v if type(x) is float]
        # a finite sum has no NaN or infinity in it (they carry through a sum); else each is looked at
        if not math.isfinite(sum(floats)) and not all(map(math.isfinite, floats)):
            return None
        try:
            return msgspec.json.encode(v)
        except (OverflowError, TypeError, ValueError):  # an int past 64 bits
            return None

    def swap(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            if len(v) < 256 or not isinstance(v, list):
                return v if all(type(x) in scalars for x in v) else [swap(x) for x in v]
            types = set(map(type, v))
            if types <= scalars:
                got = plain(v, types) if types <= numbers else None
                if got is None:
                    return v
                raw.append(got)
                return f"\0{nonce}:{len(raw) - 1}\0"
            return [swap(x) for x in v]
        return v

    text = json.dumps(swap(value)).encode("ascii")
    if not raw:
        return text + end
    # json writes each placeholder as "\u0000<nonce>:<k>\u0000" (quotes included): split there, splice list k in
    head, *pieces = text.split(b'"\\u0000' + nonce.encode("ascii") + b":")
    out = [head]
    for piece in pieces:
        k, _, rest = piece.partition(b'\\u0000"')
        out += (raw[int(k)], rest)
    out.append(end)
    return b"".join(out)


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
