"""Renderers read an :class:`~roofline.engine.analysis.Analysis`; they never compute the model.

Renderers are classes picked by name or by output-file extension
(:func:`renderer_for`), as pyinstrument's are:

    .png .svg .pdf   chart.py   the log-log roofline chart (matplotlib)
    .html .htm       html.py    the interactive, self-contained report (plotly)
    .json            Analysis.save (roofline.analysis/2)
    .csv             export.py  per-op results
    .txt             terminal.py  the terminal tables, as text

Plotting libraries are imported only inside the renderer that uses them.

Importing this package registers how an :class:`~roofline.engine.analysis.Analysis` shows itself (``repr``,
``print``, Jupyter's HTML) in :data:`roofline.core.formatters.FORMATTERS`, as pandas attaches its formatters;
``import roofline`` imports it, and each formatter loads its renderer on first use.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.core.formatters import FORMATTERS
from roofline.render.paths import CHART_EXTENSIONS, EXTENSIONS, check_chart_path, check_output_path
from roofline.work.workload_columns import LAZY_MIN, JsonNumbers

if TYPE_CHECKING:
    from roofline.engine.analysis import Analysis
    from roofline.words.summary import Summary

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
        from roofline.core.fileio import write_bytes_atomic, write_text_atomic

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
        return dumps_bytes(analysis.to_dict(lazy=True), end=b"\n")


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
    writes ``NaN``, msgspec ``null``), big integers or anything else stay with json.  A long list of strings
    that are all printable ASCII is msgspec's too (compact; json and msgspec escape such text alike, only ``"``
    and ``\\``); any other string stays with json (its ``\\uXXXX`` escapes).  A
    :class:`~roofline.work.workload_columns.JsonNumbers` (``to_dict(lazy=True)``) is its list, written by msgspec a
    slice of :data:`SLICE` values at a time (NaN and infinity as null, as the list has them), so no Python float
    per value is made.  Each list is swapped for a placeholder string carrying a random nonce, so no string from
    a file can match one, and json's text is cut at the placeholders (no pattern scan over the whole text, no
    copy of its pieces).  ``end`` is written after the value (a file's last newline)."""
    try:
        import msgspec
    except ImportError:
        return json.dumps(_listed(value)).encode("ascii") + end
    import secrets

    nonce, raw = secrets.token_hex(8), []  # raw[k]: the pieces of list k
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

    def placeholder(*got: Any) -> str:
        raw.append(got)
        return f"\0{nonce}:{len(raw) - 1}\0"

    def swap(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, JsonNumbers):
            return placeholder(*_numbers(v.values, msgspec.json.encode))
        if isinstance(v, (list, tuple)):
            if len(v) < LAZY_MIN or not isinstance(v, list):
                return v if all(type(x) in scalars for x in v) else [swap(x) for x in v]
            types = set(map(type, v))
            if types == {str}:  # printable ASCII only: both escape it alike (just " and \\)
                joined = "".join(v)
                return placeholder(msgspec.json.encode(v)) if joined.isascii() and joined.isprintable() else v
            if types <= scalars:
                got = plain(v, types) if types <= numbers else None
                return v if got is None else placeholder(got)
            return [swap(x) for x in v]
        return v

    return _splice(json.dumps(swap(value)).encode("ascii"), nonce, raw, end)


def _splice(text: bytes, nonce: str, raw: list[tuple[Any, ...]], end: bytes) -> bytes:
    """``text`` with placeholder ``k`` (json writes each as ``"\\u0000<nonce>:<k>\\u0000"``, quotes included)
    replaced by the pieces ``raw[k]``, then ``end``: cut at each placeholder (memoryviews, no copies), one join."""
    if not raw:
        return text + end
    mark, close = b'"\\u0000' + nonce.encode("ascii") + b":", b'\\u0000"'
    view, at = memoryview(text), 0
    out: list[Any] = []
    while (i := text.find(mark, at)) >= 0:
        j = text.index(close, i + len(mark))
        out += (view[at:i], *raw[int(text[i + len(mark):j])])
        at = j + len(close)
    out += (view[at:], end)
    return b"".join(out)


#: values per slice a :class:`~roofline.work.workload_columns.JsonNumbers` is written in (a slice's floats are made,
#: encoded and freed before the next: about 0.5 MB of them at a time)
SLICE = 1 << 14


def _numbers(values: Any, encode: Any) -> list[Any]:
    """The pieces of ``encode(finite_or_null(values))`` for msgspec's ``encode``, a slice at a time: msgspec
    writes NaN and infinity as null, so each slice's ``tolist()`` is encoded as it is, its brackets cut off, and
    the slices are set between one pair of brackets, commas between."""
    out: list[Any] = [b"["]
    for i in range(0, len(values), SLICE):
        out += (b",",) * (i > 0) + (memoryview(encode(values[i:i + SLICE].tolist()))[1:-1],)
    out.append(b"]")
    return out


def _listed(value: Any) -> Any:
    """``value`` with each :class:`~roofline.work.workload_columns.JsonNumbers` as its list (json's route)."""
    if isinstance(value, dict):
        return {k: _listed(x) for k, x in value.items()}
    if isinstance(value, JsonNumbers):
        return value.tolist()
    if isinstance(value, list):
        return [_listed(x) for x in value]
    return value


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
