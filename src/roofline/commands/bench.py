"""roofline bench: measure this machine's roofline (bandwidth per cache level, FMA peaks, GEMM, ERT curve, audit)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from roofline.core.errors import RooflineError
from roofline.core.fileio import check_writable
from roofline.core.stats import SPREAD_WARN, relative_spread
from roofline.core.text import display, visible
from roofline.core.units import format_bandwidth, format_bytes, format_flops
from roofline.hardware.device import Device, Provenance

if TYPE_CHECKING:
    from rich.progress import Progress

EPILOG = """\
examples:
  roofline bench                       # quick (< 1 minute), all CPUs; cached for --device local
  roofline bench --full --out me.json  # finer sweep, more repeats, also saved to me.json
  roofline bench --threads 1 --plot charts/
  roofline bench --show                # print the cached measurement
  roofline bench --audit               # time real kernels against the cached roofs again
  roofline analyze --device local ...  # use it anywhere a device is accepted
"""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bench", help="measure this machine's hierarchical roofline (cached for --device local)",
        description=("Measure bandwidth per memory level (read/write/copy/triad sweep, plateaus detected), "
                     "FMA peaks (explicit vector FMA chains for this ISA), GEMM ceilings (numpy BLAS and torch, "
                     "both layouts; bf16/fp16 only where the CPU computes them natively) and an ERT-style curve. "
                     "Each roof is the best of every method (all kept in its provenance), beside a theoretical "
                     "spec roof. A roof audit then times real kernels (GEMM, GEMV, elementwise at every memory "
                     "level) against the roofs and raises any roof a kernel beats. --quick (the default) "
                     "sweeps 3 sizes per octave with 5 samples each and audits 11 kernels; --full sweeps 6 "
                     "per octave with 11 samples, GEMMs up to n=4096 and audits torch fp16 and fp32 A@B too. "
                     "The result is a device JSON cached in the user cache directory "
                     "($ROOFLINE_CACHE_DIR, else $XDG_CACHE_HOME/roofline)."),
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="the default: under a minute on 2 cores")
    mode.add_argument("--full", action="store_true", help="finer sweep and more repeats (several minutes)")
    p.add_argument("--threads", type=int, default=None, metavar="N", help="CPU threads (default: every CPU)")
    p.add_argument("--gpu", action="store_true", help="measure the CUDA GPU (torch) instead of the CPU")
    p.add_argument("--out", metavar="FILE", help="also save the device JSON here")
    p.add_argument("--plot", metavar="DIR", help="write bandwidth.png and roofline.png into DIR")
    p.add_argument("--show", action="store_true", help="print the cached measurement instead of measuring")
    p.add_argument("--network", action="store_true",
                   help="print the torchrun line that measures the network (roofline.commands.bench_network) and exit")
    p.add_argument("--audit", action="store_true",
                   help="time the audit kernels against the cached roofs (raising any roof a kernel beats)")
    p.add_argument("--strict", action="store_true",
                   help="refuse a run that stays disturbed or inconsistent: print 'refused', write nothing, exit 2")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                   help="wait this long for another bench or calibrate writing the cache (default: fail at once)")
    p.add_argument("--retries", type=int, default=None, metavar="N",
                   help="measure a disturbed or inconsistent CPU run again up to N times (default: 1, --full: 2)")
    p.set_defaults(func=run)


NETWORK_HELP = """\
The network is measured by a module torchrun launches on every rank (gloo on CPUs, NCCL on GPUs):

  one node:   torchrun --nproc-per-node N -m roofline.commands.bench_network --device local --out system.json
  quick:      torchrun --nproc-per-node 2 -m roofline.commands.bench_network --quick --device local --out system.json
  many nodes: torchrun --nnodes M --nproc-per-node N --node-rank R --rdzv-backend c10d \\
                  --rdzv-endpoint HOST:29400 -m roofline.commands.bench_network --device local --out system.json

It times all-reduce, all-gather, reduce-scatter, all-to-all and send/recv from 8 B to 1 GiB (--quick: to
16 MiB), fits t = alpha + bytes / bandwidth per collective and tier (within a node; across nodes), prints
nccl-tests' algbw/busbw tables, and writes a system file (roofline.system/2) with the measured tiers
('roofline plan MODEL --system system.json ...'); --plot comm.png draws the communication roofline.
"""


def run(args: argparse.Namespace) -> int:
    from roofline import bench

    if args.network:
        sys.stdout.write(NETWORK_HELP)
        return 0

    plot_dir = Path(args.plot) if args.plot else None
    # every check before any measuring: nothing is half-done after a bad argument
    if args.threads is not None and not args.gpu:
        from roofline.bench.sampling import check_threads

        check_threads(args.threads)
    if args.out:
        check_writable(args.out)
    if plot_dir is not None:
        _check_plot_dir(plot_dir)
    if args.show:
        device = bench.load_local_device()
        from roofline.render.fit import wrap

        print(wrap(f"cached: {bench.local_device_path()}"))
        sys.stdout.write(render_table(device))
        _write(device, args, plot_dir, cache=False)
        return 0
    with bench.writer_lock("roofline bench", args.wait):
        if args.audit:
            device = bench.load_local_device()
            from roofline.bench.cpu import audit_device

            if device.kind != "cpu":
                raise RooflineError("--audit times CPU kernels; the cached measurement is of a GPU")
            device, messages = audit_device(device, int((device.bench.threads if device.bench else 0) or os.cpu_count() or 1),
                                            full=bool(args.full))
            sys.stdout.write(render_table(device))
            for m in messages:
                print(f"  audit: {m}")
            _write(device, args, plot_dir, cache=True)
            return 0
        if not args.gpu:
            from roofline.core.errors import require

            require("numba", "bench")  # the one-line 'pip install roofline[bench]' before anything else
        with _progress() as progress:
            device = bench.run_bench(quick=not args.full, full=bool(args.full), threads=args.threads, gpu=args.gpu,
                                     progress=progress, retries=args.retries)
        sys.stdout.write(render_table(device))
        if args.strict and _refused(device):
            return 2
        _write(device, args, plot_dir, cache=True)
    return 0


def _refused(device: Device) -> bool:
    """--strict: a flagged run is refused (one line on stderr, nothing written)."""
    from roofline.bench.quality import warning

    text = warning(device.metadata)
    if text is None:
        return False
    print(f"roofline: refused (--strict): {text}; nothing written", file=sys.stderr)
    return True


def _write(device: Device, args: argparse.Namespace, plot_dir: Path | None, *, cache: bool) -> None:
    """All outputs, only once measuring is over (Ctrl-C before this leaves every file as it was)."""
    from roofline import bench

    if args.out:
        device.save(args.out)
        print(f"saved: {args.out}")
    if cache:
        run = device.metadata.get("run") or {}
        print(f"cached: {bench.save_local_device(device)}  (run {run.get('id', '?')}; use --device local)")
    if plot_dir is not None:
        from roofline.render.bench import plot_bandwidth, plot_roofline

        plot_dir.mkdir(parents=True, exist_ok=True)
        if device.bench is not None and device.bench.sweep is not None:
            plot_bandwidth(device, plot_dir / "bandwidth.png")
            print(f"chart: {plot_dir / 'bandwidth.png'}")
        plot_roofline(device, plot_dir / "roofline.png")
        print(f"chart: {plot_dir / 'roofline.png'}")


def _check_plot_dir(d: Path) -> None:
    """A directory (created when missing) under a writable ancestor."""
    if d.exists() and not d.is_dir():
        raise RooflineError("--plot expects a directory, got a file", where=str(d))
    probe = d if d.exists() else next((q for q in d.parents if q.exists()), Path("."))
    if not probe.is_dir() or not os.access(probe, os.W_OK):
        raise RooflineError(f"cannot write: {str(probe)!r} is not a writable directory", where=str(d))


class _progress:
    """A rich progress bar on stderr; a no-op when stderr is not a terminal or under CI."""

    def __enter__(self) -> Callable[[float, str], None] | None:
        self._bar: Progress | None = None
        if not sys.stderr.isatty() or os.environ.get("CI"):
            return None
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("[bold]bench[/]"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                       TimeElapsedColumn(), TextColumn("{task.description}"),
                       console=Console(stderr=True), transient=True)
        self._bar = bar
        bar.__enter__()
        task = bar.add_task("starting", total=1.0)

        def update(fraction: float, what: str) -> None:
            bar.update(task, completed=min(max(fraction, 0.0), 1.0), description=what)

        return update

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)


def _best_method(prov: Provenance) -> str:
    """'best of 4: LLVM FMA kernel (...)' for a measured ceiling, else its method or source."""
    if prov.methods:
        return f"best of {len(prov.methods)}: {prov.method}"
    return prov.method or prov.source


def render_table(device: Device) -> str:
    """The ceilings with their spread (interquartile range), one per line, then ERT and warnings."""
    from roofline.bench.quality import run_line, warning

    meta = device.metadata
    lead = warning(meta)
    lines = [f"WARNING: {display(lead, 2000)}"] if lead else []
    lines.extend([f"{display(device.name)}", f"  measured {meta.get('date', '?')}, mode {meta.get('mode', '?')}, "
              f"{device.bench.threads if device.bench else '?'} thread(s), {meta.get('wall_seconds', '?')} s"])
    if (used := run_line(meta, str(meta.get("device_file", "")))):
        lines.append(f"  {display(used, 2000)}")
    from roofline.render.fit import Column, table_lines, terminal_width, wrap

    rows, flagged = _ceiling_rows(device)
    head = ("ceiling", "value", "IQR/median", "threads", "best method / working set")
    columns = [Column("ceiling", kind="name", keep=True, min_width=16), Column("value", keep=True),
               Column("IQR/median", priority=3), Column("threads", priority=2),
               Column("best method / working set", kind="text", priority=1, min_width=24)]
    width = terminal_width()
    lines = [wrap(line, width) for line in lines]
    lines.extend(table_lines(columns, [dict(zip(head, r, strict=True)) for r in rows], width,
                             more="roofline device local --json has every figure"))
    lines.extend(wrap(line, width) for line in _bench_notes(device))
    if flagged:
        lines.append("  ! spread above 10% of the median")
    return visible("\n".join(lines) + "\n")  # names from the cache (a file anyone can drop in place) are data


def _spread_text(value: float, spread: tuple[float, float] | None) -> str:
    """The interquartile range over the median, marked ' !' above :data:`SPREAD_WARN`."""
    if not spread or value <= 0:
        return ""
    rel = relative_spread(spread[0], spread[1], value)
    return f"{rel:.1%}{' !' if rel > SPREAD_WARN else ''}"


def _ceiling_rows(device: Device) -> tuple[list[tuple[str, str, str, str, str]], bool]:
    """(one row per compute roof, spec roof and memory level; whether any spread is flagged)."""
    rows: list[tuple[str, str, str, str, str]] = []
    for c in sorted(device.compute, key=lambda c: (c.unit, -c.flops)):
        d = c.provenance.details
        rows.append((display(f"{c.precision} {c.unit}"), format_flops(c.flops), _spread_text(c.flops, c.provenance.spread),
                     display(d.get("threads", "")), display(_best_method(c.provenance))))
    for r in device.bench.spec if device.bench else ():
        got = device.ceiling(r.unit, r.precision)
        rows.append((display(f"{r.precision} {r.unit}") + " (spec)", format_flops(r.flops), "", "",
                     f"{r.label(got.flops if got is not None else None)}: see the derivation"))
    for m in device.memory:
        d = m.provenance.details
        ws = d.get("working_set_bytes")
        where = f"{format_bytes(ws[0])} .. {format_bytes(ws[1])}" if isinstance(ws, list) and len(ws) == 2 else (
            format_bytes(ws) if isinstance(ws, (int, float)) else "")
        cap = f", capacity {format_bytes(m.capacity)}" if m.capacity else ""
        rows.append((display(m.level), format_bandwidth(m.bandwidth), _spread_text(m.bandwidth, m.provenance.spread),
                     display(d.get("threads", "")), f"{where}{cap}; {display(_best_method(m.provenance))}"))
    return rows, any(r[2].endswith(" !") for r in rows)


def _bench_notes(device: Device) -> list[str]:
    """The lines under the table: the ERT curve, native precisions, spec derivations, the audit, notes, warnings."""
    meta, lines = device.metadata, []
    ert = device.bench.ert if device.bench else None
    if ert is not None and ert.deviation:
        lines.append(f"  ERT curve ({len(ert.flops)} points, {format_bytes(ert.working_set_bytes)} in place): "
                     f"largest deviation from min(peak, AI x DRAM) {ert.deviation[ert.worst]:+.1%} "
                     f"at {ert.intensity[ert.worst]:.3g} FLOP/B")
    if device.bench is not None:
        lines.append(f"  native precisions: {display(', '.join(device.bench.native)) or '?'}; each roof is the best of its "
                     "methods (every figure: roofline device local --json)")
        for r in device.bench.spec:
            lines.append(f"  spec {display(r.precision)}: {display(r.derivation)}")
        if device.bench.audit:
            from roofline.bench.audit import format_audit

            lines.append("  roof audit (efficiency = roofline time / measured time, against the roofs before the audit):")
            lines.append(format_audit(device.bench.audit).rstrip("\n"))
    for note in meta.get("levels", {}).get("notes", []):
        if note not in meta.get("warnings", []):
            lines.append(f"  note: {display(note)}")
    for w in meta.get("warnings", []):
        lines.append(f"  warning: {display(w)}")
    return lines
