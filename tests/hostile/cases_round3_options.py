"""Hostile input, third round, the options added this wave (issue 53: "its own cases also cover the options the
other issues add"): ``plan --devices/--precision/--layout`` (etp, stages=), the MoE options (``--ep``,
``--dp-attention``, ``--moe-load``, ``--mtp``), ``serve --scheduler/--engine`` and the engine's limits,
``trace --diff``, ``--analyses``/``--analyses-json``, ``--jobs``/``--dask``, calibration files of schema
``roofline.calibration/2``, ``benchmarks/gpu_acceptance.py``'s ``--fake``/``--out``, and escape sequences in
every name these options take.

Every case is an error: exit 2, one ``roofline: error:`` line naming the option or file at fault, no output
written (``--json o.json`` is given where the command has one: it must not appear), within the harness's
budget.  The legality rules they hold the project to are docs/legality.md's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hostile.cases_special import TRACE, W
from hostile.harness import Case, Special

M, MOE = "llama-2-7b", "mixtral-8x7b"
PLAN = ("plan", M, "--system", "dgx-h100", "--train")
PLAN_MOE = ("plan", MOE, "--system", "dgx-h100", "--train")
SERVE = ("serve", M, "--device", "h100", "--rate", "1", "--requests", "4")
SERVE_MOE = ("serve", MOE, "--device", "h100", "--tp", "8", "--rate", "1", "--requests", "4")
LLM = ("llm", M, "--device", "h100")
TR = ("trace", "t.json", "--device", "h100")
FIFO, DIR = Special("fifo"), Special("dir")
ESC = "\x1b[31mred\x1b[0m"
BENCH = str(Path(__file__).resolve().parents[2] / "benchmarks")
OUT = ("--json", "o.json")


def err(cls: str, name: str, argv: tuple[str, ...], names: str, files: dict[str, Any] | None = None,
        check: str = "", out: bool = True) -> Case:
    """``argv`` refused in one line naming ``names``; with ``out``, ``--json o.json`` added and never written."""
    full = (*argv, *OUT) if out else argv
    return Case(f"r3o/{cls}/{name}", cls, argv[0], full, files=files or {}, names=names,
                outputs=("o.json",) if out else (), check=check)


# -- plan --devices: a whole number of the system's nodes, >= 1, within the limit ---------------------------------
PD = "plan-devices"
PLAN_DEVICES = [
    err(PD, "zero", (*PLAN, "--devices", "0"), "--devices"),
    err(PD, "negative", (*PLAN, "--devices", "-1"), "--devices"),
    err(PD, "huge", (*PLAN, "--devices", str(10**18)), "--devices"),
    err(PD, "2-63", (*PLAN, "--devices", str(2**63)), "--devices"),
    err(PD, "not-a-multiple-of-8", (*PLAN, "--devices", "12"), "--devices"),
    err(PD, "fewer-than-a-node", (*PLAN, "--devices", "3"), "--devices"),
    err(PD, "with-nodes", (*PLAN, "--devices", "16", "--nodes", "2"), "--devices"),
    err(PD, "float", (*PLAN, "--devices", "8.5"), "--devices"),
    err(PD, "empty", (*PLAN, "--devices", ""), "--devices"),
    err(PD, "serve-not-a-multiple", ("plan", M, "--system", "dgx-h100", "--serve", "--devices", "9"), "--devices"),
    err(PD, "escape", (*PLAN, "--devices", ESC), "--devices"),
]

# -- plan --precision: a number format the mode and the device run ------------------------------------------------
PP = "plan-precision"
PLAN_PRECISION = [
    err(PP, "bogus", (*PLAN, "--precision", "bogus"), "--precision"),
    err(PP, "empty", (*PLAN, "--precision", ""), "--precision"),
    err(PP, "blank", (*PLAN, "--precision", "  "), "--precision"),
    err(PP, "two", (*PLAN, "--precision", "bf16,fp8"), "--precision"),
    err(PP, "int4-training", (*PLAN, "--precision", "int4"), "--precision"),
    err(PP, "mxfp8-serve", ("plan", M, "--system", "dgx-h100", "--serve", "--precision", "mxfp8"), "--precision"),
    err(PP, "nvfp4-serve", ("plan", M, "--system", "dgx-h100", "--serve", "--precision", "nvfp4"), "--precision"),
    err(PP, "fp8-block-serve", ("plan", M, "--system", "dgx-h100", "--serve", "--precision", "fp8-block"),
        "--precision"),
    err(PP, "fp4", (*PLAN, "--precision", "fp4"), "--precision"),
    err(PP, "escape", (*PLAN, "--precision", ESC), "--precision"),
]

# -- plan --layout: items KEY=VALUE; etp only on an MoE model and >= 1; stages= bounded ----------------------------
PL = "plan-layout"
PLAN_LAYOUT = [
    err(PL, "commas", (*PLAN, "--layout", ",,"), "--layout"),
    err(PL, "leading-comma", (*PLAN, "--layout", ",tp=8"), "--layout"),
    err(PL, "etp-dense", (*PLAN, "--layout", "tp=8,etp=2"), "etp"),
    err(PL, "etp-zero", (*PLAN_MOE, "--layout", "tp=8,etp=0"), "etp"),
    err(PL, "etp-negative", (*PLAN_MOE, "--layout", "tp=8,etp=-1"), "etp"),
    err(PL, "etp-not-dividing", (*PLAN_MOE, "--layout", "tp=8,etp=3"), "etp"),
    err(PL, "stages-huge", (*PLAN, "--layout", f"stages=1x{10**12}"), "stages"),
    err(PL, "stages-2-63", (*PLAN, "--layout", f"stages={2**63}"), "stages"),
    err(PL, "stages-many-items", (*PLAN, "--layout", "stages=" + "/".join(["1"] * 70_000)), "stages"),
    err(PL, "stages-empty", (*PLAN, "--layout", "stages="), "stages"),
    err(PL, "tp-zero", (*PLAN, "--layout", "tp=0"), "tp"),
    err(PL, "tp-huge", (*PLAN, "--layout", f"tp={10**30}"), "tp"),
    err(PL, "ep-dense", (*PLAN, "--layout", "ep=2"), "ep"),
    err(PL, "capacity-inf", (*PLAN_MOE, "--layout", "capacity=inf"), "capacity"),
    err(PL, "escape-key", (*PLAN, "--layout", ESC + "=1"), "--layout"),
]

# -- the MoE options: --ep, --dp-attention, --moe-load, --mtp -----------------------------------------------------
MO = "moe-options"
MOE_OPTIONS = [
    err(MO, "serve-ep-zero", (*SERVE_MOE, "--ep", "0"), "--ep"),
    err(MO, "serve-ep-negative", (*SERVE_MOE, "--ep", "-8"), "--ep"),
    err(MO, "serve-ep-not-dividing-tp", (*SERVE_MOE, "--ep", "3"), "ep"),
    err(MO, "serve-ep-huge", (*SERVE_MOE, "--ep", str(2**63)), "ep"),
    err(MO, "serve-ep-dense", (*SERVE, "--tp", "2", "--ep", "2"), "ep"),
    err(MO, "serve-dp-attention-dense", (*SERVE, "--tp", "2", "--dp-attention"), "dp"),
    err(MO, "serve-moe-load-bogus", (*SERVE_MOE, "--moe-load", "bogus"), "--moe-load"),
    err(MO, "serve-mtp-negative", (*SERVE_MOE, "--mtp", "-1"), "mtp"),
    err(MO, "serve-mtp-huge", (*SERVE_MOE, "--mtp", str(10**30)), "mtp"),
    err(MO, "llm-ep-zero", ("llm", MOE, "--device", "h100", "--tp", "8", "--ep", "0"), "ep"),
    err(MO, "llm-moe-load-empty", ("llm", MOE, "--device", "h100", "--moe-load", ""), "--moe-load"),
    err(MO, "plan-mtp-negative", (*PLAN_MOE, "--mtp", "-1"), "mtp"),
    err(MO, "plan-moe-load-serve", ("plan", MOE, "--system", "dgx-h100", "--serve", "--moe-load", "expected-max"),
        "--moe-load"),
]

# -- serve --scheduler / --engine and the engine's limits ---------------------------------------------------------
SS = "serve-scheduler"
SERVE_SCHEDULER = [
    err(SS, "scheduler-bogus", (*SERVE, "--scheduler", "bogus"), "--scheduler"),
    err(SS, "scheduler-fifo", (*SERVE, "--scheduler", "fifo"), "--scheduler"),
    err(SS, "scheduler-empty", (*SERVE, "--scheduler", ""), "--scheduler"),
    err(SS, "scheduler-blank", (*SERVE, "--scheduler", "  "), "--scheduler"),
    err(SS, "engine-bogus", (*SERVE, "--engine", "bogus"), "--engine"),
    err(SS, "engine-empty", (*SERVE, "--engine", ""), "--engine"),
    err(SS, "engine-and-bogus-scheduler", (*SERVE, "--engine", "vllm-v0", "--scheduler", "x"), "--scheduler"),
    err(SS, "max-tokens-zero", (*SERVE, "--max-tokens", "0"), "--max-tokens"),
    err(SS, "max-batch-negative", (*SERVE, "--max-batch", "-1"), "--max-batch"),
    err(SS, "block-size-zero", (*SERVE, "--block-size", "0"), "--block-size"),
    err(SS, "memory-utilization-nan", (*SERVE, "--gpu-memory-utilization", "nan"), "--gpu-memory-utilization"),
    err(SS, "memory-utilization-above-1", (*SERVE, "--gpu-memory-utilization", "1.5"), "--gpu-memory-utilization"),
    err(SS, "iteration-overhead-inf", (*SERVE, "--iteration-overhead", "inf"), "--iteration-overhead"),
]

# -- trace --diff ------------------------------------------------------------------------------------------------
TD = "trace-diff"
TRACE_DIFF = [
    err(TD, "empty", (*TR, "--diff", ""), "--diff", {"t.json": TRACE}),
    err(TD, "blank", (*TR, "--diff", " "), "--diff", {"t.json": TRACE}),
    err(TD, "missing-file", (*TR, "--diff", "nope.json"), "nope.json", {"t.json": TRACE}),
    err(TD, "folder", (*TR, "--diff", "d"), "d", {"t.json": TRACE, "d": DIR}),
    err(TD, "fifo", (*TR, "--diff", "f.json"), "f.json", {"t.json": TRACE, "f.json": FIFO}),
    err(TD, "not-a-trace", (*TR, "--diff", "b.json"), "b.json", {"t.json": TRACE, "b.json": "{}"}),
    err(TD, "bad-gzip", (*TR, "--diff", "b.json.gz"), "b.json.gz",
        {"t.json": TRACE, "b.json.gz": b"\x1f\x8b\x08\x00garbage"}),
    err(TD, "device-bogus", (*TR, "--diff", "b.json", "--diff-device", "bogus"), "bogus",
        {"t.json": TRACE, "b.json": TRACE}),
    err(TD, "device-without-diff", (*TR, "--diff-device", "h100"), "--diff-device", {"t.json": TRACE}),
    err(TD, "two-traces", ("trace", "a.json", "b.json", "--device", "h100", "--diff", "c.json"), "--diff",
        {"a.json": TRACE, "b.json": TRACE, "c.json": TRACE}),
]

# -- trace --analyses / --analyses-json --------------------------------------------------------------------------
TA = "trace-analyses"
TRACE_ANALYSES = [
    err(TA, "empty", (*TR, "--analyses", ""), "--analyses", {"t.json": TRACE}),
    err(TA, "commas", (*TR, "--analyses", ",,"), "--analyses", {"t.json": TRACE}),
    err(TA, "bogus", (*TR, "--analyses", "bogus"), "--analyses", {"t.json": TRACE}),
    err(TA, "one-bogus", (*TR, "--analyses", "idle,bogus"), "bogus", {"t.json": TRACE}),
    err(TA, "json-without-analyses", (*TR, "--analyses-json", "a.json"), "--analyses-json", {"t.json": TRACE}),
    err(TA, "json-wrong-suffix", (*TR, "--analyses", "idle", "--analyses-json", "a.csv"), "--analyses-json",
        {"t.json": TRACE}),
    err(TA, "json-html-suffix", (*TR, "--analyses", "idle", "--analyses-json", "a.html"), "--analyses-json",
        {"t.json": TRACE}),
    err(TA, "json-empty", (*TR, "--analyses", "idle", "--analyses-json", ""), "--analyses-json", {"t.json": TRACE}),
    err(TA, "json-folder", (*TR, "--analyses", "idle", "--analyses-json", "d.json"), "d.json",
        {"t.json": TRACE, "d.json": DIR}),
    err(TA, "json-fifo", (*TR, "--analyses", "idle", "--analyses-json", "f.json"), "f.json",
        {"t.json": TRACE, "f.json": FIFO}, check="Path(tmp, 'f.json').is_fifo()"),
    err(TA, "json-symlink", (*TR, "--analyses", "idle", "--analyses-json", "a.json"), "symbolic link",
        {"t.json": TRACE, "real.json": "old", "a.json": Special("symlink", target="real.json")},
        check="Path(tmp, 'real.json').read_text() == 'old'"),
    err(TA, "json-missing-folder", (*TR, "--analyses", "idle", "--analyses-json", "no/a.json"), "no",
        {"t.json": TRACE}),
]

# -- trace --jobs / --dask ---------------------------------------------------------------------------------------
TJ = "trace-jobs"
TRACE_JOBS = [
    err(TJ, "zero", (*TR, "--jobs", "0"), "--jobs", {"t.json": TRACE}),
    err(TJ, "negative", (*TR, "--jobs", "-4"), "--jobs", {"t.json": TRACE}),
    err(TJ, "huge", (*TR, "--jobs", str(10**30)), "--jobs", {"t.json": TRACE}),
    err(TJ, "2-63", (*TR, "--jobs", str(2**63)), "--jobs", {"t.json": TRACE}),
    err(TJ, "not-a-number", (*TR, "--jobs", "many"), "--jobs", {"t.json": TRACE}),
    err(TJ, "empty", (*TR, "--jobs", ""), "--jobs", {"t.json": TRACE}),
    err(TJ, "dask-empty", (*TR, "--dask", ""), "--dask", {"t.json": TRACE}),
    err(TJ, "dask-and-jobs", (*TR, "--dask", "local", "--jobs", "2"), "--jobs", {"t.json": TRACE}),
    err(TJ, "dask-bad-scheme", (*TR, "--dask", "http://127.0.0.1:1"), "--dask", {"t.json": TRACE}),
    err(TJ, "jobs-with-diff", (*TR, "--jobs", "2", "--diff", "t.json"), "--diff", {"t.json": TRACE}),
]

# -- calibration files of schema roofline.calibration/2 ----------------------------------------------------------
CV = "calibration-v2"


#: a shipped calibration of schema /2 (the device's own), its first table altered by each case
H100_CAL = Path(__file__).resolve().parents[2] / "src/roofline/catalog/calibrations/nvidia-h100-sxm5-80gb.json"


def _cal(**table: Any) -> str:
    doc = json.loads(H100_CAL.read_text())
    doc["tables"][0] = {**doc["tables"][0], **table}
    first = doc["tables"][0]
    for p in first["points"] if isinstance(first.get("points"), list) else ():
        if p.get("source") == "s":
            p["source"] = next(iter(doc["sources"]))
    return json.dumps(doc)


def _replace(**fields: Any) -> str:
    return json.dumps({**json.loads(H100_CAL.read_text()), **fields})


def cal(name: str, text: str, names: str) -> Case:
    return err(CV, name, (*LLM, "--forecast", "--calibration", "c.json"), names, {"c.json": text})


CALIBRATION_V2 = [
    cal("head-dim-zero", _cal(head_dim=0), "head_dim"),
    cal("head-dim-negative", _cal(head_dim=-64), "head_dim"),
    cal("head-dim-huge", _cal(head_dim=10**30), "head_dim"),
    cal("head-dim-string", _cal(head_dim="128"), "head_dim"),
    cal("head-dim-float", _cal(head_dim=64.5), "head_dim"),
    cal("term-bogus", _cal(term="bogus"), "term"),
    cal("axis-bogus", _cal(axis="bogus"), "axis"),
    cal("relative-to-bogus", _cal(relative_to="bogus"), "relative_to"),
    cal("points-empty", _cal(points=[]), "points"),
    cal("efficiency-nan", _cal(points=[{"x": 512, "efficiency": "NaN", "source": "s"}]), "efficiency"),
    cal("efficiency-above-1", _cal(points=[{"x": 512, "efficiency": 2.0, "source": "s"}]), "efficiency"),
    cal("x-decreasing", _cal(points=[{"x": 1024, "efficiency": 0.3, "source": "s"},
                                     {"x": 512, "efficiency": 0.4, "source": "s"}]), "x"),
    cal("source-unknown", _cal(points=[{"x": 512, "efficiency": 0.3, "source": "nowhere"}]), "nowhere"),
    cal("tables-not-a-list", _replace(tables={}), "tables"),
    cal("sources-not-an-object", _replace(sources=[]), "sources"),
    cal("kind-empty", _cal(kind=""), "kind"),
]

# -- benchmarks/gpu_acceptance.py --fake / --out -----------------------------------------------------------------
GA = "gpu-acceptance-options"


def accept(name: str, args: list[str], names: str, files: dict[str, Any] | None = None, check: str = "") -> Case:
    body = (f"import sys\nsys.path.insert(0, {BENCH!r})\nimport gpu_acceptance\n"
            f"sys.exit(gpu_acceptance.main({args!r}))\n")
    return Case(f"r3o/{GA}/{name}", GA, "gpu_acceptance", code=body, files=files or {}, names=names, check=check)


GPU_ACCEPTANCE = [
    accept("fake-empty", ["--fake", ""], "--fake"),
    accept("fake-case", ["--fake", "HONEST"], "--fake"),
    accept("fake-bogus-with-out", ["--fake", "bogus", "--out", "o.json"], "--fake"),
    accept("out-dir-trailing-slash", ["--fake", "honest", "--out", "d/"], "d", {"d": DIR}),
    accept("out-dir-named-json", ["--fake", "honest", "--out", "d.json"], "d.json", {"d.json": DIR}),
    accept("out-fifo-with-fake", ["--fake", "honest", "--out", "f.json"], "f.json", {"f.json": FIFO},
           check="Path(tmp, 'f.json').is_fifo()"),
    accept("out-symlink-to-dir", ["--out", "o.json"], "symbolic link", {"d": DIR, "o.json": Special("symlink",
                                                                                                    target="d")}),
    accept("out-escape-dir", ["--out", ESC], "a directory", {ESC: DIR}),
    accept("budget-inf", ["--budget", "inf"], "--budget"),
    accept("budget-zero", ["--budget", "0"], "--budget"),
    accept("only-empty", ["--only", ""], "--only"),
]

# -- escape sequences in every name the new options take (the error shows them escaped, never raw) ---------------
EN = "escape-names"
ESCAPES = [
    err(EN, "plan-system", ("plan", M, "--system", ESC, "--train"), "unknown system '\\x1b[31mred"),
    err(EN, "plan-model", ("plan", ESC, "--system", "dgx-h100", "--train"), "red"),
    err(EN, "serve-engine", (*SERVE, "--engine", ESC), "--engine"),
    err(EN, "serve-engine-osc", (*SERVE, "--engine", "\x1b]0;title\x07"), "--engine"),
    err(EN, "serve-scheduler", (*SERVE, "--scheduler", ESC), "--scheduler"),
    err(EN, "serve-moe-load", (*SERVE_MOE, "--moe-load", ESC), "--moe-load"),
    err(EN, "serve-slo", (*SERVE, "--slo", ESC), "--slo"),
    err(EN, "trace-analyses", (*TR, "--analyses", ESC), "--analyses", {"t.json": TRACE}),
    err(EN, "trace-diff-missing", (*TR, "--diff", ESC + ".json"), "red", {"t.json": TRACE}),
    err(EN, "trace-diff-device", (*TR, "--diff", "b.json", "--diff-device", ESC), "red",
        {"t.json": TRACE, "b.json": TRACE}),
    err(EN, "trace-dask", (*TR, "--dask", ESC), "--dask", {"t.json": TRACE}),
    err(EN, "analyze-calibration", ("analyze", "w.json", "--device", "h100", "--forecast", "--calibration",
                                    ESC + ".json"), "red", {"w.json": W}),
    err(EN, "llm-fusions", (*LLM, "--fusions", ESC), "--fusions"),
]

# -- the API boundary on the functions these options reach: each names itself and the parameter at fault ---------
API = "api-boundary"


def api(name: str, body: str, names: str) -> Case:
    return Case(f"r3o/{API}/{name}", API, "api", code="import math, roofline\n" + body, names=names)


API_CASES = [
    api("cost-system-none", "from roofline.engine import collectives\n"
        "collectives.cost('all_reduce', 1e6, None, ranks=8)", "collectives.cost: system"),
    api("cost-system-name", "from roofline.engine import collectives\n"
        "collectives.cost('all_reduce', 1e6, 'dgx-h100', ranks=8)", "collectives.cost: system"),
    api("resolve-system-none", "from roofline.catalog import resolve_system\nresolve_system(None)",
        "resolve_system: spec"),
    api("get-system-devices-huge", "from roofline.catalog import get_system\nget_system('dgx-h100', devices=10**18)",
        "with_devices: devices"),
    api("get-system-both", "from roofline.catalog import get_system\nget_system('dgx-h100', nodes=1, devices=8)",
        "get_system: give nodes or devices"),
    api("measure-callable-flops-raises", "roofline.measure_callable(lambda: None, flops=lambda: 1 / 0, bytes=1)",
        "measure_callable: flops"),
    api("measure-callable-bytes-nan", "roofline.measure_callable(lambda: None, flops=1, bytes=lambda: math.nan)",
        "measure_callable: bytes"),
    api("batching-fifo", "from roofline.serving.config import Batching\nBatching('fifo')", "Batching: scheduler"),
    api("engine-config-bogus", "from roofline.serving.engines import engine_config\nengine_config('sglang')",
        "engine_config: name"),
    api("traffic-isl-negative", "from roofline.serving.requests import Traffic\nTraffic(isl=-1)", "Traffic: isl"),
    api("traffic-osl-float", "from roofline.serving.requests import Traffic\nTraffic(osl=1.5)", "Traffic: osl"),
]

CASES = (API_CASES + PLAN_DEVICES + PLAN_PRECISION + PLAN_LAYOUT + MOE_OPTIONS + SERVE_SCHEDULER + TRACE_DIFF + TRACE_ANALYSES
         + TRACE_JOBS + CALIBRATION_V2 + GPU_ACCEPTANCE + ESCAPES)
