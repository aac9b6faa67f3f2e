"""Single-file parse: the reference reader against the chunked one on the same big trace, in one run (a script).

    python benchmarks/bench_trace_parse.py [--size-mb N]

Builds the big trace as bench_trace.py does (a real CPU trace recorded here, its events replicated), then
in fresh subprocesses: read_events with parser="reference" (today's reader) and parser="auto" (msgspec when
installed), each timed inside the process (imports excluded); and end to end, ``roofline trace FILE --json``
wall time less the wall time of a process that only imports roofline's CLI and torch (reported apart), and
less the wall time of the same command on the small recorded trace (every fixed cost: imports, torch's lazy
set-up on the first replays, rendering).  Placing the ops (after a warm-up) and the .json.gz parse are
reported apart.
The machine is shared: run it a few times and quote medians.  The big file is deleted at the end.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trace import ROOT, build_big, record_small  # noqa: E402

CHILD = ("import sys, time, torch\nfrom roofline.frontends.trace.events import read_events\n"
         "from roofline.frontends.trace.placer import Placer\n"
         "t = time.perf_counter(); ev = read_events(sys.argv[1], sys.argv[2]); dt = time.perf_counter() - t\n"
         "place = -1.0\n"
         "if len(sys.argv) > 3:  # placing ops, after a warm-up on the small trace (torch's lazy set-up)\n"
         "    Placer(read_events(sys.argv[3])).workload(None)\n"
         "    t = time.perf_counter(); Placer(ev).workload(None); place = time.perf_counter() - t\n"
         "print('RESULT', dt, len(ev), ev.events_seen, place)")


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def parse(path: Path, parser: str, warm: Path | None = None) -> tuple[float, int, int, float]:
    """(read_events seconds, events kept, events seen, seconds placing the ops: -1 unless ``warm`` is given)."""
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), parser, *([str(warm)] if warm else [])],
                         capture_output=True, text=True, env=_env(), check=True)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT"))
    _, dt, kept, seen, place = line.split()
    return float(dt), int(kept), int(seen), float(place)


def wall(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, capture_output=True, env=_env(), check=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1024.0)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench_parse_", dir=args.dir))
    try:
        small, big = tmp / "small.json", tmp / "big.json"
        record_small(small)
        build_big(small, big, args.size_mb)
        mb = big.stat().st_size / 1e6
        old, kept_o, seen_o, _ = parse(big, "reference")
        new, kept_n, seen_n, place = parse(big, "auto", warm=small)
        gz = tmp / "big.json.gz"
        with open(big, "rb") as src, gzip.open(gz, "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        new_gz = parse(gz, "auto")[0]
        imports = wall([sys.executable, "-c", "import torch, roofline.cli"])
        cli = [sys.executable, "-m", "roofline.cli", "trace"]
        opts = ["--device", "xeon-8480", "--json", str(tmp / "a.json")]
        fixed = wall([*cli, str(small), *opts])  # the same command on the small trace: every fixed cost
        e2e = wall([*cli, str(big), *opts])
        small_mb = small.stat().st_size / 1e6
        rows = [("trace size [MB]", f"{mb:.0f}", "", ""),
                ("read_events reference [s]", f"{old:.2f}", "", ""),
                ("read_events chunked (auto) [s]", f"{new:.2f}", "", ""),
                ("parse speed-up", f"{old / new:.2f}x", ">= 5x", f"{old / new / 5:.2f}"),
                ("parse MB/s chunked", f"{mb / new:.0f}", ">= 150", f"{mb / new / 150:.2f}"),
                ("parse MB/s chunked, .json.gz (MB of JSON)", f"{mb / new_gz:.0f}", "", ""),
                ("same events kept / seen", f"{kept_n == kept_o and seen_n == seen_o}", "True", ""),
                ("placing the ops, warm [s]", f"{place:.2f}", "", ""),
                ("parse + place MB/s", f"{mb / (new + place):.0f}", "", ""),
                ("interpreter + torch + roofline import [s]", f"{imports:.1f}", "", ""),
                (f"roofline trace --json on the {small_mb:.1f} MB trace [s]", f"{fixed:.1f}", "", ""),
                ("roofline trace --json wall [s]", f"{e2e:.1f}", "", ""),
                ("end-to-end MB/s (wall less imports)", f"{mb / (e2e - imports):.0f}", ">= 150",
                 f"{mb / (e2e - imports) / 150:.2f}"),
                ("end-to-end MB/s (wall less the small trace's)", f"{(mb - small_mb) / (e2e - fixed):.0f}", "", "")]
        print(f"{'figure':50} {'value':>10} {'target':>8} {'ratio':>6}")
        for r in rows:
            print(f"{r[0]:50} {r[1]:>10} {r[2]:>8} {r[3]:>6}")
        print(f"load average (1 min): {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end, on {os.cpu_count()} cores")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
