"""Does the trace reader stream a big torch.profiler trace in bounded memory, and place every op?  (a script)

    python benchmarks/bench_trace.py [--size-mb N] [--keep] [--no-analyze]
    python benchmarks/bench_trace.py --ranks 16 [--rank-mb 128]   # many ranks: bench_trace_ranks.py
    python benchmarks/bench_trace.py --analyses [--size-mb 500] [--hta]   # plain vs --analyses all (and HTA)

1. Records a real small trace on this machine's CPU with torch.profiler (``record_shapes=True,
   with_stack=True``) of an inline transformer-style MLP model (LayerNorm -> Linear -> GELU -> Linear,
   residual; a few ms per forward), exported with ``prof.export_chrome_trace``.
2. Builds a synthetic trace of about N MB (default 1024) from it, streamed to a temp dir (never held in
   memory): the top-level keys as kineto writes them (``schemaVersion`` first), the recorded
   ``traceEvents`` repeated ``copies`` times with every timed event's ``ts`` shifted by the recorded span
   per copy (copies never overlap), metadata (``ph == "M"``) events once, one event per line.
3. Reads it in a fresh subprocess (so peak RSS is the reader's own): ``read_trace(path)``, timed, with
   its two stages (``read_events``: the streamed parse; then placing the ops) timed apart; then the
   analysis ``from_trace`` adds on the read workload (``analyze`` under ``xeon-8480``, unless
   ``--no-analyze``).  Peak RSS is the child's ``VmHWM`` (``ru_maxrss`` also counts the parent's RSS
   at fork), reset after ``import roofline, torch``; the baseline is its RSS then, before reading.
4. Checks the big trace against the small one read with ``read_trace``: ops placed and total FLOPs
   must be ``copies`` x the small trace's.

Target: the reader's own memory, its peak RSS growth over the import baseline, < 0.5 x the trace size
(streamed, bounded memory; torch's import alone is about 220 MB whatever the trace).  Temp files are
deleted at the end unless ``--keep``.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trace_common import DEVICE, ROOT, record_small  # noqa: E402  (shared with bench_trace_ranks.py)

CHILD = r'''
import json, resource, sys, time

def rss_now():
    return status("VmRSS")

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0

def peak():  # VmHWM: this process's own peak (ru_maxrss also counts the parent's RSS at fork, kept over exec)
    return status("VmHWM")

import torch  # noqa: F401
import roofline
import roofline.frontends.trace as tr
path, analyze_too = sys.argv[1], sys.argv[2] == "1"
import gc
gc.collect()
out = {"baseline_rss": rss_now(), "baseline_peak": peak(),
       "ru_maxrss_before": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
try:  # reset VmHWM to the current RSS, so the peaks below are the reading's own (Linux >= 4.0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    out["hwm_reset"] = True
except OSError:
    out["hwm_reset"] = False
stage = {}
real_read_events = tr.read_events

def timed_read_events(p):  # read_trace's first stage, timed apart (read_trace looks it up in its module)
    t = time.perf_counter()
    ev = real_read_events(p)
    stage["events_s"] = time.perf_counter() - t
    stage["events_peak"] = peak()
    stage["events_rss"] = rss_now()
    stage["events_kept"] = len(ev)
    stage["events_seen"] = ev.events_seen
    stage["calls"] = len(ev.calls)
    return ev

tr.read_events = timed_read_events
t = time.perf_counter()
w = tr.read_trace(path)
out["read_s"] = time.perf_counter() - t
out["read_peak"] = peak()
out["read_rss"] = rss_now()
out.update(stage)
out["ops"] = len(w)
out["flops"] = float(w.total_flops)
if analyze_too:
    from roofline.engine.analysis import analyze
    from roofline.bench.resolve import resolve_device
    t = time.perf_counter()
    tol = w.measured.ops.tolerance() if w.measured and w.measured.ops is not None else 0.1
    a = analyze(w, resolve_device(sys.argv[3]), above_roof_tolerance=tol, forecast=True)  # what from_trace does
    out["analyze_s"] = time.perf_counter() - t
    out["analyze_peak"] = peak()
out["ru_maxrss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print("RESULT " + json.dumps(out))
'''


def build_big(small: Path, big: Path, size_mb: float) -> dict[str, Any]:
    """Stream a ~size_mb trace to ``big``: ``small``'s timed events repeated, ts shifted by its span per copy."""
    doc = json.loads(small.read_text())
    order = list(doc)  # the recorded key order: kineto writes schemaVersion first, traceEvents near the end
    events = doc.pop("traceEvents")
    meta_events = [e for e in events if e.get("ph") == "M"]
    timed = [e for e in events if e.get("ph") != "M"]
    starts = [e["ts"] for e in timed if isinstance(e.get("ts"), (int, float))]
    ends = [e["ts"] + (e.get("dur") or 0) for e in timed if isinstance(e.get("ts"), (int, float))]
    t0, t1 = min(starts), max(ends)
    shift = float(int(t1 - t0) + 10)  # whole microseconds: every copy starts 10+ us after the last one ends
    # each timed event as its json.dumps text split around ts, so a copy only formats the shifted number
    sentinel = "\x00TS\x00"
    templates: list[tuple[str, str, float] | tuple[str]] = []
    for e in timed:
        if isinstance(e.get("ts"), (int, float)):
            text = json.dumps({**e, "ts": sentinel})
            head, tail = text.split(json.dumps(sentinel))
            templates.append((head, tail, float(e["ts"])))
        else:
            templates.append((json.dumps(e),))
    meta_text = [json.dumps(e) for e in meta_events]

    def one_copy(off: float) -> str:
        return ",\n".join(t[0] + json.dumps(t[2] + off) + t[1] if len(t) == 3 else t[0] for t in templates)

    copy_bytes = len(one_copy(0.0).encode()) + 2  # one copy as written, with its ',\n'
    copies = max(1, round(size_mb * (1 << 20) / copy_bytes))
    at = order.index("traceEvents")
    keys, before, after = list(doc), order[:at], order[at + 1:]
    with open(big, "w", encoding="utf-8", buffering=1 << 20) as f:
        f.write("{\n")
        for k in before:
            f.write(f"  {json.dumps(k)}: {json.dumps(doc[k])},\n")
        f.write('  "traceEvents": [\n')
        first = True
        for text in meta_text:
            f.write(text if first else ",\n" + text)
            first = False
        for c in range(copies):
            body = one_copy(c * shift)
            f.write(body if first else ",\n" + body)
            first = False
        f.write("\n  ]")
        for k in after:
            f.write(f",\n  {json.dumps(k)}: {json.dumps(doc[k])}")
        f.write("\n}\n")
    return {"copies": copies, "events": len(meta_events) + copies * len(timed), "per_copy": len(timed),
            "meta": len(meta_events), "span_us": t1 - t0, "shift_us": shift, "keys": keys}


def run_child(path: Path, analyze_too: bool) -> dict[str, Any]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), "1" if analyze_too else "0", DEVICE],
                         capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - t
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if out.returncode != 0 or line is None:
        sys.exit(f"the reader process failed (rc {out.returncode}):\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}")
    res = json.loads(line.removeprefix("RESULT "))
    res["child_wall_s"] = wall
    return res


def main() -> None:
    if "--ranks" in sys.argv[1:]:  # the many-rank benchmark (--jobs 1 / --jobs 2 / --dask local)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_trace_ranks import main as ranks_main

        ranks_main(sys.argv[1:])
        return
    if "--analyses" in sys.argv[1:]:  # issue 51: a GPU trace read plain and with every analysis (wall, CPU, peak)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_trace_hta import main as analyses_main

        rest = [a for a in sys.argv[1:] if a not in ("--analyses", "--hta")]
        with_hta = "--hta" in sys.argv[1:]  # HTA beside it too (else bench_trace_hta.py --no-hta)
        sys.argv = [sys.argv[0], *rest, *([] if with_hta else ["--no-hta"])]
        analyses_main()
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1024.0, help="size of the synthetic trace (default 1024)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir with both traces")
    ap.add_argument("--no-analyze", action="store_true", help="skip the analysis step after read_trace")
    ap.add_argument("--dir", default=None, help="where to make the temp dir (default: the system's temp dir)")
    args = ap.parse_args()

    sys.path.insert(0, str(ROOT / "src"))
    from roofline.frontends.trace import read_trace

    tmp = Path(tempfile.mkdtemp(prefix="bench_trace_", dir=args.dir))
    free = shutil.disk_usage(tmp).free
    if free < 1.5 * args.size_mb * (1 << 20):
        sys.exit(f"only {free / (1 << 30):.1f} GB free in {tmp.parent}: use a smaller --size-mb")
    try:
        small, big = tmp / "small.json", tmp / "big.json"
        t = time.perf_counter()
        record_small(small)
        rec_s = time.perf_counter() - t
        ws = read_trace(small)
        print(f"small trace: {small.stat().st_size / 1e6:.2f} MB, recorded in {rec_s:.1f} s; "
              f"{len(ws)} ops, {ws.total_flops:.4g} FLOPs")
        t = time.perf_counter()
        info = build_big(small, big, args.size_mb)
        build_s = time.perf_counter() - t
        size = big.stat().st_size
        print(f"big trace: {size / (1 << 20):.1f} MB, {info['copies']} copies of {info['per_copy']} timed events "
              f"(+{info['meta']} metadata), span {info['span_us']:.0f} us, shift {info['shift_us']:.0f} us per copy; "
              f"written in {build_s:.1f} s to {big}")
        print(f"top-level keys: {', '.join(info['keys'])}")
        r = run_child(big, not args.no_analyze)
        copies = info["copies"]
        ops_ok = r["ops"] == copies * len(ws)
        want_flops = copies * ws.total_flops
        flops_ok = abs(r["flops"] - want_flops) <= 1e-9 * max(1.0, want_flops)
        mb = 1 << 20
        size_mb = size / mb
        rows: list[tuple[str, str, str, str]] = [
            ("trace size [MB]", f"{size_mb:.1f}", "", ""),
            ("events in the trace", f"{r['events_seen']:.3g}", f"{info['events']:.3g}",
             "yes" if r["events_seen"] == info["events"] else "NO"),
            ("events kept (columns)", f"{r['events_kept']:.3g}", "", ""),
            ("distinct argument lists kept", f"{r['calls']}", "", ""),
            ("read_trace wall [s]", f"{r['read_s']:.1f}", "", ""),
            ("  read_events (streamed parse) [s]", f"{r['events_s']:.1f}", "", ""),
            ("  placing ops [s]", f"{r['read_s'] - r['events_s']:.1f}", "", ""),
            ("events per second (read_trace)", f"{r['events_seen'] / r['read_s']:.0f}", "", ""),
            ("MB per second (read_trace)", f"{size_mb / r['read_s']:.1f}", "", ""),
        ]
        if "analyze_s" in r:
            rows.append((f"analyze under {DEVICE} (from_trace's rest) [s]", f"{r['analyze_s']:.1f}", "", ""))
        peak = max(r["baseline_peak"], r["read_peak"])
        rows += [
            ("baseline RSS after import roofline, torch [MB]", f"{r['baseline_rss'] / mb:.0f}", "", ""),
            ("peak RSS up to then (imports) [MB]", f"{r['baseline_peak'] / mb:.0f}", "", ""),
            ("RSS held after read_events [MB]", f"{r['events_rss'] / mb:.0f}", "", ""),
            ("peak RSS of the reader process, imports included [MB]", f"{peak / mb:.0f}", "", ""),
            ("RSS growth over baseline: peak in read_trace [MB]", f"{(r['read_peak'] - r['baseline_rss']) / mb:.0f}",
             f"< {0.5 * size_mb:.0f}", "yes" if r["read_peak"] - r["baseline_rss"] < 0.5 * size else "NO"),
            ("  in read_events alone (peak) [MB]", f"{(r['events_peak'] - r['baseline_rss']) / mb:.0f}", "", ""),
            ("  held after read_events, per M events [MB]",
             f"{(r['events_rss'] - r['baseline_rss']) / mb / (r['events_seen'] / 1e6):.1f}", "", ""),
        ]
        if "analyze_peak" in r:
            rows.append(("  peak incl. the analysis [MB]", f"{(r['analyze_peak'] - r['baseline_rss']) / mb:.0f}",
                         "", ""))
        rows += [
            ("ops placed (= copies x small)", f"{r['ops']}", f"{copies} x {len(ws)}", "yes" if ops_ok else "NO"),
            ("FLOPs (= copies x small)", f"{r['flops']:.6g}", f"{want_flops:.6g}", "yes" if flops_ok else "NO"),
        ]
        print()
        print(f"{'figure':56} {'value':>10} {'target':>14}  ok")
        for label, value, target, ok in rows:
            print(f"{label:56} {value:>10} {target:>14}  {ok}")
        if not r.get("hwm_reset"):
            print("note: /proc/self/clear_refs not writable: the read_trace peaks include the import peak")
        print(f"ru_maxrss of the reader process (counts the parent's RSS at fork): {r['ru_maxrss'] / mb:.0f} MB")
        print(f"\nreader process wall incl. imports: {r['child_wall_s']:.1f} s; load average (1 min): "
              f"{os.getloadavg()[0]:.2f}")
    finally:
        if args.keep:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
