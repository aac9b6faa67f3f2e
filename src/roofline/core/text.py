"""Text that came from a file, made safe for the medium that shows it.

Names that come from files (op names, module paths, workload titles, device
names, memory levels, model names) are data: no renderer may let them act as
markup, maths, formulas or terminal commands.  Every renderer goes through
these functions:

=================  ==============================================================
``visible(s)``     control characters (C0 but tab and newline, DEL, C1) and lone surrogates
                   shown as Python escapes: ``"\\x1b[2J"`` -> ``"\\\\x1b[2J"``
``shorten(s)``     longer than :data:`LIMIT` characters: cut, with a visible marker
                   ``...[+N chars]``; for display only (JSON keeps names whole)
``display(s)``     both: the plain-text form of a name, for any medium
``one_line(s)``    ``display`` with every run of whitespace as one space (error messages)
``shown_path(p)``  a path in a message: whole when short, else its head and tail around an ellipsis
``for_terminal``   ``display`` + rich markup escaped (``[bold]`` is shown, not applied)
``for_chart``      ``display`` + ``$`` escaped (matplotlib draws no mathtext from names)
``for_html``       ``display`` + HTML-escaped (quotes too): HTML pages and plotly text
``for_csv``        a text cell starting with ``=``, ``+``, ``-``, ``@``, tab or CR gets a
                   leading ``'`` (OWASP, CSV injection); not shortened, never for numbers
=================  ==============================================================

>>> visible("a\\x1b[2Jb")
'a\\\\x1b[2Jb'
>>> shorten("x" * 300).endswith("x...[+44 chars]")
True
>>> for_chart("$\\\\frac{1}{2}$")
'\\\\$\\\\frac{1}{2}\\\\$'
>>> for_csv("=HYPERLINK(1)")
"'=HYPERLINK(1)"
"""

from __future__ import annotations

import html
import re

#: names longer than this many characters are shortened for display (never in JSON)
LIMIT = 256
#: error messages longer than this are shortened (they quote names; one line must stay readable)
MESSAGE_LIMIT = 2000
#: Longest path shown whole in a message; longer ones keep their head and tail.
SHOWN_PATH = 120

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\ud800-\udfff]")  # + lone surrogates: not UTF-8
_CSV_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def _escape_char(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text: object) -> str:
    """``text`` with every control character but tab and newline written as a visible ``\\xNN`` escape."""
    s = str(text)
    return _CONTROL.sub(_escape_char, s) if _CONTROL.search(s) else s


def shorten(text: object, limit: int = LIMIT) -> str:
    """``text`` cut to ``limit`` characters plus a visible marker ``...[+N chars]`` when longer; prose is cut
    after a whole word (a number keeps its unit) when one ends in the last quarter of the limit.

    >>> shorten("the measured bf16 roof is 923.8 GFLOP/s here", 33)
    'the measured bf16 roof is...[+19 chars]'
    """
    s = str(text)
    if len(s) <= limit:
        return s
    head = s[:limit]
    if not s[limit].isspace() and " " in head[limit * 3 // 4:]:
        head = head[:head.rindex(" ")]
    last = head.rsplit(" ", 1)  # a number whose unit was cut goes with it
    if len(last) == 2 and len(last[0]) >= limit * 3 // 4 and last[1].replace(".", "").replace(",", "").isdigit():
        head = last[0]
    return f"{head}...[+{len(s) - len(head)} chars]"


def display(text: object, limit: int = LIMIT) -> str:
    """The plain-text form of a name from a file: shortened first (so the escape pass stays cheap), then visible."""
    return visible(shorten(text, limit))


def one_line(text: object, limit: int = MESSAGE_LIMIT) -> str:
    """One line of text (an error message): whitespace runs as one space, control characters visible, shortened."""
    s = str(text)
    if len(s) > 4 * limit:  # do not split a 10 MB message only to cut it
        s = s[: 4 * limit]
    return display(" ".join(s.split()), limit)


def shown_path(path: object) -> str:
    """``path`` for a message: whole when short, else its head and tail around an ellipsis."""
    text = str(path)
    if len(text) <= SHOWN_PATH:
        return text
    half = (SHOWN_PATH - 5) // 2
    return f"{text[:half]}...({len(text)} characters)...{text[-half:]}"


def for_terminal(text: object, limit: int = LIMIT) -> str:
    """A name inside rich markup: shown literally, never applied as a style."""
    from rich.markup import escape

    return escape(display(text, limit))


def for_chart(text: object, limit: int = LIMIT) -> str:
    """A name drawn by matplotlib: ``$`` escaped, so no mathtext is parsed from it."""
    return display(text, limit).replace("$", r"\$")


def for_html(text: object, limit: int | None = LIMIT) -> str:
    """A name in HTML or in plotly text (which plotly renders as HTML): escaped, quotes too."""
    return html.escape(display(text, limit) if limit else visible(text), quote=True)


def for_csv(value: object) -> object:
    """A CSV cell: text that a spreadsheet would run as a formula gets a leading ``'``; other values unchanged."""
    if isinstance(value, str) and value.startswith(_CSV_TRIGGERS):
        return "'" + value
    return value
