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
    # the header: "op" then the column gap (two spaces); a wrapped line of prose may start with the word "op"
    header = [line for line in narrow.splitlines() if line.strip().startswith("op  ")][0]
    wide_header = [line for line in wide.splitlines() if line.strip().startswith("op  ")][0]
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


def test_module_grouping_says_own_ops_and_depth_sums_blocks(monkeypatch) -> None:
    """A block's row without --depth holds only its own ops (layer1.0: its residual add, 1 MFLOP), and the column
    says so; with --depth 2 the block holds everything under it (add 1 + conv 100 = 101 MFLOP) (issue 48, item 9)."""
    from roofline import Device, Op, Workload, analyze
    from roofline.render.terminal import render

    monkeypatch.setenv("COLUMNS", "200")
    w = Workload.from_ops([Op("conv", kind="conv", flops=100e6, bytes_read=1e6, group="layer1.0.conv1"),
                           Op("add", kind="elementwise", flops=1e6, bytes_read=1e6, group="layer1.0")], title="blocks")
    a = analyze(w, Device.simple("d", "1 TFLOP/s", "100 GB/s"))

    def row(text: str, name: str) -> str:
        return next(x for x in text.splitlines() if x.strip().startswith(name + " "))

    own = render(a, group_by="module", color=False)
    assert "module (own ops)" in own and "own ops: a block's row holds only the ops it runs itself" in own
    assert "1 MFLOP" in row(own, "layer1.0") and "100 MFLOP" in row(own, "layer1.0.conv1")
    summed = render(a, group_by="module", depth=2, color=False)
    assert "own ops" not in summed and "101 MFLOP" in row(summed, "layer1.0")
