"""Did a change slow anything down?  The speed benchmarks, this tree against a commit, interleaved.  (a script)

Checks out BASE into a temporary git worktree, then runs bench_analysis, bench_llm,
bench_torch_trace and bench_onnx ROUNDS times (default 5), alternating which tree goes
first each round, every run in a fresh process with PYTHONPATH at that tree's src/.
Prints, per figure, the median over rounds for each tree and the ratio this / base
(target <= 1.05: no figure more than 5 % slower), and the load average.

    python benchmarks/compare_commits.py BASE [ROUNDS] [BENCH ...]   (BENCH: only these, e.g. bench_llm)
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: benchmark -> (arguments, {figure: regex whose group 1 is the figure in seconds or ms})
BENCHES: dict[str, tuple[list[str], dict[str, str]]] = {
    "bench_analysis": (["--repeats", "5"], {"analyze 10^6 ops [s]": r"analyze median \[s\]\s+([\d.]+)",
                                            "group-bys [s]": r"group-bys .* median \[s\]\s+([\d.]+)"}),
    "bench_llm": (["--repeats", "5"], {
        "LLM full analysis, warm [ms]": r"full analysis, Llama-3-70B .*\(warm caches\)\s+([\d.]+) ms",
        "LLM full analysis, cold [ms]": r"full analysis, same, cold .*?\s+([\d.]+) ms",
        "LLM 10,000-point sweep [ms]": r"vectorised sweep, 10,000 .*?\s+([\d.]+) ms"}),
    "bench_torch_trace": (["--repeat", "3"], {
        "torch trace ResNet-50, warm [s]": r"^resnet50 1x3x224x224\s+[\d.]+s\s+([\d.]+)s",
        "torch trace Llama prefill, warm [s]": r"^llama-2-7b prefill 1024\s+[\d.]+s\s+([\d.]+)s"}),
    "bench_onnx": (["--repeats", "5"], {"ONNX DenseNet-121 [s]": r"^densenet121\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)",
                                        "ONNX ResNet-50 [s]": r"^resnet50\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)"}),
}


def run(tree: Path, bench: str, args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run([sys.executable, str(tree / "benchmarks" / f"{bench}.py"), *args], cwd=tree, env=env,
                         capture_output=True, text=True, check=True)
    return out.stdout


def figures(text: str, patterns: dict[str, str]) -> dict[str, float]:
    out = {}
    for name, pattern in patterns.items():
        m = re.search(pattern, text, re.M)
        if m is None:
            raise SystemExit(f"figure {name!r} not found in the benchmark's output:\n{text}")
        out[name] = float(m.group(1))
    return out


def main() -> int:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    base_ref = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    only = set(sys.argv[3:])
    benches = {k: v for k, v in BENCHES.items() if not only or k in only}
    sha = subprocess.run(["git", "rev-parse", "--short", base_ref], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / f"base-{sha}"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), sha], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            results: dict[str, dict[str, list[float]]] = {"base": {}, "this": {}}
            loads = []
            for k in range(rounds):
                loads.append(os.getloadavg()[0])
                for bench, (args, patterns) in benches.items():
                    order = [("base", base), ("this", ROOT)]
                    for label, tree in order if k % 2 == 0 else order[::-1]:
                        for name, v in figures(run(tree, bench, args), patterns).items():
                            results[label].setdefault(name, []).append(v)
                print(f"round {k + 1}/{rounds} done (load {loads[-1]:.2f})", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)
    print()
    head = f"{'figure (median over rounds)':40s} {'base ' + sha:>12s} {'this tree':>12s} {'ratio':>7s} {'target':>7s}  ok"
    print(head)
    print("-" * len(head))
    for name in results["base"]:
        b, t = statistics.median(results["base"][name]), statistics.median(results["this"][name])
        ratio = t / b
        print(f"{name:40s} {b:12.4g} {t:12.4g} {ratio:7.3f} {'<= 1.05':>7s}  {'yes' if ratio <= 1.05 else 'NO'}")
    print(f"\nload average (1 min) at the start of each round: {', '.join(f'{x:.2f}' for x in loads)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
