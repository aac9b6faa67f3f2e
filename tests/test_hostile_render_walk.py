"""Every renderer, fed a cached device and a system file full of hostile strings (issue 33).

The cached device (``$ROOFLINE_CACHE_DIR/local-device.json``: a file anyone can drop in place) and the
system file carry a terminal escape, an OSC title sequence, a bell, rich markup and mathtext in every name
a renderer shows: device name, provenance, native precisions, spec derivations, audit kernels, curve kinds,
calibration points, tier names.  Every command that shows them (terminal, PNG/SVG charts, HTML, CSV,
JSON) must show them as data: no raw control character in what it prints or writes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from roofline import cli

sys.path.insert(0, str(Path(__file__).parent))
from hostile.cases_ranges import CONFIG, SYSTEM, cache  # noqa: E402  (the corpus's hostile cache builder)

ESC = "\x1b[2J\x1b]0;pwned\x07[bold red]X[/]$\\frac{1}{0}$\x9b"
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    d = tmp_path / "cache"
    d.mkdir()
    (d / "local-device.json").write_text(cache(
        name=ESC, compute__0__provenance__source=ESC, compute__0__provenance__method=ESC, memory__0__level=ESC,
        bench__native=[ESC], bench__isa=[ESC], bench__spec__0__derivation=ESC, bench__spec__0__precision=ESC,
        bench__audit__0__kernel=ESC, bench__audit__0__roof=ESC, bench__audit__0__raised=ESC,
        bench__sweep__curves__0__kernel=ESC, bench__ert__note=ESC, bench__caches__0__level=ESC,
        calibration__device=ESC, calibration__suite=ESC, calibration__curves__0__kind=ESC,
        calibration__points__0__name=ESC, calibration__failed=[ESC]))
    (tmp_path / "s.json").write_text(json.dumps({**SYSTEM, "name": ESC, "tiers": [{**SYSTEM["tiers"][0],
                                                                                  "name": ESC}]}))
    (tmp_path / "config.json").write_text(json.dumps({**CONFIG, "_name_or_path": ESC}))
    (tmp_path / "w.json").write_text(json.dumps({"schema": "roofline.workload/1", "title": ESC, "ops": [
        {"name": ESC, "kind": "matmul", "flops": 1e9, "bytes_read": 1e6, "bytes_written": 1e6}]}))
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(d))
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.chdir(tmp_path)
    return tmp_path


COMMANDS = [
    ["bench", "--show"],
    ["bench", "--show", "--plot", "plots"],
    ["calibrate", "--show"],
    ["device", "local"],
    ["device", "local", "--json"],
    ["device", "local", "-o", "device.svg"],
    ["analyze", "w.json", "--device", "local", "--json", "a.json", "--csv", "a.csv", "--html", "a.html", "-o",
     "a.svg", "--verbose"],
    ["analyze", "w.json", "--device", "local", "--forecast", "--advice"],
    ["plan", "config.json", "--system", "s.json", "--serve", "--json", "p.json", "-o", "p.svg"],
    ["plan", "llama-2-7b", "--system", "s.json", "--serve", "--layout", "tp=8"],
    ["llm", "config.json", "--system", "s.json", "--tp", "8", "--html", "l.html"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(a[:3]) for a in COMMANDS])
def test_every_renderer_shows_hostile_names_as_data(hostile, capsys, argv):
    before = {p for p in hostile.rglob("*")}
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert not RAW.search(out + err), (out + err)[:2000]
    written = [p for p in hostile.rglob("*") if p not in before and p.is_file()]
    for p in written:
        if p.suffix in (".svg", ".html", ".json"):  # CSV cells keep names whole, as data (formulas guarded)
            text = p.read_text(encoding="utf-8", errors="replace")
            # HTML embeds plotly.js, whose minified source has control characters of its own: there, the ones
            # the names carry must not appear raw
            bad = re.search("[\x1b\x07\x9b]", text) if p.suffix == ".html" else RAW.search(text)
            assert not bad, (p.name, bad)
    if "-o" in argv or "--plot" in argv:
        assert written, "a chart was asked for"
