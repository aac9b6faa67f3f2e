"""The sanitiser for names from files (roofline.core.text), rule by rule, expectations written by hand."""

from __future__ import annotations

from roofline.core.errors import RooflineError
from roofline.core.text import LIMIT, display, for_chart, for_csv, for_html, for_terminal, one_line, shorten, visible


def test_visible_writes_escape_as_text() -> None:
    assert visible("a\x1b[2Jb") == "a\\x1b[2Jb"


def test_visible_writes_bell_del_and_c1_as_text() -> None:
    assert visible("\x07\x7f\x9b") == "\\x07\\x7f\\x9b"


def test_visible_writes_a_lone_surrogate_as_text() -> None:
    assert visible("a\ud800b") == "a\\ud800b"  # a JSON "\ud800" escape: not encodable as UTF-8


def test_visible_keeps_tab_newline_and_unicode() -> None:
    assert visible("a\tb\nc µ—") == "a\tb\nc µ—"


def test_shorten_keeps_a_name_at_the_limit() -> None:
    assert shorten("x" * LIMIT) == "x" * LIMIT


def test_shorten_cuts_past_the_limit_with_a_marker() -> None:
    # 300 characters: the first 256 kept, 300 - 256 = 44 named in the marker
    assert shorten("x" * 300) == "x" * 256 + "...[+44 chars]"


def test_shorten_a_10_mb_name() -> None:
    # 10_000_000 - 256 = 9_999_744
    assert shorten("h" * 10_000_000).endswith("h...[+9999744 chars]")


def test_display_shortens_then_shows_control_characters() -> None:
    assert display("\x1b" * 300) == "\\x1b" * 256 + "...[+44 chars]"


def test_one_line_joins_lines() -> None:
    assert one_line("a\n  b\tc\x1b") == "a b c\\x1b"


def test_one_line_shortens_a_huge_message() -> None:
    assert len(one_line("z" * 10_000_000)) == 2000 + len("...[+6000 chars]")  # cut at 4 x 2000 first, then at 2000


def test_terminal_escapes_rich_markup() -> None:
    assert for_terminal("[/bold]x[red]") == "\\[/bold]x\\[red]"


def test_terminal_shows_control_characters() -> None:
    assert for_terminal("\x1b]0;t\x07") == "\\x1b]0;t\\x07"


def test_chart_escapes_dollars() -> None:
    assert for_chart("$\\undefinedcmd{x}$") == "\\$\\undefinedcmd{x}\\$"


def test_chart_draws_an_escaped_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_title(for_chart("$\\undefinedcmd{x}$ $a"))
    fig.savefig(tmp_path / "t.png")  # unescaped, this raises ValueError (mathtext)
    plt.close(fig)
    assert (tmp_path / "t.png").stat().st_size > 0


def test_html_escapes_tags_and_quotes() -> None:
    assert for_html('<a href="x">y</a>') == "&lt;a href=&quot;x&quot;&gt;y&lt;/a&gt;"


def test_html_shortens() -> None:
    assert for_html("<" * 300) == "&lt;" * 256 + "...[+44 chars]"


def test_csv_prefixes_formula_starts() -> None:
    assert [for_csv(s) for s in ("=1", "+1", "-1", "@1", "\t1", "\r1")] == ["'=1", "'+1", "'-1", "'@1", "'\t1", "'\r1"]


def test_csv_leaves_other_text() -> None:
    assert for_csv("matmul=1") == "matmul=1"


def test_csv_never_touches_numbers() -> None:
    assert for_csv(-1.5) == -1.5


def test_csv_keeps_long_text_whole() -> None:
    assert for_csv("=" + "x" * 300) == "'=" + "x" * 300


def test_error_messages_show_control_characters() -> None:
    assert str(RooflineError("bad \x1b[2J", where="f\x07.json")) == "f\\x07.json: bad \\x1b[2J"


def test_cli_usage_error_shows_control_characters(capsys) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from roofline import cli

    with pytest.raises(SystemExit):
        cli.main(["analyze", "w.json", "--device", "h100", "--top", "\x1b[2J"])
    assert "'\\x1b[2J'" in capsys.readouterr().err


def test_prose_is_shortened_after_a_whole_word() -> None:
    """A long sentence is cut after a whole word, never inside one, and a number keeps its unit or goes with it
    (issue 48, item 8: 'bf16 roof 923.8 G...[+176 chars]'); the marker counts exactly what was left out."""
    text = "measured roofs: " + ", ".join(f"bf16 roof {900 + k}.8 GFLOP/s" for k in range(20))
    short = shorten(text)
    head, _, rest = short.partition("...[+")
    assert text.startswith(head) and text[len(head)] == " "  # the cut falls on a space
    assert int(rest.removesuffix(" chars]")) == len(text) - len(head)
    assert not head.split()[-1].replace(".", "").isdigit()  # not '923.8' without its GFLOP/s
    assert len(head) >= 256 * 3 // 4
