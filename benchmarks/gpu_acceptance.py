"""Every GPU path of roofline on a real GPU, in one time-boxed run (<= 4 minutes on one H200).

    PYTHONPATH=src python3 benchmarks/gpu_acceptance.py [--only STEP] [--out FILE.json]
    PYTHONPATH=src python3 benchmarks/gpu_acceptance.py --fake honest      # CI: a fake GPU (benchmarks/gpu_fake.py)
    PYTHONPATH=src python3 benchmarks/gpu_acceptance.py --fake blackwell   # CI: a fake B200, the Blackwell path

Steps (each time-boxed; a missing package or tool is SKIP with the reason):

* bench       ``roofline bench --gpu`` vs the catalog entry of the GPU: every measured roof <= its datasheet
              figure, and >= 0.7 of it, or >= 0.9 of the catalog's cited achievable figure where one exists
              (else of the GEMM rate its cited calibration measured: Blackwell's MAMF rows); the roofs the bench
              has no kernel for (Blackwell's fp4, fp6) cited in the catalog (a miss is reported, never clamped;
              the catalog is not edited);
* audit       the GPU roof audit (bench/gpu_audit.py): no kernel above its roof beyond its own spread;
* efficiency  the forecast's efficiency model per kernel kind: SKIP until the shape-aware forecast (issue 27);
* ncu         Nsight Compute's DRAM bytes and FLOPs of a GEMM, an add and attention vs roofline's counts;
* measure     roofline.measure of a Llama-style model (gpu_acceptance_llama.json, random bf16 weights),
              prefill and decode: bound <= measured on every op; forecast / measured per op and whole model;
* trace       a torch.profiler CUDA trace of the prefill through roofline's trace reader: kernels joined,
              time against the profiler's total, FLOPs equal to from_torch's;
* calibrate   ``calibrate --gpu --quick``, then the forecast error on the Llama prefill (not in the suite);
* overheads   the cuda-launch and cuda-graph floors vs the catalog's cited figures (within 3x below, 5x above);
* network     the network bench under ``torchrun --nproc-per-node 1`` (NCCL; gloo on the fake): the code path
              only; multi-GPU figures wait for a machine with more GPUs.

It prints one table, writes JSON to ``$OUT/gpu_acceptance.json`` (or ``--out``), and exits 1 naming every
failed check.  The roofline cache is a scratch directory: the user's cached device is left alone.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_acceptance_steps import (  # noqa: E402
    Context,
    Result,
    calibrate_run,
    catalog_entry,
    measure_phase,
    ncu_run,
    trace_run,
    which,
)

#: step -> wall-clock limit in seconds on the GPU (the whole run is also held to --budget)
LIMITS = {"bench": 60, "audit": 30, "efficiency": 1, "ncu": 90, "measure": 45, "trace": 30, "calibrate": 90,
          "overheads": 15, "network": 60}
ROOF_FLOOR, ACHIEVABLE_FLOOR = 0.7, 0.9
LAUNCH_BAND = (1 / 3, 5.0)  # measured floor / cited floor
FAKE_SLACK = 3.0


class StepTimeout(Exception):
    pass


@contextlib.contextmanager
def time_box(seconds: float) -> Iterator[None]:
    """SIGALRM after ``seconds``: the step ends with StepTimeout (between Python bytecodes)."""
    def alarm(signum: int, frame: Any) -> None:
        raise StepTimeout(f"ran past its {seconds:.0f} s limit")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.1))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def need_torch_cuda(r: Result) -> Any:
    try:
        import torch
    except ImportError:
        r.skip("torch is not installed")
        return None
    if not torch.cuda.is_available():
        r.skip("no CUDA device (torch.cuda.is_available() is False)")
        return None
    return torch


def bench_device(ctx: Context) -> Any:
    """The bench step's device; measured here (run_bench, audit included) when that step did not run."""
    if ctx.device is None:
        from roofline.bench import run_bench

        ctx.device = run_bench(gpu=True, quick=True)
        ctx.catalog = catalog_entry(str(ctx.device.metadata.get("gpu_model", "")))
    return ctx.device


# ----------------------------------------------------------------------------- steps
def step_bench(r: Result, ctx: Context) -> None:
    if need_torch_cuda(r) is None:
        return
    from roofline import cli
    from roofline.hardware.device import Device

    out = ctx.tmp / "gpu_device.json"
    with contextlib.redirect_stdout(io.StringIO()) as printed:  # the one table is the script's
        rc = cli.main(["bench", "--gpu", "--out", str(out)])
    r.figures["printed"] = printed.getvalue()
    r.check("roofline bench --gpu exits 0", str(rc), "0", rc == 0)
    if rc:
        return
    ctx.device = Device.load(out)
    gpu = str(ctx.device.metadata.get("gpu_model", ""))
    ctx.catalog = catalog_entry(gpu)
    r.figures["device"] = json.loads(out.read_text())
    if ctx.catalog is None:
        r.note = f"{gpu!r} is not in the catalog: no datasheet to compare with"
        return
    r.note = f"{gpu} vs catalog {ctx.catalog.name}"
    for c in ctx.device.compute:
        # SGEMM without TF32 runs on the FMA units: the datasheet's fp32 figure is the vector one
        ref = ctx.catalog.ceiling(c.unit, c.precision) or (
            ctx.catalog.ceiling("vector", "fp32") if (c.unit, c.precision) == ("matrix", "fp32") else None)
        if ref is None:
            r.figures.setdefault("no_datasheet", []).append(c.label)
            continue
        ach = ctx.catalog.achievable_ceiling(ref)
        roof_check(r, f"{c.precision} {c.unit}", c.flops, ref.flops,
                   ach.flops if ach else cited_matmul_rate(ctx.catalog, ref), "FLOP/s")
    unmeasured_roofs(r, ctx.catalog, {(c.unit, c.precision) for c in ctx.device.compute})
    for m in ctx.device.memory:
        ref_m = ctx.catalog.find_level(m.level)
        if ref_m is None:
            r.figures.setdefault("no_datasheet", []).append(m.level)
            continue
        ach_m = ctx.catalog.achievable_level(ref_m)
        roof_check(r, m.level, m.bandwidth, ref_m.bandwidth, ach_m.bandwidth if ach_m else None, "B/s")


def cited_matmul_rate(catalog: Any, ref: Any) -> float | None:
    """The rate the device's cited calibration's MAMF row measured for GEMMs at ``ref``'s precision (torch.matmul at
    its best shape: the bench's own kind of measurement; the efficiency of the peak times the peak), for a device
    whose catalog entry gives no achievable figure; else None (other cited GEMM tables are of other kernels, e.g.
    DeepGEMM's block-scaled FP8, not a bar for a plain GEMM)."""
    from roofline.engine.forecast import effective_calibration
    from roofline.hardware.calibration_curves import TabulatedCurve

    cal = effective_calibration(catalog)
    curve = None if cal is None or ref.unit != "matrix" else cal.curve("matmul", "compute", ref.precision)
    if (not isinstance(curve, TabulatedCurve) or curve.precision != ref.precision or curve.relative_to != "peak"
            or curve.sources() != ("ml-engineering-mamf",)):
        return None
    return max(p.efficiency for p in curve.points) * ref.flops


def unmeasured_roofs(r: Result, catalog: Any, measured: set[tuple[str, str]]) -> None:
    """The catalog's matrix roofs the bench has no kernel for (Blackwell's fp4 and fp6): each must be a cited
    datasheet figure (its source named), checked as the catalog holds it, not measured."""
    from roofline.core.units import format_flops

    for c in catalog.compute:
        if c.unit != "matrix" or (c.unit, c.precision) in measured or c.precision in ("int8", "int4"):
            continue
        src = c.provenance.source if c.provenance else ""
        r.check(f"{c.precision} matrix roof cited (no bench kernel)", format_flops(c.flops),
                "a cited datasheet figure", bool(src))


def roof_check(r: Result, what: str, measured: float, datasheet: float, achievable: float | None, unit: str) -> None:
    """Measured <= datasheet; and >= 0.7 of it, or >= 0.9 of the cited achievable figure where there is one."""
    from roofline.core.units import format_bandwidth, format_flops

    def format_si(v: float, unit: str) -> str:
        return format_flops(v) if unit == "FLOP/s" else format_bandwidth(v)

    r.check(f"{what} <= datasheet", f"{format_si(measured, unit)} ({measured / datasheet:.0%})",
            f"<= {format_si(datasheet, unit)}", measured <= datasheet)
    floor = ROOF_FLOOR * datasheet if achievable is None else min(ROOF_FLOOR * datasheet, ACHIEVABLE_FLOOR * achievable)
    target = f">= {ROOF_FLOOR:.0%} of datasheet" + (f" or {ACHIEVABLE_FLOOR:.0%} of achievable "
                                                    f"{format_si(achievable, unit)}" if achievable else "")
    r.check(f"{what} near datasheet", f"{measured / datasheet:.0%} of datasheet", target, measured >= floor)


def step_audit(r: Result, ctx: Context) -> None:
    if need_torch_cuda(r) is None:
        return
    from roofline.bench.audit import format_audit

    device = bench_device(ctx)
    results = device.bench.audit if device.bench else ()
    r.check("audit kernels timed", str(len(results)), ">= 8", len(results) >= 8)
    for a in results:
        r.check(f"audit {a.kernel}", f"{a.efficiency:.2f} of its roof (spread {a.noise:.0%})", "<= 1 + spread",
                not a.above_roof)
    r.figures["audit"] = format_audit(results)


def step_efficiency(r: Result, ctx: Context) -> None:
    r.skip("the shape-aware forecast (issue 27) has not landed: no per-kind efficiency model to check yet")


def step_ncu(r: Result, ctx: Context) -> None:
    if need_torch_cuda(r) is None:
        return
    ncu = which("ncu")
    if ncu is None:
        r.skip("ncu (Nsight Compute) is not on PATH")
        return
    ncu_run(r, ncu, LIMITS["ncu"] - 5)


def step_measure(r: Result, ctx: Context) -> None:
    torch = need_torch_cuda(r)
    if torch is None:
        return
    bench_device(ctx)
    for phase in ("prefill", "decode"):
        measure_phase(r, ctx, torch, phase)


def step_trace(r: Result, ctx: Context) -> None:
    torch = need_torch_cuda(r)
    if torch is None:
        return
    bench_device(ctx)
    trace_run(r, ctx, torch)


def step_calibrate(r: Result, ctx: Context) -> None:
    torch = need_torch_cuda(r)
    if torch is None:
        return
    bench_device(ctx)
    calibrate_run(r, ctx, torch)


def step_overheads(r: Result, ctx: Context) -> None:
    torch = need_torch_cuda(r)
    if torch is None:
        return
    from roofline.bench.overhead import measure_cuda

    floors = {o.framework: o for o in measure_cuda(torch)}
    cat = ctx.catalog or catalog_entry(torch.cuda.get_device_name())
    for name in ("cuda-launch", "cuda-graph"):
        got = floors.get(name)
        cited = cat.overhead_floor(name) if cat is not None else None
        if got is None:
            r.check(f"{name} floor measured", "not measured", "measured", False)
            continue
        r.figures[name] = {"measured_s": got.seconds, "cited_s": cited.seconds if cited else None,
                           "spread": got.provenance.spread}
        if cited is None:
            r.note = f"no cited {name} figure in the catalog"
            continue
        ratio = got.seconds / cited.seconds
        r.check(f"{name} floor vs cited", f"{got.seconds * 1e6:.2f} us vs {cited.seconds * 1e6:.2f} us ({ratio:.2f}x)",
                f"{LAUNCH_BAND[0]:.2f}x .. {LAUNCH_BAND[1]:.0f}x", LAUNCH_BAND[0] <= ratio <= LAUNCH_BAND[1])
    if "cuda-graph" in floors:
        r.check("graph replay no slower than launches", f"{floors['cuda-graph'].seconds * 1e6:.2f} us",
                f"<= {floors['cuda-launch'].seconds * 1e6:.2f} us",
                floors["cuda-graph"].seconds <= floors["cuda-launch"].seconds * 1.2)


def step_network(r: Result, ctx: Context) -> None:
    torch = need_torch_cuda(r)
    if torch is None:
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    name = ctx.catalog.name if ctx.catalog is not None else "h200"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "1", f"--master-port={port}",
           "-m", "roofline.commands.bench_network", "--quick", "--one-rank", "--repeats", "5", "--device", name]
    backend = "gloo" if ctx.fake else "nccl"  # the fake GPU lives in this process only
    cmd += ["--backend", backend] + (["--collectives", "all_reduce,send_recv"] if ctx.fake else [])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    # the step's own limit, less 5 s to report (x FAKE_SLACK on the fake, as run_steps allows the step)
    timeout = LIMITS["network"] * (FAKE_SLACK if ctx.fake else 1.0) - 5
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    last = (p.stderr.strip().splitlines() or [""])[-1] if p.returncode else ""
    r.check(f"torchrun --nproc-per-node 1 network bench ({backend})", f"exit {p.returncode} {last}".strip(), "exit 0",
            p.returncode == 0 and "the collectives ran" in p.stdout)
    r.figures["stdout"] = p.stdout[-4000:]
    r.note = "one GPU: the code path only; multi-GPU figures wait for a machine with more GPUs"


STEPS: dict[str, Callable[[Result, Context], None]] = {
    "bench": step_bench, "audit": step_audit, "efficiency": step_efficiency, "ncu": step_ncu,
    "measure": step_measure, "trace": step_trace, "calibrate": step_calibrate, "overheads": step_overheads,
    "network": step_network}


# ----------------------------------------------------------------------------- running, the table, the exit
def run_steps(names: list[str], ctx: Context, budget: float) -> list[Result]:
    """Each step under its limit (x FAKE_SLACK on the fake GPU, whose host side is Python on a CPU)."""
    slack = FAKE_SLACK if ctx.fake else 1.0
    results, t_end = [], time.monotonic() + budget * slack
    for name in names:
        r = Result(name)
        left = t_end - time.monotonic()
        t0 = time.perf_counter()
        if left <= 1:
            r.check("started within the run's budget", "no time left", f"{budget:.0f} s in all", False)
        else:
            try:
                with time_box(min(LIMITS[name] * slack, left)):
                    STEPS[name](r, ctx)
            except StepTimeout as exc:
                r.check("finished in time", str(exc), f"<= {min(LIMITS[name] * slack, left):.0f} s", False)
            except Exception as exc:  # a step that breaks is a failed check, and the next step runs
                r.check("ran", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200],
                        "no error", False)
        r.seconds = round(time.perf_counter() - t0, 2)
        results.append(r)
        print(f"  {name:<10} {r.status:<4} {r.seconds:>6.1f} s", file=sys.stderr, flush=True)
    return results


def table(results: list[Result]) -> str:
    rows = [("step", "status", "check", "value", "target")]
    for r in results:
        if not r.checks:
            rows.append((r.step, r.status, r.note or "-", "", f"{r.seconds:.1f} s"))
        for i, c in enumerate(r.checks):
            rows.append((r.step if i == 0 else "", (r.status if i == 0 else "") + ("" if c.ok else " <-"),
                         c.name, c.value, c.target))
        if r.checks and r.note:
            rows.append(("", "", f"note: {r.note}", "", f"{r.seconds:.1f} s"))
    widths = [min(70, max(len(str(x[i])) for x in rows)) for i in range(5)]
    return "\n".join("  ".join(str(v)[:70].ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows) + "\n"


class _Parser(argparse.ArgumentParser):
    """Bad arguments are one line and exit 2, as the roofline command's are."""

    def error(self, message: str) -> Any:
        from roofline.core.text import one_line

        self.exit(2, f"roofline: error: gpu_acceptance: {one_line(message)}\n")


def _check_args(args: argparse.Namespace) -> Path:
    """The output path (checked writable: a regular file, new or existing; never a folder, fifo, device or
    symlink) and the fake kind, before any step runs; else a RooflineError."""
    from roofline.core.errors import RooflineError
    from roofline.core.fileio import check_writable, output_kind
    from roofline.core.text import shown_path

    if args.fake is not None:
        from gpu_fake_kinds import KINDS

        if args.fake not in KINDS:
            raise RooflineError(f"--fake {shown_path(args.fake)!r}: not one of {', '.join(KINDS)}")
    if not args.budget > 0 or args.budget == float("inf"):
        raise RooflineError(f"--budget must be a finite number of seconds > 0, got {args.budget}")
    if args.out is not None and not args.out.strip():
        raise RooflineError("--out '': give a file name")
    out = Path(args.out) if args.out else Path(os.environ.get("OUT") or ".") / "gpu_acceptance.json"
    if output_kind(out) != "file":
        raise RooflineError("cannot write: not a regular file (the results are written whole, then renamed)",
                            where=shown_path(out))
    return check_writable(out)


def main(argv: list[str] | None = None) -> int:
    from roofline.core.errors import RooflineError
    from roofline.core.text import one_line

    try:
        return _main(argv)
    except RooflineError as exc:
        print(f"roofline: error: gpu_acceptance: {one_line(exc)}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    from roofline.core.fileio import write_text_atomic
    from roofline.core.text import display

    p = _Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", action="append", choices=list(STEPS), metavar="STEP",
                   help=f"run only this step (repeatable): {', '.join(STEPS)}")
    p.add_argument("--out", help="the JSON results file (default: $OUT/gpu_acceptance.json, else ./)")
    p.add_argument("--budget", type=float, default=240.0, help="seconds for the whole run (default 240)")
    p.add_argument("--fake", metavar="KIND", help="run on the fake GPU of benchmarks/gpu_fake.py (CI)")
    args = p.parse_args(argv)
    names = args.only or list(STEPS)
    out = _check_args(args)
    with tempfile.TemporaryDirectory(prefix="roofline-gpu-") as tmp:
        old_cache = os.environ.get("ROOFLINE_CACHE_DIR")
        os.environ["ROOFLINE_CACHE_DIR"] = str(Path(tmp) / "cache")  # never the user's cached device
        try:
            ctx = Context(Path(tmp), args.fake)
            with _fake(args.fake):
                results = run_steps(names, ctx, args.budget)
        finally:
            if old_cache is None:
                os.environ.pop("ROOFLINE_CACHE_DIR", None)
            else:
                os.environ["ROOFLINE_CACHE_DIR"] = old_cache
    sys.stdout.write(table(results))
    failed = [f"{r.step}: {c.name}" for r in results for c in r.checks if not c.ok]
    write_text_atomic(out, json.dumps({"schema": "roofline.gpu_acceptance/1", "fake": args.fake, "failed": failed,
                                       "steps": [r.to_dict() for r in results]}, indent=1, default=str) + "\n")
    print(f"results: {display(out)}")
    if failed:
        print(f"FAILED ({len(failed)}): " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


@contextlib.contextmanager
def _fake(kind: str | None) -> Iterator[None]:
    if kind is None:
        yield
        return
    import gpu_fake

    with gpu_fake.install(kind):
        yield


if __name__ == "__main__":
    sys.exit(main())
