"""The network bench's torchrun entry point: arguments, the report, the files.

    torchrun --nproc-per-node N [--nnodes M --node-rank R --rdzv-endpoint HOST:PORT] \\
        -m roofline.commands.bench_network [--quick] --device NAME --out system.json [--plot comm.png]

What is measured and how: :mod:`roofline.bench.network`.  Every argument is checked before any rank joins;
any failure ends every rank with one line and exit code 2, and writes nothing.  Rank 0 writes, once every
rank has finished.  Not a ``roofline`` subcommand: ``roofline bench --network`` prints the torchrun line.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn

from roofline.bench.network import COLLECTIVES, measure_tiers
from roofline.core.errors import RooflineError, first_line

if TYPE_CHECKING:
    from roofline.hardware.system import System


class _Parser(argparse.ArgumentParser):
    """A usage error is one ``roofline: error:`` line and exit code 2, as every roofline command's."""

    def error(self, message: str) -> NoReturn:
        from roofline.core.text import one_line

        print(one_line(f"roofline: error: network bench: {message} (see '{self.prog} --help')"), file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    from roofline.bench.network import launch_env

    try:
        rank = launch_env()["RANK"] or 0  # torchrun's variables first: a bad one is one line on every rank
    except RooflineError as exc:
        print(f"roofline: error: network bench: {exc}; nothing written", file=sys.stderr)
        return 2
    p = _Parser(prog="python -m roofline.commands.bench_network",
                                description="Measure collectives under torchrun; fit alpha-beta per collective and "
                                            "tier; write a system file (see 'roofline bench --network').")
    p.add_argument("--quick", action="store_true", help="8 B .. 16 MiB, fewer samples")
    p.add_argument("--device", default="local", help="the device of the system (catalog name, JSON, or 'local')")
    p.add_argument("--out", help="write the system file here (rank 0, once every rank has finished)")
    p.add_argument("--plot", metavar="CHART", help="write the communication roofline chart (.png, .svg, .pdf)")
    p.add_argument("--backend", choices=("gloo", "nccl"), default=None, help="default: nccl with CUDA, else gloo")
    p.add_argument("--timeout", type=float, default=300.0, metavar="S", help="a collective stalled this long fails")
    p.add_argument("--repeats", type=int, default=None, metavar="N", help="timed samples per size (default 21 quick, 31)")
    p.add_argument("--collectives", default=",".join(COLLECTIVES), help="comma-separated subset")
    p.add_argument("--one-rank", action="store_true", help="on one rank, run every collective anyway (a check "
                   "that the backend's code path runs on a one-GPU machine): the tables are printed, no network "
                   "is measured and nothing is written")
    args = p.parse_args(argv)
    try:
        return _run(args)
    except KeyboardInterrupt:
        print(f"roofline: error: network bench (rank {rank}): interrupted; nothing written", file=sys.stderr)
        return 2
    except Exception as exc:  # a rank died, a collective stalled, bad input: one line on every rank
        msg = exc.args[0] if isinstance(exc, RooflineError) else f"{type(exc).__name__}: {first_line(exc)}"
        print(f"roofline: error: network bench (rank {rank}): {msg}; nothing written", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    wanted = tuple(c.strip() for c in args.collectives.split(",") if c.strip())
    bad = [c for c in wanted if c not in COLLECTIVES]
    if bad or not wanted:
        raise RooflineError(f"--collectives: {', '.join(bad) or '(none)'} not among {', '.join(COLLECTIVES)}")
    if args.repeats is not None and args.repeats < 3:
        raise RooflineError(f"--repeats {args.repeats}: at least 3 (a median and its quartiles)")
    if not 0 < args.timeout < math.inf:
        raise RooflineError(f"--timeout {args.timeout}: a positive number of seconds")
    if args.out:
        from roofline.core.fileio import check_writable

        check_writable(args.out)
    if args.plot:
        from roofline.render import check_chart_path

        check_chart_path(args.plot)
    from roofline.bench.resolve import resolve_device

    device = resolve_device(args.device)
    if "WORLD_SIZE" not in os.environ:
        raise RooflineError("not launched by torchrun: run 'torchrun --nproc-per-node N -m "
                            "roofline.commands.bench_network ...' ('roofline bench --network' prints the line)")
    backend = args.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    dist.init_process_group(backend, timeout=timedelta(seconds=args.timeout))
    try:
        system, fitted, facts = measure_tiers(dist, torch, device, backend, wanted, args.quick, args.repeats,
                                              args.timeout, args.one_rank)
        if facts["rank"] == 0:
            _report_and_write(args, system, fitted, facts, backend, len(wanted))
        return 0
    finally:
        dist.destroy_process_group()


def _report_and_write(args: argparse.Namespace, system: System | None, fitted: list[Any], facts: dict[str, Any],
                      backend: str, collectives: int) -> None:
    """Rank 0: nccl-tests' table per collective and tier, then every file at once (all or nothing)."""
    from roofline.render.network import collective_lines

    print("\n".join(collective_lines(scope, c, m) for scope, c, m in fitted))
    print(f"network bench: {backend}, {facts['world']} ranks ({facts['nodes']} node(s) x {facts['local']}), "
          f"{facts['sizes']} sizes x {collectives} collectives per tier in {facts['wall_seconds']:.1f} s")
    if system is None:
        print("one rank: the collectives ran, no network was measured; nothing written")
        return
    outputs = []
    if args.out:
        outputs.append((args.out, (system.to_json() + "\n").encode()))
    if args.plot:
        from roofline.render.network import network_chart_bytes

        outputs.append((args.plot, network_chart_bytes(system, args.plot)))
    if outputs:
        from roofline.core.fileio import write_files_atomic

        write_files_atomic(outputs)
        for path, _ in outputs:
            print(f"saved: {path}")


if __name__ == "__main__":
    sys.exit(main())
