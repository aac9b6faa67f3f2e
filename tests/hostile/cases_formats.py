"""Hostile file formats (issue 13, "validation at the boundary"): workload JSON/CSV, device JSON, analysis JSON.

Every field is checked before use (type, finiteness, range, integer size); each fault is one line naming the
file and the field.  Classes: wrong-types, huge-numbers, bad-encoding, and legal-input (odd but valid files
that must load: optional fields on only some ops, unicode names, a byte-order mark, ...).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hostile.harness import Case

W = "roofline.workload/1"
AN = ("analyze", "w.json", "--device", "h100")


def op(name: str = "a", **extra: Any) -> dict[str, Any]:
    o: dict[str, Any] = {"name": name, "kind": "elementwise", "flops": 1e6, "bytes_read": 4e6, "bytes_written": 4e6}
    o.update(extra)
    return o


def wdoc(ops: Any = None, **top: Any) -> dict[str, Any]:
    return {"schema": W, "title": "w", "ops": [op()] if ops is None else ops, **top}


def wl(ops: Any = None, **top: Any) -> str:
    return json.dumps(wdoc(ops, **top))


DEVICE: dict[str, Any] = {
    "schema": "roofline.device/1", "name": "toy", "kind": "cpu",
    "compute": [{"unit": "vector", "precision": "fp32", "flops": 1e12, "provenance": {"kind": "user", "source": "t"}}],
    "memory": [{"level": "DRAM", "bandwidth": 1e11, "capacity": 1e10}],
}


def ddoc(**changes: Any) -> dict[str, Any]:
    d = copy.deepcopy(DEVICE)
    d.update(changes)
    return d


def dev(**changes: Any) -> str:
    return json.dumps(ddoc(**changes))


def comp(**changes: Any) -> list[dict[str, Any]]:
    c = copy.deepcopy(DEVICE["compute"][0])
    c.update(changes)
    return [c]


def mem(**changes: Any) -> list[dict[str, Any]]:
    m = copy.deepcopy(DEVICE["memory"][0])
    m.update(changes)
    return [m]


def adoc(options: Any = None, device: Any = None, workload: Any = None) -> dict[str, Any]:
    return {"schema": "roofline.analysis/1", "device": DEVICE if device is None else device,
            "workload": wdoc() if workload is None else workload,
            "options": {"above_roof_tolerance": 0.0} if options is None else options}


def an(**kw: Any) -> str:
    return json.dumps(adoc(**kw))


CSV_HEAD = "name,kind,flops,bytes_read,bytes_written,count\n"
BIG = "1" + "0" * 400  # a 401-digit integer: beyond float range
HUGE = "7" * 5001  # beyond Python's int() digit limit (4300)
DEEP = "[" * 100_000 + "]" * 100_000


def analyze(name: str, cls: str, files: dict[str, str | bytes], names: str, expect: str = "error",
            argv: tuple[str, ...] = AN, **kw: Any) -> Case:
    return Case(f"formats/{name}", cls, argv[0], argv, files=files, names=names if expect == "error" else "",
                expect=expect, **kw)


def device(name: str, cls: str, text: str | bytes, names: str, expect: str = "error") -> Case:
    return Case(f"formats/{name}", cls, "device", ("device", "d.json"), files={"d.json": text},
                names=names if expect == "error" else "", expect=expect)


def report(name: str, cls: str, text: str | bytes, names: str, expect: str = "error") -> Case:
    return Case(f"formats/{name}", cls, "report", ("report", "a.json"), files={"a.json": text},
                names=names if expect == "error" else "", expect=expect)


def api(name: str, cls: str, code: str, files: dict[str, str | bytes], names: str, expect: str = "error") -> Case:
    return Case(f"formats/{name}", cls, "api", code=code, files=files, names=names if expect == "error" else "",
                expect=expect)


LOAD_W = "from roofline import Workload; Workload.load('{tmp}/w.json')"
LOAD_D = "from roofline import Device; Device.load('{tmp}/d.json')"
LOAD_A = "from roofline import Analysis; Analysis.load('{tmp}/a.json')"
COMPARE = ("compare", "w.json", "--devices", "h100")

WRONG_TYPES = [
    analyze("wt/unsupported-list-of-numbers", "wrong-types", {"w.json": wl(unsupported=[5])}, "unsupported[0]"),
    analyze("wt/unsupported-count-string", "wrong-types",
            {"w.json": wl(unsupported=[{"name": "x", "count": "3"}])}, "unsupported[0].count"),
    analyze("wt/info-list", "wrong-types", {"w.json": wl(info=[1, 2])}, "info"),
    analyze("wt/assumptions-number", "wrong-types", {"w.json": wl(assumptions=7)}, "assumptions"),
    analyze("wt/warnings-item-number", "wrong-types", {"w.json": wl(warnings=["ok", 3])}, "warnings[1]"),
    analyze("wt/title-object", "wrong-types", {"w.json": wl(title={"a": 1})}, "title"),
    analyze("wt/op-is-a-list", "wrong-types", {"w.json": wl([op(), [1, 2]])}, "ops[1]"),
    analyze("wt/ops-is-a-string", "wrong-types", {"w.json": wl("abc")}, "ops"),
    analyze("wt/op-name-number", "wrong-types", {"w.json": wl([op(5)])}, "ops[0].name"),
    analyze("wt/flops-string", "wrong-types", {"w.json": wl([op(), op("b", flops="x")])}, "ops[1].flops"),
    analyze("wt/count-bool", "wrong-types", {"w.json": wl([op(count=True)])}, "ops[0].count"),
    analyze("wt/bytes-read-list", "wrong-types", {"w.json": wl([op(bytes_read=[1])])}, "ops[0].bytes_read"),
    analyze("wt/flops-null-required", "wrong-types", {"w.json": wl([op(flops=None)])}, "ops[0].flops"),
    analyze("wt/kind-number", "wrong-types", {"w.json": wl([op(kind=5)])}, "ops[0].kind"),
    analyze("wt/precision-unknown", "wrong-types", {"w.json": wl([op(precision="fp7")])}, "ops[0].precision"),
    analyze("wt/measured-seconds-string", "wrong-types", {"w.json": wl([op(measured_seconds="1ms")])},
            "ops[0].measured_seconds"),
    analyze("wt/unknown-op-field", "wrong-types", {"w.json": wl([op(flop=3)])}, "ops[0].flop"),
    analyze("wt/columns-name-string", "wrong-types",
            {"w.json": wl({"name": "abc", "flops": [1, 2, 3], "bytes_read": [1, 2, 3], "bytes_written": [1, 2, 3]})},
            "ops.name"),
    analyze("wt/columns-count-string-item", "wrong-types",
            {"w.json": wl({"name": ["a", "b"], "flops": [1, 2], "bytes_read": [1, 2], "bytes_written": [1, 2],
                           "count": [1, "2"]})}, "ops.count[1]"),
    analyze("wt/document-is-a-list", "wrong-types", {"w.json": "[1, 2]"}, "w.json"),
    analyze("wt/negative-bytes", "wrong-types", {"w.json": wl([op(bytes_written=-1)])}, "ops[0].bytes_written"),
    analyze("wt/csv-flops-text", "wrong-types", {"w.csv": CSV_HEAD + "a,matmul,1e9,1e6,1e6,1\nb,matmul,abc,1,1,1\n"},
            "line 3: flops", argv=("analyze", "w.csv", "--device", "h100")),
    analyze("wt/csv-kind-unknown", "wrong-types", {"w.csv": CSV_HEAD + "a,matmull,1e9,1e6,1e6,1\n"},
            "line 2: kind", argv=("analyze", "w.csv", "--device", "h100")),
    analyze("wt/csv-metadata-list", "wrong-types", {"w.csv": "# [1, 2]\n" + CSV_HEAD + "a,matmul,1,1,1,1\n"},
            "line 1", argv=("analyze", "w.csv", "--device", "h100")),
    analyze("wt/csv-metadata-info-list", "wrong-types",
            {"w.csv": '# {"info": [1]}\n' + CSV_HEAD + "a,matmul,1,1,1,1\n"}, "info",
            argv=("analyze", "w.csv", "--device", "h100")),
    analyze("wt/info-llm-string", "wrong-types", {"w.json": wl(info={"llm": "abc"})}, "info.llm"),
    analyze("wt/info-llm-batch-string", "wrong-types", {"w.json": wl(info={"llm": {
        "arch": {}, "phase": "decode", "batch": "8", "prompt": 1, "context": 1, "gen": 1, "tp": 1, "flash": False,
        "all_logits": False}})}, "info.llm.batch"),
    analyze("wt/csv-row-longer-than-header", "wrong-types", {"w.csv": CSV_HEAD + "a,b,matmul,1,1,1,1\n"}, "line 2",
            argv=("analyze", "w.csv", "--device", "h100")),
    analyze("wt/csv-unknown-column", "wrong-types", {"w.csv": "name,flops,bytes_read,bytes_written,flop\na,1,1,1,1\n"},
            "header: unknown column", argv=("analyze", "w.csv", "--device", "h100")),
    device("wt/device-aliases-number", "wrong-types", dev(aliases=5), "aliases"),
    device("wt/device-provenance-string", "wrong-types", dev(compute=comp(provenance="abc")), "provenance"),
    device("wt/device-metadata-list", "wrong-types", dev(metadata=[]), "metadata"),
    device("wt/device-name-number", "wrong-types", dev(name=5), "name"),
    device("wt/device-name-empty", "wrong-types", dev(name="  "), "name"),
    device("wt/device-compute-item-number", "wrong-types", dev(compute=[1]), "compute[0]"),
    device("wt/device-memory-string", "wrong-types", dev(memory="abc"), "memory"),
    device("wt/device-interconnect-string", "wrong-types", dev(interconnect="nvlink"), "interconnect"),
    device("wt/device-provenance-repeats-string", "wrong-types",
           dev(compute=comp(provenance={"kind": "measured", "repeats": "x"})), "provenance.repeats"),
    device("wt/device-provenance-dense-string", "wrong-types",
           dev(compute=comp(provenance={"dense": "no"})), "provenance.dense"),
    device("wt/device-provenance-source-list", "wrong-types",
           dev(compute=comp(provenance={"source": ["x"]})), "provenance.source"),
    device("wt/device-unit-number", "wrong-types", dev(compute=comp(unit=5)), "compute[0].unit"),
    device("wt/device-flops-bool", "wrong-types", dev(compute=comp(flops=True)), "compute[0].flops"),
    device("wt/device-bench-version-bool", "wrong-types", dev(bench={"version": True, "machine": "m"}),
           "bench.version"),
    device("wt/device-duplicate-level", "wrong-types",
           dev(memory=mem() + [{"level": "dram", "bandwidth": 2e11}]), "given twice"),
    device("wt/device-no-compute", "wrong-types", dev(compute=[]), "at least one compute ceiling"),
    device("wt/device-kind-unknown", "wrong-types", dev(kind="fpga"), "kind"),
    device("wt/device-bandwidth-negative", "wrong-types", dev(memory=mem(bandwidth=-1)), "memory[0].bandwidth"),
    device("wt/device-capacity-unit-wrong", "wrong-types", dev(memory=mem(capacity="8 GB/s")), "memory[0].capacity"),
    report("wt/analysis-options-list", "wrong-types", an(options=[]), "options"),
    report("wt/analysis-options-unknown", "wrong-types", an(options={"bogus": 1}), "bogus"),
    report("wt/analysis-tolerance-string", "wrong-types", an(options={"above_roof_tolerance": "x"}),
           "above_roof_tolerance"),
    report("wt/analysis-tolerance-wrong-length", "wrong-types", an(options={"above_roof_tolerance": [0.1, 0.2]}),
           "above_roof_tolerance"),
    report("wt/analysis-workload-info-list", "wrong-types", an(workload=wdoc(info=[1, 2])), "info"),
    report("wt/analysis-device-aliases-number", "wrong-types", an(device=ddoc(aliases=5)), "aliases"),
    report("wt/analysis-is-a-string", "wrong-types", '"abc"', "a.json"),
    report("wt/analysis-device-string", "wrong-types", an(device="h100"), "a.json device"),
    Case("formats/wt/compare-op-name-number", "wrong-types", "compare", COMPARE, files={"w.json": wl([op(5)])},
         names="ops[0].name"),
    Case("formats/wt/compare-device-file-provenance", "wrong-types", "compare",
         ("compare", "w.json", "--devices", "h100,d.json"),
         files={"w.json": wl(), "d.json": dev(memory=mem(provenance=7))}, names="provenance"),
    Case("formats/wt/plot-device-metadata-list", "wrong-types", "plot",
         ("plot", "--device", "d.json", "--point", "a:1e9:1e9"), files={"d.json": dev(metadata=[])}, names="metadata"),
    api("wt/api-workload-info-list", "wrong-types", LOAD_W, {"w.json": wl(info=[1, 2])}, "info"),
    api("wt/api-device-aliases-number", "wrong-types", LOAD_D, {"d.json": dev(aliases=5)}, "aliases"),
    api("wt/api-analysis-options-list", "wrong-types", LOAD_A, {"a.json": an(options=[])}, "options"),
]

HUGE_NUMBERS = [
    analyze("huge/flops-401-digits", "huge-numbers", {"w.json": wl([op()]).replace("1000000.0", BIG, 1)},
            "ops[0].flops"),
    analyze("huge/5001-digit-integer", "huge-numbers", {"w.json": wl([op()]).replace("1000000.0", HUGE, 1)},
            "w.json"),
    analyze("huge/nested-100k-brackets", "huge-numbers", {"w.json": '{"schema": "x", "ops": ' + DEEP + "}"},
            "w.json"),
    analyze("huge/flops-1e400-literal", "huge-numbers", {"w.json": wl([op()]).replace("1000000.0", "1e400", 1)},
            "ops[0].flops"),
    analyze("huge/nan-literal", "huge-numbers", {"w.json": wl([op(bytes_read=float("nan"))])}, "ops[0].bytes_read"),
    analyze("huge/minus-infinity-literal", "huge-numbers", {"w.json": wl([op(), op("b", flops=float("-inf"))])},
            "ops[1].flops"),
    analyze("huge/count-1e400", "huge-numbers", {"w.json": wl([op(count=7)]).replace(": 7", ": 1e400", 1)},
            "ops[0].count"),
    analyze("huge/unsupported-count-401-digits", "huge-numbers",
            {"w.json": wl(unsupported=[{"name": "x", "count": 7}]).replace(": 7", ": " + BIG)}, "unsupported[0].count"),
    analyze("huge/csv-flops-1e400", "huge-numbers", {"w.csv": CSV_HEAD + "a,matmul,1e400,1,1,1\n"},
            "line 2: flops", argv=("analyze", "w.csv", "--device", "h100")),
    analyze("huge/csv-metadata-deep", "huge-numbers", {"w.csv": "# " + DEEP + "\n" + CSV_HEAD + "a,matmul,1,1,1,1\n"},
            "w.csv", argv=("analyze", "w.csv", "--device", "h100")),
    analyze("huge/flops-above-1e30", "huge-numbers", {"w.json": wl([op(flops=1e300, count=1e10)])}, "ops[0].flops"),
    analyze("huge/count-above-1e15", "huge-numbers", {"w.json": wl([op(count=1e300)])}, "ops[0].count"),
    analyze("huge/bytes-1e308", "huge-numbers", {"w.json": wl([op(bytes_read=1e308, bytes_written=1e308)])},
            "ops[0].bytes_read", argv=AN + ("--json", "a.json"), outputs=("a.json",)),
    analyze("huge/measured-denormal", "huge-numbers", {"w.json": wl([op(measured_seconds=5e-324)])},
            "ops[0].measured_seconds"),
    device("huge/device-bandwidth-denormal", "huge-numbers", dev(memory=mem(bandwidth=5e-324)), "memory[0].bandwidth"),
    device("huge/device-flops-1e300", "huge-numbers", dev(compute=comp(flops=1e300)), "flops"),
    device("huge/device-flops-1e400-quantity", "huge-numbers", dev(compute=comp(flops="1e400 FLOP/s")),
           "compute[0].flops"),
    device("huge/device-bandwidth-401-digits", "huge-numbers",
           dev(memory=mem(bandwidth=7)).replace('"bandwidth": 7', '"bandwidth": ' + BIG), "memory[0].bandwidth"),
    device("huge/device-capacity-1e308-EB", "huge-numbers", dev(memory=mem(capacity="1e308 EB")),
           "memory[0].capacity"),
    device("huge/device-repeats-10e30", "huge-numbers",
           dev(compute=comp(provenance={"kind": "measured", "repeats": 10**30})), "provenance.repeats"),
    device("huge/device-5001-digit-metadata", "huge-numbers", dev(metadata={"x": 7}).replace(": 7}", ": " + HUGE + "}"),
           "d.json"),
    report("huge/analysis-tolerance-401-digits", "huge-numbers",
           an(options={"above_roof_tolerance": 7}).replace(": 7}", ": " + BIG + "}"), "above_roof_tolerance"),
    report("huge/analysis-nested-100k", "huge-numbers", '{"schema": "roofline.analysis/1", "device": ' + DEEP + "}",
           "a.json"),
    Case("formats/huge/plot-point-1e400", "huge-numbers", "plot",
         ("plot", "--device", "h100", "--point", "a:1e400:1e9"), names="--point"),
    api("huge/api-workload-401-digits", "huge-numbers", LOAD_W,
        {"w.json": wl([op()]).replace("4000000.0", BIG, 1)}, "ops[0].bytes_read"),
]

LONG_NAME = "w" * 5000 + ".json"
BAD_ENCODING = [
    analyze("enc/json-invalid-utf8", "bad-encoding", {"w.json": wl([op("ab")]).encode().replace(b"ab", b"a\xff\xfe")},
            "UTF-8"),
    analyze("enc/csv-invalid-utf8", "bad-encoding", {"w.csv": (CSV_HEAD + "caf\xe9,matmul,1,1,1,1\n").encode("latin-1")},
            "w.csv", argv=("analyze", "w.csv", "--device", "h100")),
    analyze("enc/json-utf16", "bad-encoding", {"w.json": wl().encode("utf-16")}, "w.json"),
    analyze("enc/json-bom-accepted", "bad-encoding", {"w.json": b"\xef\xbb\xbf" + wl().encode()}, "", expect="ok"),
    analyze("enc/csv-bom-accepted", "bad-encoding", {"w.csv": b"\xef\xbb\xbf" + (CSV_HEAD + "a,matmul,1,1,1,1\n").encode()},
            "", expect="ok", argv=("analyze", "w.csv", "--device", "h100")),
    analyze("enc/json-raw-nul", "bad-encoding", {"w.json": wl().encode().replace(b'"w"', b'"w\x00"', 1)}, "w.json"),
    analyze("enc/json-nul-between-tokens", "bad-encoding", {"w.json": b"\x00" + wl().encode()}, "w.json"),
    analyze("enc/csv-200kb-field", "bad-encoding", {"w.csv": CSV_HEAD + '"' + "x" * 200_000 + '",matmul,1,1,1,1\n'},
            "line 2", argv=("analyze", "w.csv", "--device", "h100")),
    analyze("enc/empty-json-file", "bad-encoding", {"w.json": ""}, "w.json"),
    analyze("enc/empty-csv-file", "bad-encoding", {"w.csv": ""}, "w.csv", argv=("analyze", "w.csv", "--device", "h100")),
    analyze("enc/csv-header-only", "bad-encoding", {"w.csv": CSV_HEAD}, "w.csv",
            argv=("analyze", "w.csv", "--device", "h100")),
    Case("formats/enc/over-long-workload-name", "bad-encoding", "analyze", ("analyze", LONG_NAME, "--device", "h100"),
         names="File name too long", check="len(err) < 400"),
    Case("formats/enc/over-long-device-name", "bad-encoding", "device", ("device", LONG_NAME),
         names="File name too long", check="len(err) < 400"),
    Case("formats/enc/over-long-analysis-name", "bad-encoding", "report", ("report", LONG_NAME),
         names="File name too long", check="len(err) < 400"),
    Case("formats/enc/workload-is-a-directory", "bad-encoding", "analyze", ("analyze", "d.json", "--device", "h100"),
         files={"d.json/x": "1"}, names="d.json"),
    Case("formats/enc/dev-zero-as-workload", "bad-encoding", "analyze", ("analyze", "/dev/zero", "--device", "h100"),
         names="not a regular file"),
    Case("formats/enc/dev-zero-as-device", "bad-encoding", "plot",
         ("plot", "--device", "/dev/zero.json", "--point", "a:1:1"), names="/dev/zero.json"),
    Case("formats/enc/nul-in-workload-path", "bad-encoding", "analyze", ("analyze", "w\x00.json", "--device", "h100"),
         names="embedded null byte"),
    Case("formats/enc/nul-in-device-path", "bad-encoding", "device", ("device", "d\x00.json"), names="null byte"),
    device("enc/device-invalid-utf8", "bad-encoding", dev().encode().replace(b"toy", b"t\xc3\x28y"), "UTF-8"),
    report("enc/analysis-invalid-utf8", "bad-encoding", an().encode().replace(b'"w"', b'"\xed\xa0\x80"', 1), "UTF-8"),
    api("enc/api-csv-invalid-utf8", "bad-encoding", "from roofline import Workload; Workload.load('{tmp}/w.csv')",
        {"w.csv": (CSV_HEAD + "a\xff,matmul,1,1,1,1\n").encode("latin-1")}, "w.csv"),
]

LEGAL = [
    analyze("legal/count-on-one-op", "legal-input", {"w.json": wl([op("a", count=3), op("b"), op("c")])}, "",
            expect="ok", check="'c' in out"),
    analyze("legal/weight-bytes-on-some-ops", "legal-input",
            {"w.json": wl([op("a", weight_bytes=1e6), op("b"), op("c", weight_bytes=2e6)])}, "", expect="ok"),
    analyze("legal/measured-on-some-ops", "legal-input",
            {"w.json": wl([op("a", measured_seconds=1e-3), op("b", measured_seconds=None), op("c")])}, "",
            expect="ok"),
    analyze("legal/cache-bytes-on-one-op", "legal-input", {"w.json": wl([op("a"), op("b", bytes_l2=1e7)])}, "",
            expect="ok"),
    analyze("legal/every-optional-field-on-one-op", "legal-input",
            {"w.json": wl([op("a", count=2, group="m.l", module_type="Linear", level="", weight_bytes=1.0,
                              measured_seconds=1.0, bytes_l1=1.0, bytes_l2=2.0, bytes_l3=3.0, precision="bf16",
                              unit="matrix"), {"name": "b", "flops": 1, "bytes_read": 1, "bytes_written": 0}])},
            "", expect="ok"),
    analyze("legal/unicode-names", "legal-input",
            {"w.json": wl([op("注意力 attention"), op("ünïcödé-ß"), op("🚀 rocket")], title="模型")}, "",
            expect="ok", check="'注意力' in out"),
    analyze("legal/empty-op-name", "legal-input", {"w.json": wl([op(""), op("b")])}, "", expect="ok"),
    analyze("legal/columns-with-null-count", "legal-input",
            {"w.json": wl({"name": ["a", "b"], "flops": [1, 2], "bytes_read": [1, 2], "bytes_written": [1, 2],
                           "count": [None, 4]})}, "", expect="ok"),
    analyze("legal/null-metadata", "legal-input", {"w.json": wl(title=None, info=None, unsupported=None)}, "",
            expect="ok"),
    analyze("legal/csv-empty-optional-cells", "legal-input",
            {"w.csv": "name,kind,flops,bytes_read,bytes_written,count,measured_seconds,precision\n"
                      "a,matmul,1e9,1e6,1e6,1,,\nb,,1e6,1e6,1e6,2,1e-3,bf16\n"}, "", expect="ok",
            argv=("analyze", "w.csv", "--device", "h100")),
    analyze("legal/csv-quoted-newline-name", "legal-input",
            {"w.csv": CSV_HEAD + '"two\nlines",matmul,1,1,1,1\nb,matmul,1,1,1,1\n'}, "", expect="ok",
            argv=("analyze", "w.csv", "--device", "h100")),
    device("legal/device-optional-fields-absent", "legal-input",
           dev(compute=comp(provenance=None) + [{"unit": "matrix", "precision": "bf16", "flops": "2 TFLOP/s"}],
               memory=mem(capacity=None) + [{"level": "L2", "bandwidth": "1 TB/s", "capacity": "40 MiB"}]), "",
           expect="ok"),
    report("legal/analysis-without-options", "legal-input",
           json.dumps({k: v for k, v in adoc().items() if k != "options"}), "", expect="ok"),
    Case("formats/legal/analyze-then-report-round-trip", "legal-input", "api",
         code="from roofline import cli\n"
              "assert cli.main(['analyze', '{tmp}/w.json', '--device', 'h100', '--json', '{tmp}/a.json']) == 0\n"
              "assert cli.main(['report', '{tmp}/a.json']) == 0\n",
         files={"w.json": wl([op("a", count=2, measured_seconds=1e-3), op("b", weight_bytes=1.0), op("c")])},
         expect="ok"),
    Case("formats/legal/compare-partial-optional-fields", "legal-input", "compare", COMPARE,
         files={"w.json": wl([op("a", count=5), op("b", bytes_l1=1.0)])}, expect="ok"),
    Case("formats/legal/plot-device-file", "legal-input", "plot",
         ("plot", "--device", "d.json", "--point", "a:1e9:1e9"), files={"d.json": dev()}, expect="ok"),
    Case("formats/legal/llm-analysis-round-trip", "legal-input", "api",
         code="from roofline import cli\n"
              "assert cli.main(['llm', 'llama-2-7b', '--device', 'h100', '--json', '{tmp}/a.json']) == 0\n"
              "assert cli.main(['report', '{tmp}/a.json']) == 0\n", expect="ok"),
    analyze("legal/csv-short-rows-take-defaults", "legal-input",
            {"w.csv": "name,flops,bytes_read,bytes_written,count,weight_bytes\na,1,1,1\nb,1,1,1,2,1\n"}, "",
            expect="ok", argv=("analyze", "w.csv", "--device", "h100")),
    api("legal/api-count-on-one-op", "legal-input",
        LOAD_W.replace("Workload.load(", "w = Workload.load(") + "\nassert list(w.columns['count']) == [1.0, 3.0]",
        {"w.json": wl([op("a"), op("b", count=3)])}, "", expect="ok"),
]

CASES = WRONG_TYPES + HUGE_NUMBERS + BAD_ENCODING + LEGAL
