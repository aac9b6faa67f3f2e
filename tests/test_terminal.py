"""The terminal output in a 100-column terminal: no line is wider than the terminal, no number is split."""

from __future__ import annotations

import re

import pytest

from roofline.cli import main


@pytest.mark.parametrize("argv", [
    ["llm", "llama-2-7b", "--device", "h100", "--phase", "decode", "--advice"],
    ["llm", "mixtral-8x7b", "--device", "a100", "--phase", "generate", "--group-by", "module"],
    ["plot", "--device", "h100", "--point", "gemm:2.2T:100M", "--point", "a_very_long_op_name_" * 4 + ":1G:4G"],
])
def test_a_100_column_terminal_gets_whole_numbers(argv: list[str], monkeypatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert main(argv) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 100, [line for line in lines if len(line.rstrip()) > 100]
    # a number with its unit never ends one line and goes on in the next (e.g. '90.18 MFL' / 'OP')
    unit_piece = re.compile(r"^\s*(?:FLOP|B/s|B\b|s\b|µs|ms|OP|LOP|/s)")
    for prev, line in zip(lines, lines[1:], strict=False):
        assert not (re.search(r"\d$", prev.rstrip()) and unit_piece.match(line)), (prev, line)


def test_the_op_table_keeps_its_figures_whole_and_drops_columns_before_wrapping(monkeypatch, capsys) -> None:
    from roofline import analyze, from_llm, get_device
    from roofline.core.units import format_flop, format_seconds
    from roofline.render.terminal import render

    a = analyze(from_llm("llama-2-7b", phase="decode"), get_device("h100"))
    monkeypatch.setenv("COLUMNS", "100")
    narrow = render(a, top=5, color=False)
    monkeypatch.setenv("COLUMNS", "200")
    wide = render(a, top=5, color=False)
    count = a.workload.columns["count"]
    for i in a.order()[:5]:
        # time and FLOPs of every listed op appear whole in both: per instance beside the count (wide), in
        # total over the count once count is dropped (narrow), as the time is
        flops = a.workload.columns["flops"][i]
        assert format_seconds(a.total_op_time[i]) in narrow and format_seconds(a.total_op_time[i]) in wide
        assert format_flop(flops) in wide and format_flop(flops * count[i]) in narrow
    header = [line for line in narrow.splitlines() if line.strip().startswith("op ")][0]
    wide_header = [line for line in wide.splitlines() if line.strip().startswith("op ")][0]
    # count, kind, then attainable go first on a narrow terminal; op, time, share and verdict stay
    assert "attainable" in wide_header and "attainable" not in header
    assert all(col in header for col in ("op", "time", "share", "verdict"))


def test_assumptions_are_one_line_unless_verbose(monkeypatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["llm", "llama-2-7b", "--device", "h100", "--phase", "decode"]) == 0
    out = capsys.readouterr().out
    assert out.count("assumption") == 1 and "--verbose" in out
    assert main(["llm", "llama-2-7b", "--device", "h100", "--phase", "decode", "--verbose"]) == 0
    from roofline import from_llm

    n = len(from_llm("llama-2-7b", phase="decode").assumptions)
    assert capsys.readouterr().out.count("assumption: ") == n > 1
