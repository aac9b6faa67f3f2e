"""Every count, before and after a refactor: FLOPs and bytes per op of fixed workloads, written or compared.

Workloads: the nine light ONNX graphs shipped with onnx, ResNet-50 / a small CNN /
a transformer block / a linear stack through the PyTorch frontend (forward, and
training for two), and every bundled LLM config in prefill, decode and generate at
three precision mixes plus tp=2, flash and MoE routings.  Per op it records name,
group, kind, precision, unit, count, FLOPs, bytes read/written, weight bytes.

    python benchmarks/check_counts.py write counts.json     # on the old commit
    python benchmarks/check_counts.py check counts.json     # on the new one: exit 1 on any difference

Prints a table: source, workloads, ops, and the number that differ.
"""

from __future__ import annotations

import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))


def _rows(w) -> list[list]:
    cols = ("name", "group", "kind", "precision", "unit", "count", "flops", "bytes_read", "bytes_written",
            "weight_bytes")
    return [[str(o.name), str(o.group), o.kind, o.precision, o.unit, float(o.count), float(o.flops),
             float(o.bytes_read), float(o.bytes_written), float(o.weight_bytes)] for o in w] + [list(cols)]


def workloads() -> dict[str, dict[str, list]]:
    import models
    import onnx

    from roofline import from_llm, from_onnx, from_torch
    from roofline.llm.config import list_models

    out: dict[str, dict[str, list]] = {"onnx": {}, "torch": {}, "llm": {}}
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    for path in sorted(glob.glob(os.path.join(light, "*.onnx"))):
        out["onnx"][os.path.basename(path)] = _rows(from_onnx(path))
    for name, make in (("resnet50", models.resnet50), ("small_cnn", models.small_cnn),
                       ("transformer_block", models.transformer_block), ("linear_stack", models.linear_stack)):
        model, args = make()
        out["torch"][name] = _rows(from_torch(model, *args))
        if name in ("small_cnn", "transformer_block"):
            out["torch"][name + " train"] = _rows(from_torch(model, *args, mode="training"))
    for m in list_models():
        n = m["name"]
        for phase in ("prefill", "decode", "generate"):
            for bits in ((16, 16, 16), (4, 16, 8), (8, 8, 8)):
                w = from_llm(n, phase=phase, batch=4, prompt=256, gen=32, wbits=bits[0], abits=bits[1], kvbits=bits[2])
                out["llm"][f"{n} {phase} {bits}"] = _rows(w)
        out["llm"][f"{n} tp2 flash"] = _rows(from_llm(n, phase="generate", tp=2, flash=True, prompt=128, gen=8))
        out["llm"][f"{n} worst"] = _rows(from_llm(n, phase="decode", batch=16, moe_routing="worst"))
    return out


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        print(__doc__)
        return 2
    got = workloads()
    if sys.argv[1] == "write":
        with open(sys.argv[2], "w") as f:
            json.dump(got, f)
        print(f"wrote {sum(len(v) for v in got.values())} workloads to {sys.argv[2]}")
        return 0
    with open(sys.argv[2]) as f:
        want = json.load(f)
    print(f"{'source':8} {'workloads':>9} {'ops':>9} {'differ':>7}")
    bad = 0
    for src in want:
        names = sorted(set(want[src]) | set(got[src]))
        differ = [n for n in names if want[src].get(n) != json.loads(json.dumps(got[src].get(n)))]
        ops = sum(len(v) - 1 for v in got[src].values())
        print(f"{src:8} {len(names):>9} {ops:>9} {len(differ):>7}")
        for n in differ[:5]:
            a, b = want[src].get(n) or [], json.loads(json.dumps(got[src].get(n))) or []
            first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            print(f"  {n}: {len(a)} vs {len(b)} rows; first difference at row {first}: "
                  f"{a[first] if first < len(a) else None} -> {b[first] if first < len(b) else None}")
        bad += len(differ)
    print("identical" if not bad else f"{bad} workloads differ")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
