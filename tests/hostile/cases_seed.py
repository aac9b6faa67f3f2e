"""A few seed cases, one per class, from the issue's table (the other cases_*.py modules add the rest)."""

from __future__ import annotations

import json

from hostile.harness import Case

MARKUP = "[/bold]x[red]"
ESC = "\x1b[2J\x1b]0;title\x07"


def workload(name: str, **extra: object) -> str:
    op = {"name": name, "kind": "elementwise", "flops": 1e6, "bytes_read": 4e6, "bytes_written": 4e6}
    op.update(extra)
    return json.dumps({"schema": "roofline.workload/1", "title": "w", "ops": [op]})


def device(name: str, level: str = "DRAM") -> str:
    from roofline import Device

    d = Device.simple(name, "100 GFLOP/s", "10 GB/s").to_dict()
    d["memory"][0]["level"] = level
    return json.dumps(d)


CASES = [
    Case("seed/markup-device-name-device", "names-markup", "device", ("device", "d.json"),
         files={"d.json": device(MARKUP)}, expect="ok", check="'[/bold]x[red]' in out"),
    Case("seed/escape-level-device", "control-chars", "device", ("device", "d.json"),
         files={"d.json": device("dev", level=ESC)}, expect="ok", check="'x1b' in out"),
    Case("seed/markup-device-compare", "names-markup", "compare", ("compare", "w.json", "--devices", "d.json"),
         files={"w.json": workload("op"), "d.json": device(MARKUP)}, expect="ok", check="'[/bold]x[red]' in out"),
    Case("seed/csv-formula-compare", "csv-injection", "compare",
         ("compare", "w.json", "--devices", "d.json", "--csv", "r.csv"),
         files={"w.json": workload("op"), "d.json": device("=cmd|' /C calc'!A0")}, expect="ok",
         check="\"'=cmd\" in (tmp / 'r.csv').read_text()"),
    Case("seed/escape-workload-title-compare", "control-chars", "compare", ("compare", "w.json", "--devices", "h100"),
         files={"w.json": workload("op").replace('"title": "w"', '"title": "t\\u001b[2J"')}, expect="ok"),
    Case("seed/markup-op-name-analyze", "names-markup", "analyze",
         ("analyze", "w.json", "--device", "h100"), files={"w.json": workload(MARKUP)}, expect="ok",
         check="'[/bold]x[red]' in out"),
    Case("seed/mathtext-op-name-chart", "names-mathtext", "analyze",
         ("analyze", "w.json", "--device", "h100", "-o", "c.png"), files={"w.json": workload("$\\undefinedcmd{x}$")},
         expect="ok", check="(tmp / 'c.png').is_file()"),
    Case("seed/escape-op-name-analyze", "control-chars", "analyze",
         ("analyze", "w.json", "--device", "h100"), files={"w.json": workload(ESC)}, expect="ok"),
    Case("seed/csv-formula", "csv-injection", "analyze",
         ("analyze", "w.json", "--device", "h100", "--csv", "r.csv"), files={"w.json": workload("=HYPERLINK(\"x\")")},
         expect="ok", check="\"'=HYPERLINK\" in (tmp / 'r.csv').read_text()"),
    Case("seed/unsupported-is-a-string", "wrong-types", "analyze",
         ("analyze", "w.json", "--device", "h100"),
         files={"w.json": json.dumps({"schema": "roofline.workload/1", "ops": [], "unsupported": "abc"})},
         names="unsupported"),
]

# bench, demo, devices: hostile arguments are refused before any measuring or writing
LONG = "x" * 5000
CASES += [
    Case("seed/bench-threads-zero", "bad-shapes", "bench", ("bench", "--threads", "0"), names="--threads"),
    Case("seed/bench-threads-huge", "bad-shapes", "bench", ("bench", "--threads", "99999999999999999999"),
         names="--threads"),
    Case("seed/bench-out-is-dir", "partial-outputs", "bench", ("bench", "--out", "adir"), files={"adir/x": "1"},
         names="adir"),
    Case("seed/bench-plot-is-file", "partial-outputs", "bench", ("bench", "--plot", "afile"), files={"afile": "1"},
         names="afile"),
    Case("seed/bench-audit-no-cache", "wrong-types", "bench", ("bench", "--audit"), names="roofline bench"),
    Case("seed/bench-out-long-name", "long-names", "bench", ("bench", "--out", LONG + ".json"), names="cannot"),
    Case("seed/demo-out-is-file", "partial-outputs", "demo", ("demo", "--out", "afile"), files={"afile": "1"},
         names="afile"),
    Case("seed/demo-out-under-file", "partial-outputs", "demo", ("demo", "--out", "afile/sub"), files={"afile": "1"},
         names="afile"),
    Case("seed/demo-out-long", "long-names", "demo", ("demo", "--out", LONG), names="cannot"),
    Case("seed/demo-out-escape", "control-chars", "demo", ("demo", "--out", "afile/\x1b[2J"), files={"afile": "1"},
         names="afile"),
    Case("seed/demo-unknown-flag", "wrong-types", "demo", ("demo", "--fast"), names="--fast"),
    Case("seed/devices-json", "legal-input", "devices", ("devices", "--json"), expect="ok",
         check="len(__import__('json').loads(out)) >= 20"),
    Case("seed/devices-table", "legal-input", "devices", ("devices",), expect="ok", check="'H100' in out"),
    Case("seed/devices-unknown-flag", "wrong-types", "devices", ("devices", "--csv", "x.csv"), names="--csv"),
    Case("seed/devices-typo-command", "wrong-types", "devices", ("devcies",), names="devcies"),
    Case("seed/devices-escape-arg", "control-chars", "devices", ("devices", "\x1b]0;title\x07"),
         names="unrecognized arguments"),
]
