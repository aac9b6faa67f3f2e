"""What many layouts on one system share, computed once: per-shard forward times and per-group collectives.

A shard is one device's part of a step (heads and widths / tp, tokens / cp, experts / ep); its ops are
timed at their roofline time on the device's roofs (:func:`roofline.core.formula.roofline_times`, the roofs
the LLM model uses: :func:`roofline.llm.metrics.device_ceilings`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from roofline.core.formula import roofline_times
from roofline.engine.collectives import cost as collective_cost
from roofline.hardware.system import System
from roofline.llm.basis import basis, evaluate, experts_touched
from roofline.llm.metrics import device_ceilings
from roofline.llm.recompute import module_masks
from roofline.llm.spec import Precisions
from roofline.llm.table import EXP, FULL, KEY, KEYW, LINK, PAIR, PAIRW, build_table
from roofline.llm.training import TrainingRun, forward_ops, split_queries, stage_params, table_masks, training_ceilings
from roofline.planner.forecast import ShardForecast, collective_efficiency, shard_forecast, shard_forecasts

if TYPE_CHECKING:
    from roofline.llm.spec import ServingRun


@dataclass(frozen=True)
class Shard:
    """Per device, one micro-batch: forward time and FLOPs of the layer ops (all layers) and of the first and
    last stage's extra ops, the attention core's time, and the parameters held."""

    layers_time: float
    layers_flops: float
    attention_time: float
    first_time: float
    last_time: float
    first_flops: float
    last_flops: float
    layer_params: float  # every layer's, experts included
    first_params: float
    last_params: float
    expert_params: float  # the routed experts' part of layer_params (E / ep experts per device)
    attention_flops: float  # the attention core's
    gemm_params: float  # the GEMM weights' part of layer_params (fp8 caches their fp8 copy)
    #: per recompute module (:mod:`roofline.llm.recompute`), its rows' forward (seconds, FLOPs) over every layer
    modules: tuple[tuple[str, float, float], ...] = ()

    def module_times(self) -> dict[str, float]:
        return {m: t for m, t, _ in self.modules}

    def module_flops(self) -> dict[str, float]:
        return {m: f for m, _, f in self.modules}


def _edges(first: float, last: float, pp: int) -> float:
    """The first stage's extra ops (embedding) and the last's (final norm, lm_head): on one device without a
    pipeline, else the slower edge stage's."""
    return max(first, last) if pp > 1 else first + last


class Cache:
    """What many layouts on one system share: per-shard forward times and per-group collective times."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.shards: dict[tuple[Any, ...], Shard] = {}
        self.collectives: dict[tuple[Any, ...], tuple[float, tuple[str, ...], float]] = {}
        self.times: dict[tuple[Any, ...], float] = {}
        self.memo: dict[tuple[Any, ...], Any] = {}  # per-layout parts many layouts share (keyed by run_key)
        self._runs: dict[int, Any] = {}
        self.forecasts: dict[tuple[Any, ...], ShardForecast] = {}
        self.efficiencies: dict[float, float] = {}

    def run_key(self, run: Any) -> int:
        """A cheap key for ``run`` (hashing a model's whole config per layout costs more than estimating it):
        its id, the run kept alive here so the id is not reused."""
        k = id(run)
        if self._runs.setdefault(k, run) is not run:  # pragma: no cover - ids are unique among live objects
            raise AssertionError("run key reused")
        return k

    def ceilings(self, run: TrainingRun) -> dict[str, float]:
        """The roofs ``run``'s ops take on the system's device (:func:`roofline.llm.training.training_ceilings`)."""
        key = ("ceilings", self.run_key(run))
        got = self.times.get(key)
        if got is None:
            got = self.times[key] = training_ceilings(self.system.device, run)  # type: ignore[assignment]
        return got  # type: ignore[return-value]

    def shard(self, run: TrainingRun, tp: int, cp: int, ep: int, micro_batch: int) -> Shard:
        key = (self.run_key(run), tp, cp, ep, micro_batch)
        got = self.shards.get(key)
        if got is None:
            got = self.shards[key] = _shard_on(run, tp, cp, ep, micro_batch, self.system.device)
        return got

    def shard_forecast(self, run: TrainingRun, tp: int, cp: int, ep: int, micro_batch: int) -> ShardForecast:
        """The forecast of one micro-batch on the shard (:func:`roofline.planner.forecast.shard_forecast`), once
        per shard shape: every layout with the same tp, cp, ep and micro-batch shares it."""
        key = (self.run_key(run), tp, cp, ep, micro_batch)
        got = self.forecasts.get(key)
        if got is None:
            got = self.forecasts[key] = shard_forecast(run, tp, cp, ep, micro_batch, self.system.device)
        return got

    def achievable_bandwidth(self) -> float:
        """The device's sustained main-memory bandwidth (its peak without a published figure)."""
        got = self.times.get(("achievable bandwidth",))
        if got is None:
            dev = self.system.device
            got = self.times[("achievable bandwidth",)] = float(dev.achievable_bandwidth(dev.main_memory))
        return got

    def prefetch_forecasts(self, run: TrainingRun, shards: set[tuple[int, int, int, int]]) -> None:
        """The forecasts of every shard ``(tp, cp, ep, micro_batch)`` a search will meet, in one batch."""
        k = self.run_key(run)
        todo = sorted(sh for sh in shards if (k,) + tuple(sh) not in self.forecasts)
        for start in range(0, len(todo), 256):
            chunk = todo[start:start + 256]
            for sh, f in shard_forecasts(run, chunk, self.system.device).items():
                self.forecasts[(k,) + tuple(sh)] = f

    def collective_efficiency(self, message_bytes: float) -> float:
        """The device's collective efficiency at ``message_bytes`` (:func:`roofline.planner.forecast.collective_efficiency`)."""
        got = self.efficiencies.get(message_bytes)
        if got is None:
            got = self.efficiencies[message_bytes] = collective_efficiency(self.system.device, message_bytes)
        return got

    def serving_stage(self, run: ServingRun, tp: int, cp: int, ep: int, pp: int, micro_batch: int) -> float:
        """One pipeline stage's decode step for a micro-batch (the mean context of the generation): each of cp
        devices reads 1/cp of the KV cache; each of ep devices holds 1/ep of the experts and computes the
        routed tokens of its ep group's micro-batches that land on them."""
        key = ("decode", run, tp, cp, ep, pp, micro_batch)
        got = self.times.get(key)
        if got is None:
            a = run.arch
            table = build_table(a, "decode", tp, True, False)
            B = basis(a, micro_batch, 1, run.prompt + 1, run.prompt + run.gen, moe_routing="expected").copy()
            B[:, [KEY, KEYW, PAIR, PAIRW, FULL]] /= cp
            if ep > 1:
                B[:, EXP] = experts_touched(a.experts, a.top_k, micro_batch * ep) / ep
            t = _op_times(table, B, run.precisions, self.system.device)
            layer, first, last, _ = table_masks(table)
            c = table.counts
            edges = _edges(float(t[first] @ c[first]), float(t[last] @ c[last]), pp)
            got = self.times[key] = float(t[layer] @ c[layer]) / pp + edges
        return got

    def serving_prefill(self, run: ServingRun, tp: int, cp: int) -> float:
        """The prompt of one sequence through every layer, split over cp devices (compute only)."""
        key = ("prefill", run, tp, cp)
        got = self.times.get(key)
        if got is None:
            table = build_table(run.arch, "prefill", tp, True, False)
            B = split_queries(basis(run.arch, 1, run.prompt, run.prompt), cp)
            t = _op_times(table, B, run.precisions, self.system.device)
            compute = table.roles != LINK
            got = self.times[key] = float(t[compute] @ table.counts[compute])
        return got

    def collective(self, name: str, nbytes: float, ranks: int, per_node: int, per_domain: int | None = None
                   ) -> tuple[float, tuple[str, ...]]:
        got = self._collective(name, nbytes, ranks, per_node, per_domain)
        return got[0], got[1]

    def _collective(self, name: str, nbytes: float, ranks: int, per_node: int, per_domain: int | None = None
                    ) -> tuple[float, tuple[str, ...], float]:
        """(bound seconds, tiers crossed, bound seconds of the node-tier parts) of one call; ``per_domain``: the
        group's members in each scale-up domain (:func:`roofline.engine.collectives.cost`)."""
        key = (name, nbytes, ranks, per_node, per_domain)
        got = self.collectives.get(key)
        if got is None:
            c = collective_cost(name, nbytes, self.system, ranks=ranks, per_node=per_node, per_domain=per_domain)
            got = self.collectives[key] = (c.time, tuple(dict.fromkeys(p.tier for p in c.parts)),
                                           sum(p.time for p in c.parts if p.tier == "node"))
        return got

    def collective_forecast(self, name: str, nbytes: float, ranks: int, per_node: int,
                            per_domain: int | None = None) -> float:
        """Forecast seconds of one call: its node-tier (NVLink) parts over the device's NCCL efficiency
        (:meth:`collective_efficiency`), every other part at its bound.  The catalog's curves are NVLink
        measurements -- A100: nccl-tests issue 149, ~230 of 300 GB/s NVLink 3 bus bandwidth; H100: nccl-tests
        issue 212, 370 of 450 GB/s NVLink 4 -- of collectives: no cited figure is in the catalog for the
        cluster tier (InfiniBand, RoCE) or for point-to-point sends, so those stay at 1 (their bound)."""
        t, _, node = self._collective(name, nbytes, ranks, per_node, per_domain)
        if name == "send_recv" or node <= 0:
            return t
        return t - node + node / self.collective_efficiency(float(nbytes))


def _times_of(table: Any, v: dict[str, np.ndarray], precisions: Precisions, device: Any,
              c: dict[str, float] | None = None) -> np.ndarray:
    """Each op's roofline time on ``device`` (per count): its role's compute roof (``c``, default the LLM
    model's), main memory."""
    c = device_ceilings(device, precisions) if c is None else c
    peak = np.array([c["peak_gemm"], c["peak_attn"], c["peak_vector"], c["peak_vector"]])[table.roles]
    return roofline_times(v["flops"], v["bytes_read"] + v["bytes_written"], peak, c["bandwidth"])[2]


def _op_times(table: Any, B: np.ndarray, precisions: Precisions, device: Any) -> np.ndarray:
    return _times_of(table, {k: x[0] for k, x in evaluate(table, B, precisions.bytes()).items()}, precisions, device)


def _shard_on(run: TrainingRun, tp: int, cp: int, ep: int, micro_batch: int, device: Any) -> Shard:
    table, v = forward_ops(run, tp, cp, ep, micro_batch)
    t = _times_of(table, v, run.precisions, device, training_ceilings(device, run))
    layer, first, last, core = table_masks(table)
    counts = table.counts
    held = stage_params(run.arch, tp, ep)
    f = v["flops"]
    mods = tuple((name, float(t[rows] @ counts[rows]), float(f[rows] @ counts[rows]))
                 for name, rows in module_masks(table, core).items())
    return Shard(float(t[layer] @ counts[layer]), float(f[layer] @ counts[layer]), float(t[core] @ counts[core]),
                  float(t[first] @ counts[first]), float(t[last] @ counts[last]), float(f[first] @ counts[first]),
                  float(f[last] @ counts[last]), held.layers, held.first, held.last, held.experts,
                  float(f[core] @ counts[core]), held.gemm, mods)
