"""Single-file parse: the reference reader against the chunked one on the same big trace, in one run (a script).

    python benchmarks/bench_trace_parse.py [--size-mb N]

Builds the big trace as bench_trace.py does (a real CPU trace recorded here, its events replicated), then
in fresh subprocesses: read_events with parser="reference" (today's reader) and parser="auto" (msgspec when
installed), each timed inside the process (imports excluded); and end to end, ``roofline trace FILE --json``
wall time less the wall time of a process that only imports roofline's CLI and torch (reported apart).
The machine is shared: run it a few times and quote medians.  The big file is deleted at the end.
"""

from __future__ import annotations

import argparse
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
         "t = time.perf_counter(); ev = read_events(sys.argv[1], sys.argv[2]); dt = time.perf_counter() - t\n"
         "print('RESULT', dt, len(ev), ev.events_seen)")


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def parse(path: Path, parser: str) -> tuple[float, int, int]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), parser], capture_output=True, text=True,
                         env=_env(), check=True)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT"))
    _, dt, kept, seen = line.split()
    return float(dt), int(kept), int(seen)


def wall(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, capture_output=True, env=_env(), check=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1024.0)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_parse_", dir=args.dir))
    try:
        small, big = tmp / "small.json", tmp / "big.json"
        record_small(small)
        build_big(small, big, args.size_mb)
        mb = big.stat().st_size / 1e6
        old, kept_o, seen_o = parse(big, "reference")
        new, kept_n, seen_n = parse(big, "auto")
        imports = wall([sys.executable, "-c", "import torch, roofline.cli"])
        e2e = wall([sys.executable, "-m", "roofline.cli", "trace", str(big), "--device", "xeon-8480", "--json",
                    str(tmp / "a.json")])
        rows = [("trace size [MB]", f"{mb:.0f}", "", ""),
                ("read_events reference [s]", f"{old:.1f}", "", ""),
                ("read_events chunked (auto) [s]", f"{new:.1f}", "", ""),
                ("parse speed-up", f"{old / new:.2f}x", ">= 5x", f"{old / new / 5:.2f}"),
                ("parse MB/s chunked", f"{mb / new:.0f}", ">= 150", f"{mb / new / 150:.2f}"),
                ("same events kept / seen", f"{kept_n == kept_o and seen_n == seen_o}", "True", ""),
                ("interpreter + torch + roofline import [s]", f"{imports:.1f}", "", ""),
                ("roofline trace --json wall [s]", f"{e2e:.1f}", "", ""),
                ("end-to-end MB/s (wall less imports)", f"{mb / (e2e - imports):.0f}", ">= 150",
                 f"{mb / (e2e - imports) / 150:.2f}")]
        print(f"{'figure':44} {'value':>10} {'target':>8} {'ratio':>6}")
        for r in rows:
            print(f"{r[0]:44} {r[1]:>10} {r[2]:>8} {r[3]:>6}")
        print(f"load average (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
