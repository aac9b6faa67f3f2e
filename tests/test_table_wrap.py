"""Issue 48, item 8: prose in a table is wrapped by words, never cut (``roofline ops``' counts column at 120)."""

from __future__ import annotations

import pytest

from roofline.render.fit import Column, table_lines


def test_a_wrap_column_keeps_every_word_within_the_width() -> None:
    text = "one two three four five six seven eight nine ten"  # 48 cells
    lines = table_lines([Column("op", kind="label", keep=True), Column("counts", kind="wrap", keep=True)],
                        [{"op": "aten.mm", "counts": text}, {"op": "x", "counts": "short"}], width=30, indent=0)
    # header, then the first row over ceil(48 / (30 - 7 - 2)) or more lines, the second on one
    assert lines[0].split() == ["op", "counts"]
    body = lines[1:]
    assert all(len(ln) <= 30 for ln in lines)
    assert body[0].startswith("aten.mm  one")
    continuation = [ln for ln in body[1:] if ln.startswith(" ")]
    assert " ".join([body[0][9:], *(ln.strip() for ln in continuation)]) == text
    assert body[-1] == "x        short"
    assert not any("…" in ln for ln in lines)


def test_ops_at_120_columns_cuts_no_counts_text(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline.cli import main
    from roofline.commands.ops import rows

    monkeypatch.setenv("COLUMNS", "120")
    assert main(["ops", "--frontend", "torch"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert max(len(ln) for ln in out) <= 120
    joined = " ".join(ln.strip() for ln in out)
    for r in rows("torch")[:40]:  # every word of every counts text is printed (spacing aside)
        assert " ".join(r.counts.split()) in joined, r.op
