"""A trace of 250,000 distinct aten shapes (issue 53, class 1): the meta route against the closed form, side by side.

    python benchmarks/bench_trace_shapes.py [--calls 250000] [--mixed 0.25] [--timeout 60]

Writes the hostile trace with tests/trace_shapes_calls.py (one top-level CPU op per call, every call's recorded
arguments distinct, drawn over the 17 op groups the closed form covers; about 50 MB), and a mixed one where a
share of the calls are ops left to the meta route (group norm, upsampling, max pooling, roll).  Each route reads
each file in a fresh process (``roofline.read_trace``, what ``roofline trace`` runs first):

* ``meta, no limit``: every call rebuilt on meta tensors, ROOFLINE_MAX_TRACE_CALLS set past the calls (the
  reader before the closed form); killed at ``--timeout`` seconds;
* ``meta, limit``: the same with the default limit of 30,000 rebuilds: the rest left unplaced;
* ``closed form``: the default reader (closed form, the meta route for the rest, the same limit).

Printed per run: wall seconds of the process (interpreter and imports included), its CPU seconds, its peak
resident MiB, the share of op time placed, and the calls by route.  The machine is shared: quote medians of a
few runs.  The trace files are deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trace_common import ROOT, load_line  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
import trace_shapes_calls  # noqa: E402

CHILD = """
import functools, json, resource, sys, time
import roofline.frontends.trace.placer as placer
from roofline.frontends.trace.replay import Replayer
from roofline.frontends.trace import read_trace
seen = {}
class Counted(Replayer):
    def __init__(self):
        super().__init__(closed_form=sys.argv[2] == "closed")
        seen["r"] = self
placer.Replayer = Counted
t = time.perf_counter()
w = read_trace(sys.argv[1])
rec = w.trace
ru = resource.getrusage(resource.RUSAGE_SELF)
print("RESULT " + json.dumps({"read": time.perf_counter() - t, "cpu": ru.ru_utime + ru.ru_stime,
      "peak": ru.ru_maxrss / 1024, "placed": rec.op_seconds / rec.trace_seconds, "ops": len(w),
      "calls": seen["r"].calls}))
"""


def run(path: Path, route: str, limit: str | None, timeout: float) -> dict[str, object]:
    """One read in a fresh process; its figures, or {'killed': wall} past ``timeout``."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=str(ROOT / "src"))
    env.pop("ROOFLINE_MAX_TRACE_CALLS", None)
    if limit is not None:
        env["ROOFLINE_MAX_TRACE_CALLS"] = limit
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path), route], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"killed": time.perf_counter() - t}
    wall = time.perf_counter() - t
    line = next((ln for ln in out.splitlines() if ln.startswith("RESULT ")), None)
    if proc.returncode or line is None:
        raise SystemExit(f"bench_trace_shapes: {route} on {path.name} exited {proc.returncode}: {err.strip()[-500:]}")
    return {"wall": wall, **json.loads(line[7:])}


def row(label: str, r: dict[str, object]) -> str:
    if "killed" in r:
        return f"{label:34} {'killed past ' + format(float(r['killed']), '.0f') + ' s':>14}"
    calls = r["calls"]
    assert isinstance(calls, dict)
    return (f"{label:34} {r['wall']:8.1f} {r['cpu']:8.1f} {r['peak']:8.0f} {100 * float(r['placed']):8.1f} "  # type: ignore[str-format]
            f"{calls['closed form']:>9,} {calls['meta']:>8,} {calls['past the limit']:>9,}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=250_000)
    ap.add_argument("--mixed", type=float, default=0.25, help="share of the mixed trace's calls left to meta")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench_shapes_", dir=args.dir))
    try:
        files = {"closed-form ops": tmp / "shapes.json", f"mixed ({args.mixed:.0%} other ops)": tmp / "mixed.json"}
        sizes = {label: trace_shapes_calls.write_trace(path, args.calls, seed=0,
                                                        other=args.mixed if "mixed" in label else 0.0)
                 for label, path in files.items()}
        print(f"{'trace / route':34} {'wall s':>8} {'CPU s':>8} {'peak MiB':>8} {'% placed':>8} "
              f"{'closed':>9} {'meta':>8} {'past lim':>9}")
        for label, path in files.items():
            print(f"{label}: {args.calls:,} distinct calls, {sizes[label] / 1e6:.1f} MB")
            print(row("  meta, no limit", run(path, "meta", str(10**9), args.timeout)))
            print(row("  meta, limit 30,000", run(path, "meta", None, args.timeout)))
            print(row("  closed form (+ meta), limit", run(path, "closed", None, args.timeout)))
        print(load_line(load0))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
