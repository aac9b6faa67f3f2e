"""Many ranks: ``roofline trace 'dir/rank*.json'`` with --jobs 1, --jobs 2 and --dask local, on synthetic ranks.

    python benchmarks/bench_trace_ranks.py [--ranks 16] [--rank-mb 128] [--straggler 5] [--no-dask] [--repeat 3]
    python benchmarks/bench_trace.py --ranks 16 --rank-mb 32          # the same, from bench_trace.py

1. Records one real CPU trace here (_trace_common.record_small: torch.profiler, ``record_shapes=True,
   with_stack=True``).
2. Writes ``--ranks`` rank traces of about ``--rank-mb`` MB each from it: the recorded events repeated, each
   copy one ``ProfilerStep#N`` (a ``user_annotation`` spanning the copy), ``distributedInfo`` naming the
   rank and world size.  Per-rank jitter: rank r's timeline (every ts offset and dur within a copy) is
   scaled by 1 + 0.01 x (r mod 3) (1 or 2% slower: nesting is kept, as a uniformly slower core keeps it);
   the straggler's by 1.30 (every op 30% slower: the cause the view must name is "slower ops").
3. Runs ``roofline trace 'DIR/rank*.json' --device xeon-8480 --json OUT`` three ways, each in a fresh
   process, timed by wall clock (interpreter and imports included: the same in each).  A sampler thread reads
   ``VmHWM`` (a process's own peak RSS) of the command's process and of every process below it (pool
   workers, Dask's nanny and worker processes) every 0.1 s: the driver's peak and each worker's (the
   multiprocessing forkserver the workers are forked from reads no trace and is left out); and the CPU seconds
   (user + system) of the command and every process below it (``RUSAGE_CHILDREN``; this process is made the
   subreaper of the command's descendants, so a forkserver the command leaves to exit on its own, and the
   workers it reaped, are reaped and counted here).
4. Checks the straggler is named (``rank S is a straggler ... cause: slower ops``) in each run's output.
5. ``--repeat N``: the modes N times, alternated, and each mode's median.  Beside the medians, the serial
   warm-up (one process importing torch, distributed for Dask, and paying its first meta replay's lazy imports,
   timed in a fresh interpreter) and the ratio an ideal 2-worker run would reach with it (Amdahl's law): what
   no second core can share bounds the speed-up before any overhead of the engine.

Target (issue 34): --dask local with 2 workers >= 1.6x faster than --jobs 1.  The machine is shared: the load
average is printed with the table.  Temp files are deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trace_common import DEVICE, ROOT, record_small  # noqa: E402

STRAGGLER_SCALE = 1.30  # the straggler's ops: 30% slower (issue 34's "one rank's GEMMs 30% slower", every op)
SENTINEL_TS, SENTINEL_DUR = "\x00TS\x00", "\x00DUR\x00"


Parts = tuple[dict[str, Any], list[str], list[tuple[str, str, str, float, float]], float, Any, Any]


def _templates(small: Path) -> Parts:
    """The small trace's top-level keys, its metadata events' text, and each timed event as text split around
    its ts and dur (offset of ts from the trace's start, dur), the recorded span, and the (pid, tid) of its first
    cpu_op (the thread the steps are recorded on)."""
    doc = json.loads(small.read_text())
    events = doc.pop("traceEvents")
    timed = [e for e in events if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))
             and isinstance(e.get("dur"), (int, float))]
    meta = [json.dumps(e) for e in events if e.get("ph") == "M"]
    t0 = min(e["ts"] for e in timed)
    span = max(e["ts"] + e["dur"] for e in timed) - t0
    out = []
    for e in timed:
        text = json.dumps({**e, "ts": SENTINEL_TS, "dur": SENTINEL_DUR})
        head, rest = text.split(json.dumps(SENTINEL_TS))
        mid, tail = rest.split(json.dumps(SENTINEL_DUR))
        out.append((head, mid, tail, float(e["ts"] - t0), float(e["dur"])))
    first = next(e for e in timed if e.get("cat") == "cpu_op")
    return doc, meta, out, span, first["pid"], first["tid"]


def write_rank(path: Path, rank: int, world: int, scale: float, copies: int, shift: float, parts: Parts) -> None:
    """One rank's trace: ``copies`` steps of the recorded events, its timeline scaled by ``scale``."""
    doc, meta, timed, span, pid, tid = parts
    top = {k: v for k, v in doc.items() if k != "distributedInfo"}
    top["distributedInfo"] = {"backend": "gloo", "rank": rank, "world_size": world}
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as f:
        f.write("{\n" + "".join(f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in top.items()))
        f.write('  "traceEvents": [\n' + ",\n".join(meta))
        for c in range(copies):
            base = 1000.0 + c * shift
            step = {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{c}", "pid": pid, "tid": tid,
                    "ts": base - 1.0, "dur": span * scale + 2.0}
            f.write(",\n" + json.dumps(step) + ",\n")
            f.write(",\n".join(f"{h}{base + off * scale!r}{m}{dur * scale!r}{t}" for h, m, t, off, dur in timed))
        f.write("\n  ]\n}\n")


def build_ranks(small: Path, out: Path, ranks: int, rank_mb: float, straggler: int) -> tuple[int, float]:
    """``ranks`` rank traces in ``out``; returns (copies per rank, mean MB per rank)."""
    parts = _templates(small)
    span = parts[3]
    probe = out / "probe.json"
    write_rank(probe, 0, ranks, 1.0, 1, 0.0, parts)
    per_copy = probe.stat().st_size
    probe.unlink()
    copies = max(1, round(rank_mb * (1 << 20) / per_copy))
    shift = span * STRAGGLER_SCALE * 1.05 + 10.0  # every rank's copies (steps) start at the same times
    for r in range(ranks):
        scale = STRAGGLER_SCALE if r == straggler else 1.0 + 0.01 * (r % 3)
        write_rank(out / f"rank{r}.json", r, ranks, scale, copies, shift, parts)
    sizes = [p.stat().st_size for p in out.glob("rank*.json")]
    return copies, sum(sizes) / len(sizes) / (1 << 20)


def _status(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d))
    return out


class Sampler(threading.Thread):
    """Peak RSS (VmHWM) of a process and of every process below it, sampled every 0.1 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peaks, self.names, self.done = pid, {}, {}, False
        self.parent: dict[int, int] = {}

    def run(self) -> None:
        while not self.done:
            todo, seen = [self.pid], set()
            while todo:
                p = todo.pop()
                if p in seen:
                    continue
                seen.add(p)
                hwm = _status(p, "VmHWM")
                if hwm:
                    self.peaks[p] = max(self.peaks.get(p, 0), hwm)
                    if p not in self.names:
                        try:
                            self.names[p] = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ")[:200]
                        except OSError:
                            self.names[p] = b""
                kids = _children(p)
                self.parent.update((c, p) for c in kids)
                todo += kids
            time.sleep(0.1)


def _subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``), so that the CPU
    time of a process the command does not wait for (a multiprocessing forkserver, and through it the workers it
    forked and reaped) comes back in ``RUSAGE_CHILDREN`` once it is reaped here."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _reap(timeout: float = 30.0) -> None:
    """Wait for every remaining child (orphans reparented here), up to ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.02)


def run_cli(argv: list[str], root: Path = ROOT) -> tuple[float, float, str, int, list[int]]:
    """(wall seconds, CPU seconds of the command and every process below it, stdout, driver peak RSS, worker
    peaks RSS) of one ``roofline trace`` run (of the checkout at ``root``)."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = str(root / "src") + os.pathsep + env.get("PYTHONPATH", "")
    import resource

    subreaper = _subreaper()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "roofline.cli", "trace", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    s = Sampler(proc.pid)
    s.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t
    if subreaper:  # descendants the command left running (a forkserver exits once the command is gone): reaped here
        _reap()
    ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)  # every waited-for descendant: workers included
    cpu = ru2.ru_utime + ru2.ru_stime - ru.ru_utime - ru.ru_stime
    s.done = True
    s.join()
    if proc.returncode != 0:
        sys.exit(f"roofline trace {' '.join(argv)} failed (rc {proc.returncode}):\n{err[-3000:]}")
    # workers: python processes below the driver that read ranks (the pool's workers, Dask's worker processes;
    # Dask's nanny and the multiprocessing resource tracker hold no trace and are left out)
    # (the forkserver the workers are forked from, the command's own child, is left out too: it reads no trace)
    server = {p for p, n in s.names.items() if b"forkserver" in n and s.parent.get(p) == proc.pid}
    workers = [v for p, v in s.peaks.items() if p != proc.pid and b"resource_tracker" not in s.names.get(p, b"")
               and p not in server and v > 150 << 20]
    return wall, cpu, out, s.peaks.get(proc.pid, 0), sorted(workers, reverse=True)


#: the one-process warm-up a rank read needs before its first rank: what the forkserver imports for a local Dask
#: cluster's workers (PRELOAD in roofline.frontends.workers, distributed first) and what --jobs 1 pays in its
#: own process (no distributed); timed inside a fresh interpreter, its start and teardown left out
WARMUP = ("import time; t = time.perf_counter(); {imports}import roofline.frontends.trace.warm; "
          "print(time.perf_counter() - t)")


def serial_warmup(root: Path, dask: bool) -> float:
    """Seconds one process spends importing torch (and distributed, for ``dask``) and paying the lazy imports
    of its first meta replay (roofline.frontends.trace.warm): work no second core can share."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = str(root / "src") + os.pathsep + env.get("PYTHONPATH", "")
    code = WARMUP.format(imports="import distributed; " if dask else "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.split()[-1])


_median = statistics.median  # the standard library's (was written again here)


def _row(label: str, tree: Path, extra: list[str], pattern: str, tmp: Path, args: Any) -> tuple[float, tuple]:
    load = os.getloadavg()[0]
    wall, cpu, out, driver, workers = run_cli([pattern, "--device", DEVICE, "--json", str(tmp / "a.json"), *extra],
                                              root=tree)
    found = re.search(rf"rank {args.straggler} is a straggler\b.*cause: (\S+ ?\S*)", out)
    cause = found.group(1).split(" (")[0] if found else "NOT FOUND"
    others = re.findall(r"rank (\d+) is a straggler", out)
    return wall, (label, f"{wall:.1f}", f"{cpu:.1f}", f"{driver / (1 << 20):.0f}",
                  ", ".join(f"{w / (1 << 20):.0f}" for w in workers[:4]) or "-",
                  f"rank {args.straggler}: {cause}" + (f" (+{len(others) - 1} more)" if len(others) > 1 else ""),
                  f"{load:.1f}")


def ideal_ratio(t1: float, serial_jobs: float, serial_dask: float, workers: int = 2) -> float:
    """Amdahl's law for the many-rank read: ``--jobs 1``'s wall ``t1`` less its serial warm-up is what splits over
    ``workers``; the Dask run pays its own (longer: distributed too) warm-up once, before any rank starts."""
    return t1 / (serial_dask + (t1 - serial_jobs) / workers)


def _print_runs(rows: list[tuple[str, float, tuple]], base: dict[tuple[Path, int], float]) -> None:
    width = max(26, *(len(r[2][0]) for r in rows))
    print(f"\n{'mode':{width}} {'wall s':>7} {'CPU s':>6} {'vs jobs1':>8} {'driver MB':>9}  {'worker peak MB':16} "
          f"{'straggler found':28} load")
    for key, wall, r in rows:
        print(f"{r[0]:{width}} {r[1]:>7} {r[2]:>6} {base[key] / wall:>7.2f}x {r[3]:>9}  {r[4]:16} {r[5]:28} {r[6]}")


def _print_medians(walls: dict[tuple[str, Path], list[float]], trees: list[Path], warm: dict[Path, tuple]) -> None:
    """Per tree: each mode's median wall, its ratio to the median --jobs 1, and the ratio an ideal 2-worker run
    would reach (Amdahl: the serial warm-up S once, the rest of --jobs 1's wall T1 split in two:
    T1 / (S_dask + (T1 - S_jobs1) / 2); an upper bound, since the driver's own start and merge do not split)."""
    print("\nmedians (each mode's runs alternated in one batch):")
    for tree in trees:
        t1 = _median(walls[("--jobs 1", tree)])
        s1, sd = warm[tree]
        ideal = ideal_ratio(t1, s1, sd)
        cells = [f"{m} {_median(v):.2f} s ({t1 / _median(v):.2f}x)" for (m, t), v in walls.items() if t == tree]
        print(f"  {tree.name}: " + "; ".join(cells) + f"; serial warm-up {s1:.2f} s (jobs) / {sd:.2f} s (dask); "
              f"ideal 2-worker ratio {ideal:.2f}x")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--rank-mb", type=float, default=128.0, help="size of each rank's trace (default 128)")
    ap.add_argument("--straggler", type=int, default=5)
    ap.add_argument("--no-dask", action="store_true", help="skip the --dask local run")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run the modes N times, alternated (jobs1, jobs2, dask, jobs1, ...), and print medians")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--ab", default=None, metavar="OTHER_TREE",
                    help="another checkout: each mode run with it too, straight after this one's (side by side)")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench_ranks_", dir=args.dir))
    need = args.ranks * args.rank_mb * (1 << 20) * 1.2
    if shutil.disk_usage(tmp).free < need:
        sys.exit(f"not enough disk in {tmp.parent} for {args.ranks} x {args.rank_mb} MB")
    try:
        small = tmp / "small.json"
        record_small(small)
        t = time.perf_counter()
        copies, mb = build_ranks(small, tmp, args.ranks, args.rank_mb, args.straggler)
        print(f"{args.ranks} ranks of {mb:.1f} MB ({copies} steps each), written in {time.perf_counter() - t:.1f} s; "
              f"straggler: rank {args.straggler} (x{STRAGGLER_SCALE})")
        modes = [("--jobs 1", ["--jobs", "1"]), ("--jobs 2", ["--jobs", "2"])]
        if not args.no_dask:
            modes.append(("--dask local (2 workers)", ["--dask", "local"]))
        trees = [ROOT] + ([Path(args.ab).resolve()] if args.ab else [])
        rows, walls, base = [], {}, {}
        for rep in range(max(1, args.repeat)):
            for (label, extra), tree in ((m, t) for m in modes for t in trees):
                shown = label if len(trees) == 1 else f"{tree.name}: {label}"
                wall, row = _row(shown + (f" #{rep + 1}" if args.repeat > 1 else ""), tree, extra,
                                 str(tmp / "rank*.json"), tmp, args)
                base.setdefault((tree, rep), wall)
                walls.setdefault((label, tree), []).append(wall)
                rows.append(((tree, rep), wall, row))
        _print_runs(rows, base)
        warm = {tree: (serial_warmup(tree, False), serial_warmup(tree, True)) for tree in trees}
        _print_medians(walls, trees, warm)
        print(f"(target: --dask local >= 1.6x --jobs 1; {args.ranks * mb:.0f} MB of traces in all; peak RSS = VmHWM; "
              f"CPU s: user + system of the command and its workers (CPU s / wall s near {os.cpu_count()}: the cores "
              f"were ours); load = 1-min load average at each start, {os.cpu_count()} cores; "
              f"{time.strftime('%H:%M UTC', time.gmtime())})")
    finally:
        if args.keep:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
