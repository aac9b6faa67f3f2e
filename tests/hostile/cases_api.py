"""The Python API's boundary, the network bench's arguments and environment, and values that were accepted
although wrong (issue 33).

Classes: ``api-boundary`` (every public function in ``roofline.__all__``, a wrong type and a wrong value:
one :class:`~roofline.RooflineError` naming the parameter and what it accepts; a string where a string is
natural works), ``network-bench`` (``python -m roofline.commands.bench_network`` / ``roofline.bench.network``:
every argument or environment fault is one ``roofline: error:`` line, before torch.distributed starts), and
``bad-values`` (values that used to be accepted, names too long for the OS, ONNX nodes without what they need,
a user formula that raises).
"""

from __future__ import annotations

import json
from typing import Any

from hostile.harness import Case

W = ("from roofline import Workload, Op\n"
     "w = Workload.from_ops([Op('a', kind='matmul', flops=1e9, bytes_read=1e6, bytes_written=1e6)])\n")


def api(name: str, body: str, names: str, expect: str = "error", files: dict[str, Any] | None = None,
        check: str = "") -> Case:
    return Case(f"api/{name}", "api-boundary", "api", code="import roofline\n" + W + body, files=files or {},
                names=names, expect=expect, check=check)


API_BOUNDARY = [
    api("analyze-device-string", "a = roofline.analyze(w, 'h100')\nassert a.total_time > 0", "", expect="ok"),
    api("analyze-device-int", "roofline.analyze(w, 7)", "device"),
    api("analyze-device-unknown", "roofline.analyze(w, 'h1000')", "h1000"),
    api("analyze-workload-string", "roofline.analyze('w.json', 'h100')", "workload"),
    api("analyze-tolerance-string", "roofline.analyze(w, 'h100', above_roof_tolerance='x')", "above_roof_tolerance"),
    api("analyze-tolerance-negative", "roofline.analyze(w, 'h100', above_roof_tolerance=-1)", "above_roof_tolerance"),
    api("analyze-forecast-string", "roofline.analyze(w, 'h100', forecast='yes')", "forecast"),
    api("compare-none", "roofline.compare(None, ['h100'])", "workload"),
    api("compare-devices-none", "roofline.compare(w, None)", "devices"),
    api("compare-devices-strings", "rows = roofline.compare(w, ['h100', 'a100'])\nassert len(rows) == 2", "",
        expect="ok"),
    api("compare-devices-empty", "roofline.compare(w, [])", "devices"),
    api("compare-precisions-int", "roofline.compare(w, ['h100'], precisions=5)", "precisions"),
    api("serve-tp-string", "roofline.serve('llama-2-7b', 'h100', tp='8')", "tp"),
    api("serve-rate-zero", "roofline.serve('llama-2-7b', 'h100', traffic=roofline.Traffic(rate=0))", "rate"),
    api("serve-traffic-dict", "roofline.serve('llama-2-7b', 'h100', traffic={'rate': 1})", "traffic"),
    api("serve-config-dict", "roofline.serve('llama-2-7b', 'h100', config={'exact': True})", "config"),
    api("serve-config-max-batch-zero", "from roofline.serving.config import Batching\nBatching(max_batch=0)",
        "max_batch"),
    api("serve-scheduler-unknown", "from roofline.serving.config import Batching\nBatching('fifo')", "fifo"),
    api("serve-device-int", "roofline.serve('llama-2-7b', 7)", "device"),
    api("get-system-int", "roofline.get_system(7)", "name"),
    api("get-system-nodes-string", "roofline.get_system('dgx-h100', nodes='2')", "nodes"),
    api("get-system-nodes-zero", "roofline.get_system('dgx-h100', nodes=0)", "nodes"),
    api("get-device-none", "roofline.get_device(None)", "name"),
    api("get-device-unknown", "roofline.get_device('zz-no-such')", "zz-no-such"),
    api("device-int", "roofline.device(7)", "name"),
    api("device-empty", "roofline.device('')", "name"),
    api("from-trace-bytes", "roofline.from_trace(b'path', 'h100')", "paths"),
    api("from-trace-device-int", "roofline.from_trace('t.json', 5)", "device"),
    api("from-trace-empty-list", "roofline.from_trace([], 'h100')", "paths"),
    api("read-trace-int", "roofline.read_trace(7)", "path"),
    api("read-trace-empty-path", "roofline.read_trace('  ')", "path"),
    api("read-traces-jobs-zero", "roofline.read_traces(['a.json'], jobs=0)", "jobs"),
    api("read-traces-bytes", "roofline.read_traces(b'a.json')", "paths"),
    api("from-onnx-float-shape", "roofline.from_onnx('m.onnx', {'x': 3.0})", "input_shapes"),
    api("from-onnx-int-model", "roofline.from_onnx(7)", "model"),
    api("from-onnx-default-dim-zero", "roofline.from_onnx('m.onnx', default_dim=0)", "default_dim"),
    api("measure-callable-flops-string", "roofline.measure_callable(lambda: None, flops='abc', bytes=1, "
        "device='h100')", "flops"),
    api("measure-callable-bytes-negative", "roofline.measure_callable(lambda: None, flops=1, bytes=-1, "
        "device='h100')", "bytes"),
    api("measure-callable-fn-not-callable", "roofline.measure_callable(5, flops=1, bytes=1, device='h100')", "fn"),
    api("measure-callable-repeats-zero", "roofline.measure_callable(lambda: None, flops=1, bytes=1, device='h100', "
        "repeats=0)", "repeats"),
    api("kernel-flops-string", "roofline.kernel('abc', 1)", "flops"),
    api("kernel-kind-unknown", "roofline.kernel(1, 1, kind='bogus')", "kind"),
    api("measure-model-string", "roofline.measure('model', device='h100')", "model"),
    api("measure-repeats-string", "import torch\nroofline.measure(torch.nn.Linear(2, 2), torch.ones(1, 2), "
        "device='h100', repeats='3')", "repeats"),
    api("from-llm-phase-bogus", "roofline.from_llm('llama-2-7b', phase='bogus')", "phase"),
    api("from-llm-name-int", "roofline.from_llm(7)", "name_or_config"),
    api("from-llm-batch-string", "roofline.from_llm('llama-2-7b', batch='8')", "batch"),
    api("from-llm-tp-float", "roofline.from_llm('llama-2-7b', tp=2.5)", "tp"),
    api("from-hf-config-int", "roofline.from_hf_config(7)", "config"),
    api("from-hf-config-phase-bogus", "roofline.from_hf_config({'model_type': 'llama'}, phase='bogus')", "phase"),
    api("from-torch-string", "roofline.from_torch('model')", "model"),
    api("from-torch-mode-bogus", "import torch\nroofline.from_torch(torch.nn.Linear(2, 2), torch.ones(1, 2), "
        "mode='bogus')", "mode"),
    api("run-bench-quick-string", "roofline.run_bench(quick='yes')", "quick"),
    api("run-bench-threads-zero", "roofline.run_bench(threads=0)", "threads"),
    api("resolve-device-int", "roofline.resolve_device(3.5)", "spec"),
    api("resolve-device-empty", "roofline.resolve_device('')", "spec"),
    api("plot-string", "roofline.plot('h100')", "subject"),
    api("plot-max-labels-negative", "roofline.plot(roofline.analyze(w, 'h100'), max_labels=-1)", "max_labels"),
    api("advise-none", "roofline.advise(None)", "analysis"),
    api("advise-top-zero", "roofline.advise(roofline.analyze(w, 'h100'), top=0)", "top"),
    api("summarize-workload", "roofline.summarize(w)", "a"),
    api("summarize-advice-string", "roofline.summarize(roofline.analyze(w, 'h100'), advice='all')", "advice"),
    api("headline-none", "roofline.headline(None)", "s"),
    api("headline-shown-not-callable", "roofline.headline(roofline.summarize(roofline.analyze(w, 'h100')), "
        "shown=5)", "shown"),
    # catalog_devices() takes no argument (nothing to check: Python's own TypeError names the call)
    api("catalog-devices-works", "assert len(roofline.catalog_devices()) > 5", "", expect="ok"),
    api("workload-from-ops-int", "roofline.Workload.from_ops(5)", "ops"),
    api("op-flops-string", "roofline.Op('a', flops='x')", "flops"),
    api("device-simple-peak-none", "roofline.Device.simple('d', peak=None, bandwidth='1 GB/s')", "peak"),
    api("collectives-ranks-float", "from roofline import collectives\n"
        "collectives.cost('all_reduce', 1e6, roofline.get_system('dgx-h100'), ranks=2.5)", "ranks"),
    api("collectives-ranks-string", "from roofline import collectives\n"
        "collectives.cost('all_reduce', 1e6, roofline.get_system('dgx-h100'), ranks='8')", "ranks"),
    api("collectives-message-nan", "from roofline import collectives\n"
        "collectives.cost('all_reduce', float('nan'), roofline.get_system('dgx-h100'), ranks=8)", "message"),
]


def net(name: str, env: dict[str, str], argv: tuple[str, ...] = ("--device", "h100"), names: str = "",
        module: str = "roofline.commands.bench_network") -> Case:
    code = ("import os, sys, runpy\n"
            "for k in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT'):\n"
            "    os.environ.pop(k, None)\n"
            f"os.environ.update({env!r})\n"
            f"sys.argv = [{module!r}, *{list(argv)!r}]\n"
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n")
    return Case(f"network/{name}", "network-bench", "api", code=code, names=names)


NETWORK_BENCH = [
    net("rank-abc", {"RANK": "abc", "WORLD_SIZE": "2"}, names="RANK"),
    net("rank-negative", {"RANK": "-1", "WORLD_SIZE": "2"}, names="RANK"),
    net("rank-not-below-world", {"RANK": "2", "WORLD_SIZE": "2"}, names="RANK"),
    net("world-size-zero", {"RANK": "0", "WORLD_SIZE": "0"}, names="WORLD_SIZE"),
    net("world-size-text", {"RANK": "0", "WORLD_SIZE": "two"}, names="WORLD_SIZE"),
    net("local-rank-abc", {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "x"}, names="LOCAL_RANK"),
    net("local-world-size-zero", {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "0"}, names="LOCAL_WORLD_SIZE"),
    net("local-world-not-dividing", {"RANK": "0", "WORLD_SIZE": "3", "LOCAL_WORLD_SIZE": "2"},
        names="LOCAL_WORLD_SIZE"),
    net("master-port-99999", {"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "99999"}, names="MASTER_PORT"),
    net("master-port-text", {"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "http"}, names="MASTER_PORT"),
    net("master-addr-control", {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "a\x1b[2Jb"}, names="MASTER_ADDR"),
    net("master-addr-empty", {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": " "}, names="MASTER_ADDR"),
    net("argparse-unknown-option", {}, ("--bogus",), names="--bogus"),
    net("argparse-repeats-text", {}, ("--repeats", "x"), names="--repeats"),
    net("argparse-timeout-text", {}, ("--timeout", "soon"), names="--timeout"),
    net("argparse-backend-mpi", {}, ("--backend", "mpi"), names="--backend"),
    net("argparse-help-is-fine", {}, ("--bogus", "\x1b[2J"), names="--bogus"),
    net("timeout-inf", {}, ("--timeout", "inf"), names="--timeout"),
    net("bench-network-module-unknown-option", {}, ("--bogus",), names="--bogus", module="roofline.bench.network"),
    net("bench-network-module-rank-abc", {"RANK": "abc", "WORLD_SIZE": "2"}, names="RANK",
        module="roofline.bench.network"),
]

CONFIG = {"model_type": "llama", "hidden_size": 512, "intermediate_size": 1024, "num_attention_heads": 8,
          "num_hidden_layers": 2, "num_key_value_heads": 8, "vocab_size": 1000, "max_position_embeddings": 2048}
MOE = {**CONFIG, "model_type": "mixtral", "num_local_experts": 0, "num_experts_per_tok": 2}


def bad(name: str, argv: tuple[str, ...], names: str, files: dict[str, Any] | None = None, code: str = "") -> Case:
    if code:
        return Case(f"values/{name}", "bad-values", "api", code=code, files=files or {}, names=names)
    return Case(f"values/{name}", "bad-values", argv[0], argv, files=files or {}, names=names)


def _onnx() -> dict[str, bytes]:
    from onnx import TensorProto as TP
    from onnx import helper as h

    def model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any] | None = None,
              opset: int = 17, ms: bool = False) -> bytes:
        ops = [h.make_opsetid("", opset)] + ([h.make_opsetid("com.microsoft", 1)] if ms else [])
        g = h.make_graph(nodes, "g", inputs, outputs, initializer=inits or [])
        return h.make_model(g, opset_imports=ops).SerializeToString()

    f = TP.FLOAT
    x2 = h.make_tensor_value_info("x", f, [4, 8])
    y = h.make_tensor_value_info("y", f, None)
    long_ext = h.make_tensor("w", f, [8, 8], vals=[0.0] * 64)
    del long_ext.float_data[:]
    long_ext.data_location = TP.EXTERNAL
    long_ext.external_data.add(key="location", value="x" * 130_000)
    return {
        "matmulnbits-no-k": model([h.make_node("MatMulNBits", ["x", "b", "s"], ["y"], domain="com.microsoft",
                                               N=8, bits=4, block_size=32)],
                                  [x2, h.make_tensor_value_info("b", TP.UINT8, [8, 1, 16]),
                                   h.make_tensor_value_info("s", f, [8])], [y], ms=True),
        "rnn-rank-2": model([h.make_node("RNN", ["x", "W", "R"], ["y"], hidden_size=4)],
                            [x2, h.make_tensor_value_info("W", f, [1, 4, 8]),
                             h.make_tensor_value_info("R", f, [1, 4, 4])], [y]),
        "attention-2d": model([h.make_node("Attention", ["x", "wq", "bq"], ["y"], domain="com.microsoft",
                                           num_heads=2)],
                              [x2, h.make_tensor_value_info("wq", f, [8, 24]), h.make_tensor_value_info("bq", f, [24])],
                              [y], ms=True),
        "external-data-long-name": model([h.make_node("MatMul", ["x", "w"], ["y"])], [x2], [y], [long_ext]),
    }


ONNX = _onnx()


def onnx_bad(name: str, names: str) -> Case:
    return Case(f"values/onnx-{name}", "bad-values", "onnx", ("onnx", "m.onnx", "--device", "h100"),
                files={"m.onnx": ONNX[name]}, names=names)


RAISING_FORMULA = (
    "import json, roofline\nfrom roofline import costs\n"
    "def boom(inputs, outputs):\n    raise ZeroDivisionError('user formula')\n"
    "costs.register_op('torch', 'aten.mm', boom, override=True)\n"
    "ev = {'ph': 'X', 'cat': 'cpu_op', 'name': 'aten::mm', 'pid': 1, 'tid': 1, 'ts': 1.0, 'dur': 5.0, 'args': {\n"
    "    'Input type': ['float', 'float'], 'Input Dims': [[8, 16], [16, 4]], 'Concrete Inputs': ['', '']}}\n"
    "with open('{tmp}/t.json', 'w') as f:\n    f.write(json.dumps({'schemaVersion': 1, 'traceEvents': [ev]}))\n"
    "try:\n    roofline.from_trace('{tmp}/t.json', 'h100')\nfinally:\n    import os; os.unlink('{tmp}/t.json')\n")

BAD_VALUES = [
    bad("plan-price-inf", ("plan", "llama-2-7b", "--system", "dgx-h100", "--serve", "--price", "inf"), "--price"),
    bad("plan-price-nan", ("plan", "llama-2-7b", "--system", "dgx-h100", "--serve", "--price", "nan"), "--price"),
    bad("plan-price-negative", ("plan", "llama-2-7b", "--system", "dgx-h100", "--serve", "--price", "-2"), "--price"),
    bad("plan-price-1e308", ("plan", "llama-2-7b", "--system", "dgx-h100", "--serve", "--price", "1e308"), "--price"),
    bad("moe-zero-experts-top-2", ("llm", "config.json", "--device", "h100"), "num_local_experts",
        {"config.json": json.dumps(MOE)}),
    bad("moe-top-k-above-experts", ("llm", "config.json", "--device", "h100"), "num_experts_per_tok",
        {"config.json": json.dumps({**MOE, "num_local_experts": 4, "num_experts_per_tok": 8})}),
    bad("moe-zero-experts-plan", ("plan", "config.json", "--system", "dgx-h100", "--serve"), "num_local_experts",
        {"config.json": json.dumps(MOE)}),
    bad("model-name-130000-chars", ("llm", "x" * 130_000, "--device", "h100"), "unknown model"),
    bad("model-name-130000-chars-plan", ("plan", "y" * 130_000, "--system", "dgx-h100", "--serve"), "unknown model"),
    bad("device-name-130000-chars", ("analyze", "w.json", "--device", "z" * 130_000), "z" * 20,
        {"w.json": json.dumps({"schema": "roofline.workload/1", "title": "w", "ops": [
            {"name": "a", "flops": 1, "bytes_read": 1, "bytes_written": 1}]})}),
    onnx_bad("matmulnbits-no-k", "K"),
    onnx_bad("rnn-rank-2", "unknown shapes"),
    onnx_bad("attention-2d", "Attention"),
    Case("values/onnx-external-data-long-name", "bad-values", "onnx", ("onnx", "m.onnx", "--device", "h100"),
         files={"m.onnx": ONNX["external-data-long-name"]}, expect="ok", check="'external data' in out + err"),
    bad("user-formula-raises-from-trace", (), "aten.mm", code=RAISING_FORMULA),
    bad("from-llm-phase-bogus-cli", ("llm", "llama-2-7b", "--device", "h100", "--phase", "bogus"), "--phase"),
    bad("csv-count-empty", ("analyze", "w.csv", "--device", "h100"), "count",
        {"w.csv": "name,kind,flops,bytes_read,bytes_written,count\na,matmul,1e9,1e6,1e6,\n"}),
    bad("csv-count-blank-spaces", ("analyze", "w.csv", "--device", "h100"), "count",
        {"w.csv": "name,kind,flops,bytes_read,bytes_written,count\na,matmul,1e9,1e6,1e6,  \n"}),
    bad("csv-flops-empty", ("analyze", "w.csv", "--device", "h100"), "flops",
        {"w.csv": "name,kind,flops,bytes_read,bytes_written,count\na,matmul,,1e6,1e6,1\n"}),
]

CASES = API_BOUNDARY + NETWORK_BENCH + BAD_VALUES
