"""Measure the network with torch.distributed, under torchrun: collective times fitted to alpha-beta, written as
a system file with measured tiers.

    torchrun --nproc-per-node N [--nnodes M --node-rank R --rdzv-endpoint HOST:PORT] \\
        -m roofline.commands.bench_network [--quick] --device NAME --out system.json [--plot comm.png]

(this module measures; :mod:`roofline.commands.bench_network` is the torchrun entry point: its arguments,
the report and the files)

Every rank runs all-reduce, all-gather, reduce-scatter, all-to-all and send/recv (ranks paired 0-1, 2-3,
...) on float32 buffers from 8 B to 1 GiB (``--quick``: to 16 MiB, fewer samples), each size after a
warm-up; each sample is a batch of calls started by a barrier and timed on every rank (the slowest rank's
time counts), taken in rounds over every collective and size.
Reported as nccl-tests does (its doc/PERFORMANCE.md): algorithm bandwidth = message / time, bus bandwidth
= algorithm bandwidth x the collective's bus factor (:data:`roofline.work.costs.BUS_FACTORS`), median time and
interquartile spread.  Each collective is fitted, on its own, to ``t = alpha + message / bandwidth``
(least squares on relative error; R^2 on log time), so a backend that implements a collective its own way
(gloo's reduce-scatter is not NCCL's ring) is predicted from what it measured, not from NCCL's factors.

On one node the ranks form the node tier; across nodes (``LOCAL_WORLD_SIZE`` < ``WORLD_SIZE``) each
collective is measured twice: within every node at once (the node tier) and across nodes, one rank per
node (the cluster tier), every local rank's group at once (what each device gets while all of a node's
devices talk across nodes).  Rank 0 writes the system file (``roofline.system/2``, each tier's ``measured``
fits with provenance) only when every rank has finished; any failure (a rank that dies, a collective that
stalls past ``--timeout``, given to ``init_process_group`` and every tier's group) ends every rank with one
line and exit code 2, and writes nothing.  Under NCCL a stalled collective is ended by torch's own watchdog
(``TORCH_NCCL_ASYNC_ERROR_HANDLING``), which tears the process down with its own message: still nothing
written.  Backend: NCCL when CUDA is available, gloo otherwise (``--backend``).  Under NCCL, calls are
queued back to back and the batch ends with a synchronize: the fitted alpha is the larger of NCCL's latency
and torch's cost to launch one collective from Python.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import asdict, dataclass, replace
from datetime import timedelta
from typing import Any

from roofline.core.errors import RooflineError
from roofline.work.costs import BUS_FACTORS

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
FULL_SIZES = tuple(8 * 4**k for k in range(14))  # 8 B .. 512 MiB (x4), plus 1 GiB below
QUICK_SIZES = tuple(8 * 8**k for k in range(8))  # 8 B .. 16 MiB (x8)
#: each sample times back-to-back calls for at least this long: one call of a small message is at the mercy
#: of the scheduler (0.1 to 1 ms on a shared machine); a batch averages its jitter away, and many short
#: batches spread over the run average away the slower swings
BATCH_SECONDS = 0.02


#: the variables torchrun sets that the bench reads (checked before anything starts: :func:`launch_env`)
LAUNCH_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def _env_int(env: Any, name: str, minimum: int) -> int | None:
    text = env.get(name)
    if text is None:
        return None
    t = text.strip()
    if not (t.isascii() and t.isdigit()) or len(t) > 18 or int(t) < minimum:
        from roofline.core.fileio import shown

        raise RooflineError(f"environment variable {name}={shown(text, 40)} must be a whole number from {minimum} "
                            "(torchrun sets it)")
    return int(t)


def launch_env(env: Any = None) -> dict[str, Any]:
    """torchrun's variables (:data:`LAUNCH_VARIABLES`) read and checked, each fault one line naming the
    variable: ranks and sizes whole numbers (``RANK`` below ``WORLD_SIZE``, ``LOCAL_RANK`` below
    ``LOCAL_WORLD_SIZE``, which divides ``WORLD_SIZE``), ``MASTER_PORT`` from 1 to 65535, ``MASTER_ADDR`` a
    host name without blanks or control characters.  Absent ones are None.

    >>> launch_env({"RANK": "1", "WORLD_SIZE": "2"})["RANK"]
    1
    """
    from roofline.core.fileio import shown

    env = os.environ if env is None else env
    got: dict[str, Any] = {k: _env_int(env, k, 1 if k.endswith("SIZE") else 0)
                           for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    for rank, size in (("RANK", "WORLD_SIZE"), ("LOCAL_RANK", "LOCAL_WORLD_SIZE")):
        if got[rank] is not None and got[size] is not None and got[rank] >= got[size]:
            raise RooflineError(f"environment variable {rank}={got[rank]} must be below {size}={got[size]}")
    if got["WORLD_SIZE"] and got["LOCAL_WORLD_SIZE"] and got["WORLD_SIZE"] % got["LOCAL_WORLD_SIZE"]:
        raise RooflineError(f"environment variable LOCAL_WORLD_SIZE={got['LOCAL_WORLD_SIZE']} must divide "
                            f"WORLD_SIZE={got['WORLD_SIZE']} (whole nodes)")
    port = _env_int(env, "MASTER_PORT", 1)
    if port is not None and port > 65535:
        raise RooflineError(f"environment variable MASTER_PORT={port} must be a port from 1 to 65535")
    addr = env.get("MASTER_ADDR")
    if addr is not None and (not addr.strip() or not addr.isprintable() or any(c.isspace() for c in addr)):
        raise RooflineError(f"environment variable MASTER_ADDR={shown(addr, 40)} must be a host name or address")
    got.update(MASTER_PORT=port, MASTER_ADDR=addr)
    return got


@dataclass(frozen=True)
class Fit:
    """``t = alpha + message_bytes / bandwidth`` for one collective on one tier, from measured points; a
    backend that switches algorithm with the size (gloo above a few bytes, NCCL's LL / LL128 / Simple
    protocols) gets a second regime from ``split_bytes`` on (``alpha2``, ``bandwidth2``)."""

    alpha: float  # seconds
    bandwidth: float  # message bytes per second (the algorithm bandwidth it tends to)
    r2: float  # on log time, over every point
    split_bytes: float = math.inf  # messages this size and above use the second regime
    alpha2: float = 0.0
    bandwidth2: float = math.inf

    def time(self, nbytes: float) -> float:
        from roofline.hardware.system import alpha_beta

        return alpha_beta(nbytes, self.alpha, self.bandwidth, self.split_bytes, self.alpha2, self.bandwidth2)


def _line(S: Any, t: Any) -> tuple[float, float]:
    """(alpha, 1 / bandwidth) of ``t = alpha + S / bandwidth`` by least squares on relative error, both >= 0."""
    import numpy as np

    if len(S) == 1:
        return float(t[0]), 0.0
    A = np.stack([np.ones_like(S), S], axis=1) / t[:, None]
    (alpha, inv_bw), *_ = np.linalg.lstsq(A, np.ones_like(t), rcond=None)
    if inv_bw <= 0:  # flat in size: latency only
        return float(np.median(t)), 0.0
    if alpha < 0:  # refit the slope alone
        return 0.0, float(np.sum(S / t) / np.sum((S / t) ** 2))
    return float(alpha), float(inv_bw)


def fit(sizes: list[float], times: list[float], spread: list[tuple[float, float]] | None = None) -> Fit:
    """``t = alpha + S / B`` (least squares on relative error), or two such regimes split at the size that
    fits best when that halves the error; R^2 on log time.  With each time's measured ``spread`` (its
    quartiles), one line that passes within every spread is kept: a second regime would fit the noise.

    >>> f = fit([1e3, 1e6, 1e9], [1e-5 + 1e3 / 1e10, 1e-5 + 1e6 / 1e10, 1e-5 + 1e9 / 1e10])
    >>> round(f.alpha * 1e6, 3), round(f.bandwidth / 1e9, 3), round(f.r2, 6), f.split_bytes
    (10.0, 10.0, 1.0, inf)
    """
    import numpy as np

    S = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    lt = np.log(t)

    def error(pred: Any) -> float:
        return float(np.sum((lt - np.log(pred)) ** 2))

    a, inv = _line(S, t)
    line = a + S * inv
    best = (error(line), Fit(a, 1 / inv if inv > 0 else math.inf, 0.0))
    within = spread is not None and all(lo <= x <= hi for (lo, hi), x in zip(spread, line, strict=True))
    tried = range(0) if within or best[0] <= 1e-4 * len(S) else range(1, len(S) - 1)  # one line that fits
    for k in tried:  # the second regime needs two points to have a slope
        a1, i1 = _line(S[:k], t[:k])
        a2, i2 = _line(S[k:], t[k:])
        pred = np.where(S >= S[k], a2 + S * i2, a1 + S * i1)
        e = error(pred)
        if e < best[0] / 2:
            best = (e, Fit(a1, 1 / i1 if i1 > 0 else math.inf, 0.0, float(S[k]), a2, 1 / i2 if i2 > 0 else math.inf))
    ss = float(np.sum((lt - lt.mean()) ** 2))
    r2 = 1.0 - best[0] / ss if ss > 0 else 1.0
    return replace(best[1], r2=r2)


#: a fit predicts another run at a size within the larger of this and that size's own run-to-run spread
CROSS_RUN_TOLERANCE = 0.25


def cross_run_check(predict: Any, run1: list[tuple[float, float]], run2: list[tuple[float, float]]
                    ) -> list[tuple[float, float, float, float, bool]]:
    """Run 1's fit (``predict(bytes) -> seconds``) against run 2, size by size: ``(bytes, fit error, run-to-run
    spread, allowed, ok)``, where fit error = |predict / run 2's median - 1|, spread = |run 2's median / run 1's
    median - 1| (the machine repeating itself, no fit involved) and allowed = max(:data:`CROSS_RUN_TOLERANCE`,
    spread): no model predicts a run better than the machine repeats it.  ``run1``/``run2``: (bytes, median s).

    >>> rows = cross_run_check(lambda s: 1e-5, [(8, 1e-5), (64, 1e-5)], [(8, 2e-5), (64, 1.1e-5)])
    >>> [(r[0], round(r[1], 3), round(r[2], 3), r[4]) for r in rows]
    [(8, 0.5, 1.0, True), (64, 0.091, 0.1, True)]
    """
    out = []
    for (s1, med1), (s2, med2) in zip(run1, run2, strict=True):
        if s1 != s2:
            raise ValueError(f"the runs measured different sizes: {s1} and {s2}")
        err, spread = abs(predict(s2) / med2 - 1), abs(med2 / med1 - 1)
        allowed = max(CROSS_RUN_TOLERANCE, spread)
        out.append((s2, err, spread, allowed, err <= allowed))
    return out


def _message(collective: str, nbytes: int, ranks: int) -> int:
    """The buffer size actually used: float32 elements, divisible by the ranks for gather/scatter/all-to-all."""
    step = 4 * (ranks if collective in ("all_gather", "reduce_scatter", "all_to_all") else 1)
    return max(step, (nbytes + step - 1) // step * step)


def _op(dist: Any, collective: str, nbytes: int, group: Any, ranks: int, rank_in_group: int, send: Any,
        recv: Any) -> Any:
    """A callable running one ``collective`` of an ``nbytes`` message in ``group``, on views of the two
    buffers ``send`` and ``recv`` (zeros: sums stay 0, never inf or subnormal); None for a rank with no part
    in it."""
    n = nbytes // 4
    x, out = send[:n], recv[:n]  # views made once: slicing per call would add to a fast network's latency
    if collective == "all_reduce":
        return lambda: dist.all_reduce(x, group=group)
    if collective == "all_gather":  # the message is the gathered output
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        part = send[:n // ranks]
        return lambda: gather(out, part, group=group)
    if collective == "reduce_scatter":  # the message is the input
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        part = recv[:n // ranks]
        return lambda: scatter(part, x, group=group)
    if collective == "all_to_all":
        return lambda: dist.all_to_all_single(out, x, group=group)
    # send/recv: pairs (0, 1), (2, 3), ... of the group; an odd last rank idles
    peers = dist.get_process_group_ranks(group) if group is not None else list(range(ranks))
    me = rank_in_group
    if me % 2 == 0 and me + 1 < ranks:
        return lambda: dist.send(x, peers[me + 1], group=group)
    if me % 2 == 1:
        return lambda: dist.recv(out, peers[me - 1], group=group)
    return None


def measure(collectives: tuple[str, ...], sizes: tuple[int, ...], repeats: int, group: Any, ranks: int,
            rank_in_group: int, device: Any, *, budget: float = 1.0) -> dict[str, list[tuple[int, float, float, float]]]:
    """Per collective, (message bytes, median, q1, q3 seconds) per size.  Each sample starts at a barrier
    and times a batch of back-to-back calls (:data:`BATCH_SECONDS` of them, as nccl-tests times
    iterations) on every rank; the slowest rank's time per call is the sample's.  Samples are taken in
    rounds over every (collective, size), so a machine that slows down for a while slows every size alike
    instead of bending the fit.  Big sizes take fewer samples so each costs about ``budget`` seconds (at
    least 3)."""
    import torch
    import torch.distributed as dist

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    # NCCL's barrier on its own guesses the GPU from the rank in the group (torch 2.4): name it
    ids = [device.index] if device.type == "cuda" else None

    def barrier() -> None:
        dist.barrier(group=group, device_ids=ids)

    # every tensor on the measuring device: NCCL reduces no CPU tensors
    largest = max(_message(c, s, ranks) for c in collectives for s in sizes) // 4
    send, recv = torch.zeros(largest, device=device), torch.zeros(largest, device=device)
    pairs = []  # (collective, message bytes, call, calls per batch, number of samples)
    for c in collectives:
        for size in sizes:
            nbytes = _message(c, size, ranks)
            op = _op(dist, c, nbytes, group, ranks, rank_in_group, send, recv)
            run, idle = op or (lambda: None), op is None
            run()  # warm-up
            sync()
            barrier()
            t0 = time.perf_counter()
            run()
            sync()
            once = time.perf_counter() - t0
            # a rank with no part (the odd one out of send/recv) takes 1 us a call: it must not size the batch
            inner = 1 if idle else max(1, min(10_000, math.ceil(BATCH_SECONDS / max(once, 1e-7))))
            k = max(3, min(repeats, int(budget / max(once * inner, 1e-6))))
            # every rank must agree on the counts: the largest batch and the smallest number of samples
            counts = torch.tensor([-k, inner], dtype=torch.int64, device=device)
            dist.all_reduce(counts, op=dist.ReduceOp.MAX, group=group)
            pairs.append((c, nbytes, run, int(counts[1]), int(-counts[0])))
    samples = torch.zeros(len(pairs), max(p[4] for p in pairs), dtype=torch.float64)
    for i in range(samples.shape[1]):
        for j, (_, _, run, inner, k) in enumerate(pairs):
            if i < k:
                barrier()
                t0 = time.perf_counter()
                for _ in range(inner):
                    run()
                sync()
                samples[j, i] = (time.perf_counter() - t0) / inner
    slowest = samples.to(device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX, group=group)
    out: dict[str, list[tuple[int, float, float, float]]] = {c: [] for c in collectives}
    for (c, nbytes, _, _, k), row in zip(pairs, slowest.cpu().tolist(), strict=True):
        values = sorted(row[:k])
        q = statistics.quantiles(values, n=4, method="inclusive")
        out[c].append((nbytes, statistics.median(values), q[0], q[2]))
    return out


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' bus factor of ``collective`` on ``ranks`` (send/recv: 1; one rank: 1)."""
    return BUS_FACTORS["send" if collective == "send_recv" else collective](ranks) if ranks > 1 else 1.0


@dataclass(frozen=True)
class PointBandwidth:
    """One measured point of a collective as nccl-tests reports it: its message ``nbytes``, the ``median``
    seconds, the interquartile range over the median (``spread``), the algorithm bandwidth (bytes / time) and the
    bus bandwidth (algbw x :func:`bus_factor`) in GB/s, and the fit's time over the measured one, less 1."""

    nbytes: float
    median: float
    spread: float
    algbw_gb_s: float
    busbw_gb_s: float
    fit_error: float


def point_bandwidths(collective: str, m: Any) -> list[PointBandwidth]:
    """nccl-tests' columns for every point of ``m`` (a :class:`roofline.hardware.system.MeasuredCollective` of
    ``collective``)."""
    bus = bus_factor(collective, m.ranks)
    out = []
    for nbytes, med, q1, q3 in m.points:
        alg = nbytes / med / 1e9
        out.append(PointBandwidth(nbytes, med, (q3 - q1) / med, alg, alg * bus, m.time(nbytes) / med - 1))
    return out


def measure_tiers(dist: Any, torch: Any, device: Any, backend: str, wanted: tuple[str, ...], quick: bool,
                  repeats: int | None, timeout_s: float, one_rank: bool = False) -> tuple[Any, list[Any], dict[str, Any]]:
    """Every tier's collectives measured and fitted on this rank (all ranks call it together).  ``one_rank``:
    on a single rank, run every collective anyway on a one-rank "tier" (the backend's code path runs; no
    network is measured, so the system returned then describes none).

    Returns (the measured System, each (scope, collective, MeasuredCollective) in order, facts for the
    report: rank, world, local, nodes, sizes, wall seconds).  Every rank has finished when it returns."""
    rank, world = dist.get_rank(), dist.get_world_size()
    launch = launch_env()
    local = launch["LOCAL_WORLD_SIZE"] or world
    nodes = world // local
    if world % local:
        raise RooflineError(f"{world} ranks are not whole nodes of {local}")
    on = torch.device("cuda", launch["LOCAL_RANK"] or 0) if backend == "nccl" else torch.device("cpu")
    if on.type == "cuda":
        torch.cuda.set_device(on)
    sizes = QUICK_SIZES if quick else (*FULL_SIZES, 1 << 30)
    repeats = repeats or (21 if quick else 31)
    tiers = _tier_groups(dist, rank, world, local, nodes, timedelta(seconds=timeout_s), one_rank)
    from roofline.hardware.system import MeasuredCollective

    results: dict[str, dict[str, MeasuredCollective]] = {}
    fitted: list[Any] = []
    t_start = time.perf_counter()
    for scope, group, ranks, me in tiers:
        results[scope] = {}
        for c, points in measure(wanted, sizes, repeats, group, ranks, me, on).items():
            f = fit([p[0] for p in points], [p[1] for p in points], [(p[2], p[3]) for p in points])
            points_f = tuple((float(s), m, q1, q3) for s, m, q1, q3 in points)
            results[scope][c] = MeasuredCollective(backend, ranks, points=points_f, **asdict(f))
            fitted.append((scope, c, results[scope][c]))
    dist.barrier(device_ids=[on.index] if on.type == "cuda" else None)  # every rank done: only now is anything written
    facts = {"rank": rank, "world": world, "local": local, "nodes": nodes, "sizes": len(sizes),
             "wall_seconds": time.perf_counter() - t_start}
    system = build_system(results, device, local, nodes, backend, repeats) if world > 1 else None
    return system, fitted, facts


def _tier_groups(dist: Any, rank: int, world: int, local: int, nodes: int, timeout: timedelta,
                 one_rank: bool = False) -> list[tuple[str, Any, int, int]]:
    """(scope, group, ranks, this rank's index) per tier: every node's ranks (node tier), and the ranks with the
    same local rank across nodes (cluster; every local rank's group at once, as a job whose every device talks
    across nodes); each with the timeout (new_group's own default is torch's 10 or 30 minutes)."""
    tiers: list[tuple[str, Any, int, int]] = []
    if local > 1:
        groups = ([dist.new_group(list(range(k * local, (k + 1) * local)), timeout=timeout) for k in range(nodes)]
                  if nodes > 1 else [None])
        tiers.append(("node", groups[rank // local], local, rank % local))
    if nodes > 1:
        cross = [dist.new_group(list(range(j, world, local)), timeout=timeout) for j in range(local)]
        tiers.append(("cluster", cross[rank % local], nodes, rank // local))
    if not tiers and world == 1 and one_rank:
        tiers.append(("one rank", None, 1, 0))
    elif not tiers:
        raise RooflineError("one rank measures no network: launch at least 2 (--nproc-per-node 2)")
    return tiers


def build_system(results: dict[str, dict[str, Any]], device: Any, local: int, nodes: int, backend: str,
                 repeats: int) -> Any:
    """The system of what was measured: per tier, its all-reduce as the tier's bandwidth and latency (bus
    bandwidth and alpha per step, for the cost model's other collectives and group sizes), and every
    collective's own fit in ``measured``."""
    from roofline.bench.machine import now
    from roofline.engine.collectives import steps
    from roofline.hardware.device import Provenance
    from roofline.hardware.system import NetworkTier, System

    tiers = []
    for scope, by in results.items():
        name = "all_reduce" if "all_reduce" in by else next(iter(by))
        m = by[name]
        bus = (m.bandwidth2 if m.split_bytes < math.inf else m.bandwidth) * bus_factor(name, m.ranks)  # large messages'
        alpha = m.alpha / max(1, steps(name, m.ranks))  # the small messages'
        bus = bus if bus < math.inf else 1e18
        prov = Provenance(kind="measured", source=f"roofline.bench.network ({backend})", method=(
            f"torch.distributed {backend}: {name} fitted to alpha-beta over {len(m.points)} sizes, "
            f"up to {repeats} barrier-timed batches each (slowest rank; at least 3 for the largest), taken in "
            f"rounds over every collective and size, {m.ranks} ranks"), date=now(), repeats=repeats)
        tiers.append(NetworkTier(f"{backend} {scope}", scope, bus, alpha, "switch",
                                 local if scope == "cluster" else 0, (), False, prov, dict(by)))
    return System(f"measured ({backend}, {nodes} x {local})", device, local, nodes, tuple(tiers))



if __name__ == "__main__":  # not the entry point: say which one is, in one line (torchrun's variables first)
    import sys

    try:
        launch_env()
        raise RooflineError("roofline.bench.network measures; run the bench as 'torchrun --nproc-per-node N -m "
                            "roofline.commands.bench_network " + " ".join(sys.argv[1:]) + "' ('roofline bench "
                            "--network' prints the line)")
    except RooflineError as exc:
        print(f"roofline: error: network bench: {exc}", file=sys.stderr)
        sys.exit(2)
