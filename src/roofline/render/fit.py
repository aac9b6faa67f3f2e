"""Output that fits the terminal: one width, tables by column priority, prose wrapped at spaces.

Every table of every command goes through :func:`table_lines`:

- each :class:`Column` has a priority; on a narrow terminal the lowest goes first, together with every
  column that ``requires`` it (a ratio without its numerator means nothing);
- a column whose meaning depends on another one names its other form (``instead``): the op table's FLOPs
  and bytes are per instance beside ``count`` and become totals when ``count`` goes;
- names are shortened in the middle with an ellipsis (``decode.layers…gate_proj``), never split across
  lines, and stay unique (a dotted name loses whole parts); other long text is cut at its end;
- numbers are never cut: a column either shows them whole or is dropped;
- every dropped column is named in a footnote under the table.

Widths are display widths (:func:`rich.cells.cell_len`: a CJK character takes two cells).  The width
comes from one place, :func:`terminal_width`.

>>> cols = [Column("name", kind="name", keep=True), Column("time", keep=True), Column("kind", kind="label", priority=1)]
>>> rows = [{"name": "decode.layers.mlp.gate_proj", "time": "1.12 ms", "kind": "matmul"}]
>>> print("\\n".join(table_lines(cols, rows, 60)))
  name                            time  kind
  decode.layers.mlp.gate_proj  1.12 ms  matmul
>>> print("\\n".join(table_lines(cols, rows, 36)))
  name                          time
  decode.layers.….gate_proj  1.12 ms
  not shown at 36 columns: kind
  … marks a name or text shortened
    to fit
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from rich.cells import cell_len, get_character_cell_size

#: the mark of a shortened name or text
ELLIPSIS = "…"
#: the narrowest terminal laid out for (below it, lines are as wide as this)
MIN_WIDTH = 40
#: the fewest cells a name column is shortened to before a column with a lower priority is kept
NAME_MIN = 24
#: the fewest cells a name is ever shortened to (the last resort at a very narrow terminal)
NAME_FLOOR = 8


def terminal_width() -> int:
    """The terminal's width: COLUMNS, else the tty's, else 120 (at least :data:`MIN_WIDTH`)."""
    return max(shutil.get_terminal_size((120, 40)).columns, MIN_WIDTH)


@dataclass(frozen=True)
class Column:
    """One column of a table.

    ``kind``: "number" (right-aligned, never cut), "label" (left-aligned, never cut), "name" (left-aligned,
    shortened in the middle, unique), "text" (left-aligned, cut at its end), "wrap" (left-aligned prose,
    wrapped by words onto continuation lines of its row, never cut).  ``priority``: lower is dropped
    first; ``keep`` never dropped.  ``requires``: keys of columns without which this one is dropped too.
    ``instead``: (key of a column, key of the cells to show when that column is dropped, header then).
    ``min_width``: the fewest cells a name or text column is shortened to (default: names
    :data:`NAME_MIN`, text its header)."""

    key: str
    header: str = ""
    kind: str = "number"
    priority: float = 0
    keep: bool = False
    requires: tuple[str, ...] = ()
    instead: tuple[str, str, str] | None = None
    min_width: int = 0

    @property
    def title(self) -> str:
        return self.header or self.key


def falling_priorities(top: float, n: int) -> list[float]:
    """``n`` priorities just under ``top`` and falling (``top``, ``top`` - 0.01, ...): columns of one kind kept
    in their order, the last dropped first."""
    return [top - k / 100 for k in range(n)]


@dataclass
class Layout:
    """What :func:`fit` decided: the columns shown (``cells``: the row key each reads), their widths, the
    columns dropped and the footnote lines."""

    columns: list[Column]
    cells: list[str]
    headers: list[str]
    widths: list[int]
    dropped: list[Column] = field(default_factory=list)
    switched: list[tuple[Column, str]] = field(default_factory=list)


def _natural(rows: Sequence[dict[str, str]], key: str, header: str) -> int:
    return max([cell_len(header), *(cell_len(r.get(key, "")) for r in rows)])


def _resolve(c: Column, dropped: set[str]) -> tuple[str, str]:
    """(the row key, the header) of ``c`` given the dropped columns."""
    if c.instead is not None and c.instead[0] in dropped:
        return c.instead[1], c.instead[2]
    return c.key, c.title


def _floor(c: Column, natural: int, header: str) -> int:
    """The fewest cells ``c`` takes before a lower-priority column is dropped."""
    if c.kind == "name":
        return min(natural, max(c.min_width or NAME_MIN, cell_len(header)))
    if c.kind in ("text", "wrap"):
        return min(natural, max(c.min_width, cell_len(header)))
    return natural


def fit(columns: Sequence[Column], rows: Sequence[dict[str, str]], width: int, *, gap: int = 2,
        indent: int = 2) -> Layout:
    """The columns of ``columns`` that fit ``width`` cells (see the module's rules) and their widths."""
    dropped: set[str] = set()
    alive = list(columns)

    def closure(key: str) -> set[str]:  # a column and every column that requires it, transitively
        out, grew = {key}, True
        while grew:
            more = {c.key for c in columns if c.key not in out and set(c.requires) & out}
            grew = bool(more)
            out |= more
        return out

    for c in columns:  # a column requiring one that is not in the table at all goes at once
        if any(r not in {x.key for x in columns} for r in c.requires):
            dropped |= closure(c.key)
    while True:
        alive = [c for c in columns if c.key not in dropped]
        resolved = [_resolve(c, dropped) for c in alive]
        natural = [_natural(rows, k, h) for k, h in resolved]
        floors = [_floor(c, n, h) for c, n, (_, h) in zip(alive, natural, resolved, strict=True)]
        need = indent + sum(floors) + gap * max(len(alive) - 1, 0)
        candidates = [c for c in alive if not c.keep]
        if need <= width or not candidates:
            break
        low = min(candidates, key=lambda c: c.priority)
        dropped |= closure(low.key)
    widths = _spread(alive, natural, floors, width - (indent + gap * max(len(alive) - 1, 0)))
    return Layout(alive, [k for k, _ in resolved], [h for _, h in resolved], widths,
                  [c for c in columns if c.key in dropped],
                  [(c, h) for c, (k, h) in zip(alive, resolved, strict=True) if k != c.key])


def _spread(cols: Sequence[Column], natural: list[int], floors: list[int], room: int) -> list[int]:
    """Widths: every column at its floor, then names and text grow towards their natural width (the columns
    kept longest first); when even the floors do not fit, names and text shrink towards :data:`NAME_FLOOR`."""
    widths = list(floors)
    spare = room - sum(widths)
    flexible = [i for i, c in enumerate(cols) if c.kind in ("name", "text", "wrap")]
    if spare < 0:  # the last resort: shorten names (then text) below their floor
        for i in sorted(flexible, key=lambda i: cols[i].kind != "name"):
            take = min(-spare, widths[i] - min(NAME_FLOOR, widths[i]))
            widths[i] -= take
            spare += take
        return widths
    ranks = sorted({(cols[i].keep, cols[i].priority) for i in flexible}, reverse=True)
    for rank in ranks:  # the columns kept longest grow first; columns of one rank grow alike
        grow = [i for i in flexible if (cols[i].keep, cols[i].priority) == rank and natural[i] > widths[i]]
        while spare > 0 and grow:
            share = max(spare // len(grow), 1)
            for i in list(grow):
                add = min(share, natural[i] - widths[i], spare)
                widths[i] += add
                spare -= add
                if widths[i] >= natural[i]:
                    grow.remove(i)
    return widths


def table_lines(columns: Sequence[Column], rows: Sequence[dict[str, str]], width: int | None = None, *,
                gap: int = 2, indent: int = 2, title: str | None = None, more: str = "",
                notes: Iterable[str] = ()) -> list[str]:
    """The table as lines no wider than ``width`` (default: the terminal's): the title, the header, one line
    per row, then the footnotes (``notes`` first, then what was dropped or changed; ``more``: where the
    dropped columns can be seen, e.g. '--csv')."""
    width = width or terminal_width()
    lay = fit(columns, rows, width, gap=gap, indent=indent)
    cells = [_column_cells(c, [r.get(k, "") for r in rows], w)
             for c, k, w in zip(lay.columns, lay.cells, lay.widths, strict=True)]
    pad = " " * indent
    sep = " " * gap

    def line(parts: list[str]) -> str:
        out = []
        for c, w, text in zip(lay.columns, lay.widths, parts, strict=True):
            room = max(w - cell_len(text), 0)
            out.append(" " * room + text if c.kind == "number" else text + " " * room)
        return (pad + sep.join(out)).rstrip()

    lines = wrap_line(title, width) if title else []
    lines.append(line([shorten_end(h, w) for h, w in zip(lay.headers, lay.widths, strict=True)]))
    wrapped = [[wrap_line(v, w, "", "") if c.kind == "wrap" else [v] for v in col]
               for c, w, col in zip(lay.columns, lay.widths, cells, strict=True)]
    for i in range(len(rows)):  # a wrapped cell's continuation lines leave the other columns blank
        for j in range(max(len(col[i]) for col in wrapped)):
            lines.append(line([col[i][j] if j < len(col[i]) else "" for col in wrapped]))
    shortened = any(a != b for c, k, col in zip(lay.columns, lay.cells, cells, strict=True) if c.kind != "wrap"
                    for a, b in zip(col, (r.get(k, "") for r in rows), strict=True))
    lines += [x for n in notes for x in wrap_line(n, width, pad, pad + "  ")]
    extra = footnotes(lay, width, more)
    if shortened:
        extra.append(f"{ELLIPSIS} marks a name or text shortened to fit" + (f" ({more})" if more and not lay.dropped else ""))
    lines += [x for n in extra for x in wrap_line(n, width, pad, pad + "  ")]
    return lines


def footnotes(lay: Layout, width: int, more: str = "") -> list[str]:
    """What the reader must know about the layout: the columns dropped, the ones shown in another form."""
    out = []
    if lay.dropped:
        gone = {c.key for c in lay.dropped}
        out.append(f"not shown at {width} columns: " + ", ".join(_resolve(c, gone)[1] for c in lay.dropped)
                   + (f" ({more})" if more else ""))
    by_cause: dict[str, list[tuple[Column, str]]] = {}
    for c, header in lay.switched:
        by_cause.setdefault(c.instead[0] if c.instead else "", []).append((c, header))
    for cause, pairs in by_cause.items():
        out.append(", ".join(h for _, h in pairs) + " in place of " + ", ".join(c.title for c, _ in pairs)
                   + f" (no {cause} column)")
    return out


def _column_cells(c: Column, values: list[str], width: int) -> list[str]:
    if c.kind == "name":
        return shorten_names(values, width)
    if c.kind == "text":
        return [shorten_end(v, width) for v in values]
    return values


def _cut(text: str, cells: int, from_end: bool = False) -> str:
    """The longest head (or tail) of ``text`` that takes at most ``cells`` cells."""
    out, used = [], 0
    for ch in reversed(text) if from_end else text:
        size = get_character_cell_size(ch)
        if used + size > cells:
            break
        out.append(ch)
        used += size
    return "".join(reversed(out) if from_end else out)


def shorten_end(text: str, width: int) -> str:
    """``text`` cut at its end to ``width`` cells, an ellipsis marking the cut: after a whole word (a number
    keeps its unit) unless the first word alone is too wide."""
    if cell_len(text) <= width:
        return text
    if width <= 0:
        return ""
    kept = ""
    for tok in _tokens(text):  # whole words (a number with its unit) when the first one fits
        joined = f"{kept} {tok}" if kept else tok
        if cell_len(joined) > width - 1:
            break
        kept = joined
    return (kept.rstrip(" ,;:(") if kept else _cut(text, width - 1)) + ELLIPSIS


def shorten_middle(text: str, width: int, head: int | None = None) -> str:
    """``text`` shortened to ``width`` cells by an ellipsis in its middle (``head``: cells kept before it).  A
    dotted name loses whole parts from its middle (:func:`shorten_dotted`) where that fits.

    >>> shorten_middle("decode.layers.mlp.gate_proj", 20)
    'decode.….gate_proj'
    """
    if cell_len(text) <= width:
        return text
    if head is None and (dotted := shorten_dotted(text, width)):
        return dotted
    room = max(width - 1, 0)
    head = (room + 1) // 2 if head is None else head
    return _cut(text, head) + ELLIPSIS + _cut(text, room - head, from_end=True)


def shorten_dotted(name: str, width: int) -> str:
    """A dotted name (a module path, no spaces, at least three parts) in ``width`` cells with whole parts left
    out of its middle: the first part, then as many last parts as fit ('decode.….mlp.gate_proj'), then more first
    parts; when the first and the last part do not fit together, the last part alone ('….kv_cache_write'): a
    name is never cut inside a word while its last part fits; '' when not even that fits (the caller cuts by
    characters then).

    >>> shorten_dotted("prefill.layers.attn.q_proj", 18), shorten_dotted("a.b", 2)
    ('prefill.….q_proj', '')
    >>> shorten_dotted("decode.layers.attn.kv_cache_write", 20)
    '….kv_cache_write'
    """
    parts = name.split(".")
    if len(parts) < 3 or " " in name or not all(parts):
        return ""
    best = ""
    for tail in range(1, len(parts) - 1):
        for head in range(1, len(parts) - tail):
            short = ".".join(parts[:head]) + f".{ELLIPSIS}." + ".".join(parts[len(parts) - tail:])
            if cell_len(short) <= width and len(short) > len(best):
                best = short
    if not best and cell_len(last := f"{ELLIPSIS}.{parts[-1]}") <= width:
        best = last
    return best


def shorten_names(names: Sequence[str], width: int) -> list[str]:
    """Every name shortened to ``width`` cells in its middle, distinct names staying distinct: a name whose
    short form another one shares tries other cut points, then keeps the part where they differ between
    two ellipses."""
    out = [shorten_middle(n, width) for n in names]
    groups: dict[str, list[int]] = {}
    for i, short in enumerate(out):
        groups.setdefault(short, []).append(i)
    taken = {short for short, members in groups.items() if len({names[i] for i in members}) < 2}
    for short, members in groups.items():
        distinct = list(dict.fromkeys(names[i] for i in members))
        if len(distinct) < 2:
            continue
        chosen = {}
        for n in distinct:
            rivals = [r for r in distinct if r != n]
            chosen[n] = next((c for c in _candidates(n, rivals, width) if c not in taken), short)
            taken.add(chosen[n])
        for i in members:
            out[i] = chosen[names[i]]
    return out


def _candidates(name: str, rivals: list[str], width: int) -> Iterable[str]:
    """Other short forms of ``name``: the head kept up to where it differs from its rivals, then cut points
    near the middle, then head…where it differs…tail, then the cut points far from the middle."""
    room = max(width - 1, 0)
    middle = (room + 1) // 2
    at = max((next((k for k, (a, b) in enumerate(zip(name, r, strict=False)) if a != b), min(len(name), len(r)))
              for r in rivals), default=0)
    heads = sorted(range(room + 1), key=lambda h: (abs(h - middle), -h))
    near, far = heads[: max(room // 2, 1)], heads[max(room // 2, 1):]
    if at + 1 <= room * 2 // 3:  # the head up to where they differ, a third of the room left for the tail
        yield _cut(name, at + 1) + ELLIPSIS + _cut(name, room - at - 1, from_end=True)
    elif width >= 7:
        yield _window(name, at, width)
    for head in near:
        yield _cut(name, head) + ELLIPSIS + _cut(name, room - head, from_end=True)
    if width >= 7:
        yield _window(name, at, width)
    for head in far:
        yield _cut(name, head) + ELLIPSIS + _cut(name, room - head, from_end=True)


def _window(name: str, at: int, width: int) -> str:
    """head…the part around position ``at``…tail, ``width`` cells in all."""
    keep = width - 2
    head = tail = max(keep // 4, 1)
    mid = keep - head - tail
    start = min(max(at - mid // 2, head), max(len(name) - tail - mid, head))
    return _cut(name, head) + ELLIPSIS + _cut(name[start:], mid) + ELLIPSIS + _cut(name, tail, from_end=True)


#: a token that ends a number ('43.9', '(16', 'x2') followed by its unit ('ms', 'GB/s,', '%')
_NUMBER_END = re.compile(r"\d[.,]?$")
_UNIT_START = re.compile(r"^[A-Za-zµ%°]")


def _tokens(text: str) -> list[str]:
    """Words of ``text``, a number and the unit after it glued into one ('43.9 ms' never splits)."""
    words = text.split(" ")
    out: list[str] = []
    for w in words:
        if out and w and _UNIT_START.match(w) and _NUMBER_END.search(out[-1]) and len(w) <= 12:
            out[-1] += " " + w
        else:
            out.append(w)
    return out


def wrap_line(text: str, width: int | None = None, indent: str = "", subsequent: str | None = None) -> list[str]:
    """One line of prose wrapped at spaces to ``width`` cells (default: the terminal's); a number keeps its
    unit on its line; a word longer than the line (a path) is cut into pieces of the line's width."""
    width = width or terminal_width()
    lead = indent if not text.startswith(indent) else ""
    first = lead + text
    if cell_len(first) <= width:
        return [first.rstrip() if first.strip() else ""]
    own = first[: len(first) - len(first.lstrip())]
    rest = subsequent if subsequent is not None else own + "  "
    lines: list[str] = []
    current = own
    for tok in _tokens(first.lstrip()):
        if not tok and not current.strip():
            continue  # runs of spaces are kept inside a line, never at the start of a continuation
        joined = f"{current} {tok}" if current.strip() else current + tok
        if cell_len(joined) <= width:
            current = joined
            continue
        if current.strip():
            lines.append(current.rstrip())
            current = rest
        while cell_len(current + tok) > width:  # a token wider than a line: cut it
            room = max(width - cell_len(current), 1)
            piece = _cut(tok, room) or tok[0]
            lines.append(current + piece)
            tok = tok[len(piece):]
            current = rest
        current += tok
    if current.strip():
        lines.append(current.rstrip())
    return lines


def warn(text: str, stream: TextIO | None = None) -> None:
    """A warning or progress note on stderr, wrapped to the terminal's width (a number keeps its unit)."""
    print(wrap(text), file=stream or sys.stderr, flush=True)


def wrap(text: str, width: int | None = None) -> str:
    """Every line of ``text`` wrapped by :func:`wrap_line`, its indentation kept (a trailing newline kept)."""
    out = [x for line in text.split("\n") for x in wrap_line(line, width)]
    if text.endswith("\n"):
        out = out[:-1] if out and out[-1] == "" else out
        return "\n".join(out) + "\n"
    return "\n".join(out)
