"""Every command at 60, 80, 100, 120 and 200 columns (issue 31, part B): no line wider than the terminal
(display width: a CJK character takes two cells), no number split from its unit, every dropped column named
in a footnote, names shortened in the middle and never split, FLOPs and bytes as totals when ``count`` goes."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from roofline import cli
from roofline.render import fit

sys.path.insert(0, str(Path(__file__).parent))
from hostile.cases_ranges import cache  # noqa: E402  (a cached device with bench facts and a calibration)

WIDTHS = (60, 80, 100, 120, 200)
LONG = "a_method_with_a_very_long_name_measured_over_many_repeats " * 3
#: a workload with names that are long, wide (CJK: two cells a character), alike but for their middle, counted
WORKLOAD = {"schema": "roofline.workload/1", "title": "widths", "ops": [
    {"name": f"model.encoder.layers.{k}.attention.self.query_projection", "kind": "matmul", "flops": 2e9 * (k + 1),
     "bytes_read": 4e6, "bytes_written": 1e6, "precision": "fp16", "unit": "matrix", "count": 3} for k in range(4)
] + [{"name": "模型.编码器.注意力.查询投影.权重矩阵乘法运算", "kind": "matmul", "flops": 5e9, "bytes_read": 1e8,
      "bytes_written": 1e6, "precision": "fp16", "unit": "matrix", "count": 2},
     {"name": "softmax", "kind": "softmax", "flops": 1e6, "bytes_read": 4e6, "bytes_written": 4e6, "count": 12}]}

COMMANDS = {
    "devices": ["devices"],
    "device": ["device", "h100"],
    "compare": ["compare", "llama-3-8b", "--devices", "h100,mi300x,l4,a100", "--phase", "decode", "--batch", "8",
                "--forecast"],
    "plan-train": ["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "1", "--train", "--global-batch", "16",
                   "--top", "3", "--price", "2.5"],
    "plan-serve": ["plan", "llama-2-7b", "--system", "dgx-h100", "--serve", "--batch", "8", "--top", "3"],
    "bench-show": ["bench", "--show"],
    "ops": ["ops"],
    "calibrate-show": ["calibrate", "--show"],
    "serve": ["serve", "llama-2-7b", "--device", "h100", "--rate", "4", "--requests", "20", "--isl", "128",
              "--osl", "16"],
    "llm": ["llm", "llama-3-8b", "--device", "h100", "--phase", "decode", "--top", "8", "--forecast"],
    "llm-list": ["llm", "--list"],
    "llm-sweep": ["llm", "llama-2-7b", "--device", "h100", "--phase", "decode", "--top", "3", "--sweep", "batch=1..64"],
    "analyze": ["analyze", "w.json", "--device", "h100"],
    "analyze-group": ["analyze", "w.json", "--device", "h100", "--group-by", "kind"],
    "trace-ranks": ["trace", "rank0.json", "rank1.json", "--device", "xeon-8480"],
}


@pytest.fixture
def here(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    d.mkdir()
    # bench --show and calibrate --show read the cache: a measured device with long method and suite-op names
    (d / "local-device.json").write_text(cache(compute__0__provenance__method=LONG,
                                               calibration__points__0__name="suite." + LONG.replace(" ", ".")))
    (tmp_path / "w.json").write_text(json.dumps(WORKLOAD))
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(d))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def tables(monkeypatch):
    """Every table laid out while the test runs: (its columns, the layout, the lines table_lines returned)."""
    seen: list[tuple[list[fit.Column], fit.Layout, list[str], list[dict[str, str]]]] = []
    real_fit, real_lines = fit.fit, fit.table_lines
    layouts: list[tuple[list[fit.Column], fit.Layout]] = []

    def spy_fit(columns, rows, width, **kw):
        lay = real_fit(columns, rows, width, **kw)
        layouts.append((list(columns), lay))
        return lay

    def spy_lines(columns, rows, width=None, **kw):
        lines = real_lines(columns, rows, width, **kw)
        cols, lay = layouts[-1]
        seen.append((cols, lay, list(lines), list(rows)))  # a copy: callers append to the list they get
        return lines

    monkeypatch.setattr(fit, "fit", spy_fit)
    monkeypatch.setattr(fit, "table_lines", spy_lines)
    return seen


_UNIT = re.compile(r"^\s*(?:[kMGTPE]?(?:FLOP|B/s|B\b|iB)|s\b|µs|ms|ns|%|/s|OP)")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_fits_every_width(name, width, here, tables, monkeypatch, capsys) -> None:
    if name == "trace-ranks":
        pytest.importorskip("torch")
        from test_trace_ranks import ranks

        ranks(here, 2, slow=1)
    monkeypatch.setenv("COLUMNS", str(width))
    assert cli.main(COMMANDS[name]) == 0
    out, err = capsys.readouterr()
    lines = (out + err).splitlines()
    wide = [(cell_len(x), x) for x in lines if cell_len(x) > width]
    assert not wide, wide
    for prev, line in zip(lines, lines[1:], strict=False):  # '90.18' / 'MFLOP': a number split from its unit
        assert not (re.search(r"\d$", prev) and _UNIT.match(line)), (prev, line)
    assert tables, "no table went through roofline.render.fit"
    printed = set(out.splitlines())
    for columns, lay, table, rows in tables:
        shown = {c.key for c in lay.columns}
        dropped = {c.key for c in lay.dropped}
        assert shown | dropped == {c.key for c in columns} and not shown & dropped
        assert all(c.key in shown for c in columns if c.keep)  # the name, the time, the verdict stay
        assert all(set(c.requires) <= shown for c in lay.columns)  # never a column without what it depends on
        # every line of the table printed whole (never wrapped again: a name is never split across lines)
        assert all(x in printed for x in table if x), [x for x in table if x and x not in printed]
        if lay.dropped:  # every dropped column named in the footnote
            note = " ".join(x.strip() for x in table[table.index(next(x for x in table if "not shown at" in x)):])
            gone = {c.key for c in lay.dropped}
            titles = [c.instead[2] if c.instead and c.instead[0] in gone else c.title for c in lay.dropped]
            assert all(t in note for t in titles), (note, titles)
        for c, w, k in zip(lay.columns, lay.widths, lay.cells, strict=True):
            whole = max([cell_len(c.title), *(cell_len(r.get(k, "")) for r in rows)])
            if c.kind in ("number", "label"):  # numbers and labels are never cut
                assert w >= whole, (c.key, w, whole)
            elif c.kind == "name" and width >= 80 and not c.min_width:  # 24 columns of name at least (or all of it)
                assert w >= min(fit.NAME_MIN, whole), (c.key, w)
            shown_names = [x for x in fit.shorten_names([r.get(k, "") for r in rows], w)] if c.kind == "name" else []
            if shown_names:  # distinct names stay distinct
                assert len(set(shown_names)) == len({r.get(k, "") for r in rows})


def test_flops_and_bytes_are_totals_when_count_goes(monkeypatch, capsys) -> None:
    """llama-3-8b decode, batch 1: gate_proj is one [1 x 4096] x [4096 x 14336] GEMM per layer, 32 layers:
    2 x 4096 x 14336 = 117,440,512 FLOP each (117.4 MFLOP), x 32 = 3,758,096,384 (3.758 GFLOP) in all."""
    from roofline.core.units import format_flop

    each, total = 2 * 4096 * 14336, 2 * 4096 * 14336 * 32
    assert format_flop(each) == "117.4 MFLOP" and format_flop(total) == "3.758 GFLOP"
    argv = ["llm", "llama-3-8b", "--device", "h100", "--phase", "decode", "--top", "3"]
    monkeypatch.setenv("COLUMNS", "200")
    assert cli.main(argv) == 0
    wide = capsys.readouterr().out.splitlines()
    header = next(x for x in wide if x.strip().startswith("op "))
    row = next(x for x in wide if "gate_proj" in x)
    assert "count" in header and "FLOPs each" in header and " 32 " in row and "117.4 MFLOP" in row
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(argv) == 0
    narrow = capsys.readouterr().out.splitlines()
    header = next(x for x in narrow if x.strip().startswith("op "))
    row = next(x for x in narrow if "gate_proj" in x)
    assert "count" not in header.split() and "FLOPs total" in header
    assert "3.758 GFLOP" in row and "117.4 MFLOP" not in row  # per instance x count, as the time is
    assert any("not shown at 80 columns" in x and "count" in x for x in narrow)
    assert any("FLOPs total in place of FLOPs each (no count column)" in x for x in narrow)


def test_names_shortened_in_the_middle_stay_unique() -> None:
    names = [f"model.encoder.layers.{k}.attention.self.query_projection" for k in range(12)]
    short = fit.shorten_names(names, 24)
    assert len(set(short)) == 12 and all(cell_len(s) <= 24 and fit.ELLIPSIS in s for s in short)
    assert all(s.startswith("model") and s.endswith(n[-3:]) and str(k) in s for k, (s, n) in enumerate(zip(short, names, strict=True)))
    # the same name twice is the same short name; a wide name counts two cells a character
    assert fit.shorten_names(["x" * 40, "x" * 40], 10) == ["xxxxx…xxxx"] * 2
    wide = fit.shorten_middle("模型编码器注意力查询投影", 9)  # 12 characters, 24 cells -> 4 + … + 4 = 9 cells
    assert wide == "模型…投影" and cell_len(wide) == 9


def test_a_verdict_is_one_short_phrase_and_its_fallback_a_footnote(monkeypatch) -> None:
    """An fp8 op on a device without an fp8 roof (L4 has one; A100 does not): the verdict says the bound, the
    fallback is a numbered footnote under the table."""
    from roofline import Op, Workload, analyze, get_device
    from roofline.render.terminal import render

    w = Workload.from_ops([Op("gemm", kind="matmul", flops=2e12, bytes_read=1e9, precision="fp8", unit="matrix")])
    a = analyze(w, get_device("a100"))
    assert a.verdict_flags(0) and "ceiling fallback" in a.verdict_flags(0)[0]
    monkeypatch.setenv("COLUMNS", "80")
    lines = render(a, color=False).splitlines()
    row = next(x for x in lines if x.strip().startswith("gemm"))
    assert row.rstrip().endswith("[1]") and "compute-bound, " in row and "ceiling fallback" not in row
    assert any(x.strip().startswith("[1] ceiling fallback") for x in lines)


def test_a_dependent_column_goes_with_the_one_it_depends_on() -> None:
    cols = [fit.Column("name", kind="name", keep=True), fit.Column("measured", priority=1),
            fit.Column("efficiency", priority=5, requires=("measured",)), fit.Column("time", keep=True)]
    rows = [{"name": "op", "measured": "1.000 ms", "efficiency": "50.0%", "time": "500 µs"}]
    lay = fit.fit(cols, rows, 30)
    # 2 + 24 (name floor: all of 'op' is 2) ... the name is short, so only the numbers decide: 2+4+2+8+2+10+2+6 > 30
    assert [c.key for c in lay.dropped] == ["measured", "efficiency"] and [c.key for c in lay.columns] == ["name", "time"]


def test_prose_wraps_at_spaces_and_keeps_a_number_with_its_unit() -> None:
    text = "roofline time: 43.9 ms per token, 295 output tokens/s; forecast 17.4 s for the whole run"
    for width in range(20, 60):
        lines = fit.wrap_line(text, width)
        assert all(cell_len(x) <= width for x in lines)
        joined = " ".join(x.strip() for x in lines)
        for piece in ("43.9 ms", "295 output", "17.4 s"):
            assert piece in joined


def test_devices_fits_the_documented_minimum_of_40_columns(monkeypatch, capsys) -> None:
    """At 40 columns (README's minimum) the catalog list drops main memory (named under the table) rather than
    overflow; at 60 it keeps it, shortening names to 16 cells first (issue 48, item 8)."""
    for width, kept in ((40, False), (60, True)):
        monkeypatch.setenv("COLUMNS", str(width))
        assert cli.main(["devices"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert max(cell_len(x) for x in lines) <= width
        assert any("main memory" in x for x in lines[:6]) == kept
        if not kept:
            note = " ".join(" ".join(lines).split("not shown at 40 columns:")[1].split())  # wrapped: read across
            assert "main memory" in note.split("(")[0]


def test_dotted_names_lose_whole_parts_from_the_middle(monkeypatch, capsys) -> None:
    """'decode.layers.mlp.gate_proj' in 20 cells: 'decode.….gate_proj', never 'decode.laye…p.gate_proj'; a table
    at 60 columns shortens op names only between dots (issue 48, item 8)."""
    assert fit.shorten_names(["decode.layers.mlp.gate_proj", "decode.layers.mlp.up_proj"], 20) == [
        "decode.….gate_proj", "decode.….mlp.up_proj"]  # 18 and 20 cells: as many last parts as fit
    # the same last part: still distinct (the cut moves), each within the width
    short = fit.shorten_names(["decode.layers.attn.norm", "decode.layers.mlp.norm"], 14)
    assert len(set(short)) == 2 and all(cell_len(x) <= 14 for x in short)
    monkeypatch.setenv("COLUMNS", "60")
    assert cli.main(["llm", "llama-3-8b", "--device", "h100", "--phase", "decode"]) == 0
    cut = [w for line in capsys.readouterr().out.splitlines() for w in line.split()
           if fit.ELLIPSIS in w and w.startswith("decode")]
    assert cut and all(f".{fit.ELLIPSIS}." in w for w in cut), cut
