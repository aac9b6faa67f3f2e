"""The hostile-input corpus (tests/hostile) against this tree and, optionally, a base commit: what each does.

    python benchmarks/hostile_report.py [BASE]

For each tree, one process imports that tree's roofline and runs every case of the
corpus under the harness's guards (a forked child per case, address-space limit,
timeout), then the script prints, per tree: cases tried, passed, clean failures
(exit 2, one line), tracebacks, hangs, blow-ups, partial outputs, injection findings
(raw control characters on the terminal, failed safety checks), and the slowest and
largest case.  Not a test: tests/hostile/test_hostile.py is the test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the corpus by round (issue 33; issue 41; issue 53): its modules
ROUNDS = {"round 1": ("cases_seed", "cases_names", "cases_formats", "cases_special", "cases_ranges"),
          "round 2": ("cases_api", "cases_frontends", "cases_plan", "cases_trace"),
          "round 3": ("cases_round3", "cases_round3_options")}

RUNNER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])          # the tree's src/
sys.path.insert(0, sys.argv[2])          # this checkout's tests/ (the corpus and the harness)
from hostile import harness
import importlib, pkgutil
from pathlib import Path
rows = []
mods = sorted(m.name for m in pkgutil.iter_modules([str(Path(sys.argv[2]) / "hostile")]) if m.name.startswith("cases_"))
for case, module in ((c, m) for m in mods for c in importlib.import_module(f"hostile.{m}").CASES):
    r = harness.run_case(case)
    bad = harness.problems(case, r)
    rows.append({"name": case.name, "module": module, "cls": case.cls, "expect": case.expect, "code": r.code, "seconds": r.seconds,
                 "cpu": getattr(r, "cpu_seconds", r.seconds),
                 "rss": r.peak_rss, "timed_out": r.timed_out, "problems": bad, "wrote": r.new_files})
print(json.dumps(rows))
"""


def run_tree(src: Path) -> list[dict]:
    out = subprocess.run([sys.executable, "-c", RUNNER, str(src), str(ROOT / "tests")], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def tally(rows: list[dict]) -> dict[str, object]:
    def has(r: dict, word: str) -> bool:
        return any(p.startswith(word) for p in r["problems"])

    slowest = max(rows, key=lambda r: r["seconds"])
    busiest = max(rows, key=lambda r: r.get("cpu", 0.0))
    largest = max(rows, key=lambda r: r["rss"])
    return {
        "cases": len(rows),
        "pass": sum(not r["problems"] for r in rows),
        "clean failures (exit 2, one line)": sum(r["code"] == 2 and not r["problems"] for r in rows),
        "tracebacks": sum(has(r, "traceback") for r in rows),
        "hangs": sum(r["timed_out"] for r in rows),
        "blow-ups": sum(has(r, "blow-up") for r in rows),
        "partial outputs": sum(has(r, "wrote") for r in rows),
        "injection findings": sum(has(r, "raw control") or (has(r, "check failed") and r["cls"] in (
            "names-markup", "names-mathtext", "control-chars", "csv-injection", "plotly-names")) for r in rows),
        "other failures": sum(bool(r["problems"]) and not any(
            has(r, w) for w in ("traceback", "hang", "blow-up", "wrote", "raw control", "check failed")) for r in rows),
        "slowest (wall)": f"{slowest['name']} {slowest['seconds']:.1f} s",
        "most CPU": f"{busiest['name']} {busiest.get('cpu', 0.0):.1f} s",
        "largest": f"{largest['name']} {largest['rss'] / 2**20:.0f} MiB",
    }


def main() -> int:
    trees = [("this tree", ROOT / "src")]
    tmp = None
    if len(sys.argv) > 1:
        tmp = tempfile.TemporaryDirectory()
        base = Path(tmp.name) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), sys.argv[1]], cwd=ROOT, check=True,
                       capture_output=True)
        trees.insert(0, (f"base {sys.argv[1]}", base / "src"))
    try:
        rows = {label: run_tree(src) for label, src in trees}
        results = {label: tally(r) for label, r in rows.items()}
    finally:
        if tmp is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(Path(tmp.name) / "base")], cwd=ROOT,
                           capture_output=True)
            tmp.cleanup()
    labels = list(results)
    print(f"{'':36s}" + "".join(f"{lb:>48s}" for lb in labels))
    for key in results[labels[0]]:
        print(f"{key:36s}" + "".join(f"{str(results[lb][key]):>48s}" for lb in labels))
    print()
    print(f"{'passed by round (of cases)':36s}" + "".join(f"{lb:>48s}" for lb in labels))
    for rnd, modules in [*ROUNDS.items(), ("total", tuple(m for ms in ROUNDS.values() for m in ms))]:
        cells = []
        for lb in labels:
            mine = [r for r in rows[lb] if r["module"] in modules]
            cells.append(f"{sum(not r['problems'] for r in mine)}/{len(mine)}")
        print(f"{rnd:36s}" + "".join(f"{c:>48s}" for c in cells))
    print()
    print(f"{'failures by class (of cases)':36s}" + "".join(f"{lb:>48s}" for lb in labels))
    for cls in sorted({r["cls"] for r in rows[labels[-1]]}):
        cells = []
        for lb in labels:
            mine = [r for r in rows[lb] if r["cls"] == cls]
            cells.append(f"{sum(bool(r['problems']) for r in mine)} of {len(mine)}")
        print(f"{cls:36s}" + "".join(f"{c:>48s}" for c in cells))
    failing = [r for r in rows[labels[-1]] if r["problems"]]
    for r in failing:
        print(f"  failing: {r['name']}: {'; '.join(r['problems'])[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
