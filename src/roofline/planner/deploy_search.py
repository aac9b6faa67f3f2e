"""The deployment search of ``roofline plan --serve``: every deployment priced, the short list simulated.

Enumerated on the system's devices (all of them, as AIConfigurator's ``--total_gpus``):

* **aggregated**: replicas of one worker layout (tp x pp, an MoE model's ep dividing tp, attention data-parallel
  on or off) filling the devices, at each max batch of :data:`BATCHES` and each max tokens per step of
  :data:`CHUNKS` (chunked prefill);
* **disaggregated**: x prefill workers and y decode workers, each pool with its own layout, x and y filling the
  devices, the decode pool at each batch of :data:`BATCHES` (a prefill worker prefills one prompt at a time).

Two stages (DESIGN: "Deployments are searched in two stages"): the **analytic filter** prices every deployment
at the mean-static statistic (:class:`~roofline.planner.deploy.Pricer`) and ranks those within the SLO by
tokens/s per device; the first ``short_list`` (twins with the same figures passed over) are then **simulated**
under Poisson arrivals (:func:`~roofline.planner.deploy_sim.best_rate`: the highest rate whose p99 TTFT and TPOT
are within the SLO) and ranked by that goodput. ``slo_stat`` picks which ranking decides (``p99``, the default,
or ``mean-static``, AIConfigurator's); both are kept. ``ROOFLINE_MAX_DEPLOYMENTS`` bounds the deployments one
search may price.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from roofline.core.errors import RooflineError
from roofline.core.limits import max_deployments
from roofline.hardware.system import System
from roofline.llm.config import Arch
from roofline.planner.deploy import PP_SIZES, Deployment, Options, Pool, Pricer, Static, tp_sizes
from roofline.planner.deploy_sim import Poisson, best_rate

#: Max batch per worker tried (sequences): powers of two, as AIConfigurator's list thins out above 64.
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: Max tokens per step tried for an aggregated replica (chunked prefill; TensorRT-LLM's default is 8192).
CHUNKS = (1024, 2048, 4096, 8192, 16384)
#: The schema ``--json`` writes, and the earlier one read back (a decode-step price per layout).
SCHEMA = "roofline.plan-serve/2"
OLD_SCHEMA = "roofline.plan-serve/1"
SLO_STATS = ("p99", "mean-static")
#: Significant digits two deployments' figures are compared to: closer ones tie (module docs of :func:`rank_key`).
TIE_DIGITS = 3
#: The simulated rate search's step from the mean-static rate (a p99 goodput is most often 0.6 to 1 of it).
RATE_STEP = 1.25


@dataclass(frozen=True)
class Row:
    """One deployment whose batch fits: its mean-static figures and, when simulated, its Poisson figures."""

    deployment: Deployment
    static: Static
    poisson: Poisson | None = None

    @property
    def simulated(self) -> bool:
        return self.poisson is not None

    def figures(self, stat: str) -> tuple[float, float, float | None, float | None]:
        """tokens/s per device, tokens/s per user, TTFT and TPOT (p99s; None when not simulated) under ``stat``."""
        p, s = self.poisson, self.static
        ttft = p.figures.ttft.p99 if p is not None and p.figures is not None else None
        tpot = p.figures.tpot.p99 if p is not None and p.figures is not None else None
        if stat == "p99" and p is not None:
            return p.tokens_per_s_per_device, p.tokens_per_s_per_user, ttft, tpot
        return s.tokens_per_s_per_device, s.tokens_per_s_per_user, ttft, tpot

    def times(self, stat: str) -> tuple[float | None, float | None]:
        """TTFT and TPOT as a row under ``stat`` shows them: the static batch's means at mean-static, else the
        p99s of :meth:`figures`."""
        if stat == "mean-static":
            return self.static.ttft, self.static.tpot
        return self.figures(stat)[2:]

    def to_dict(self, stat: str, rank: int) -> dict[str, Any]:
        dev, user, ttft, tpot = self.figures(stat)
        return {"rank": rank, "describe": self.deployment.describe(), "statistic": stat if self.simulated else
                "mean-static", "tokens_per_s_per_device": dev, "tokens_per_s_per_user": user, "ttft_p99_s": ttft,
                "tpot_p99_s": tpot, "simulated": self.simulated,
                "p99": self.poisson.to_dict() if self.poisson is not None else None,
                "mean_static": self.static.to_dict(),
                "deployment": self.deployment.to_dict()}


@dataclass(frozen=True)
class SearchResult:
    """What ``plan --serve`` answers: ``ranked`` (within the SLO, best first by ``slo_stat``: the simulated short
    list first), ``front`` (the priced deployments on the Pareto front of tokens/s per device against tokens/s
    per user, how many were ``tried`` and the search's seconds."""

    model: str
    system: System
    opts: Options
    slo_stat: str
    scheduler: str
    ranked: tuple[Row, ...]
    front: tuple[Row, ...]
    tried: int
    seconds: float
    within: int = 0  # deployments within the SLO at mean-static

    @property
    def best(self) -> Row | None:
        r = self.ranked[0] if self.ranked else None
        return r if r is not None and r.figures(self.slo_stat)[0] > 0 else None

    @property
    def simulated(self) -> tuple[Row, ...]:
        return tuple(r for r in self.ranked if r.simulated)

    def best_by(self, stat: str) -> Row | None:
        """The best row under ``stat`` (p99: among the simulated)."""
        rows = tuple(r for r in (self.simulated if stat == "p99" else self.ranked) if r.figures(stat)[0] > 0)
        return min(rows, key=lambda r: rank_key(r, stat)) if rows else None

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        o, s = self.opts, self.system
        return {"schema": SCHEMA, "model": self.model, "system": s.name, "devices": s.devices,
                "isl": o.isl, "osl": o.osl, "slo": {"ttft_s": o.slo.ttft, "tpot_s": o.slo.tpot},
                "slo_stat": self.slo_stat, "precision": o.precision, "scheduler": self.scheduler,
                "spec": o.spec.to_dict() if o.spec is not None else None, "prefix_hit": o.prefix_hit,
                "kv_overlap": o.kv_overlap, "tried": self.tried, "within_slo": self.within,
                "seconds": self.seconds,
                "ranked_by": f"tokens/s per device at the SLO ({self.slo_stat})",
                "layouts": [r.to_dict(self.slo_stat, k) for k, r in enumerate(self.ranked[:top], 1)],
                "front": [r.to_dict("mean-static", k) for k, r in enumerate(self.front, 1)]}


# -- enumeration ------------------------------------------------------------------------------------
def worker_layouts(arch: Arch, system: System) -> list[tuple[int, int, int, bool]]:
    """Every worker layout (tp, pp, ep, attention data-parallel) on the system: tp within a node dividing the
    heads, pp dividing the layers, an MoE model's ep dividing tp and the experts (module docs)."""
    out = []
    for tp in tp_sizes(arch, system):
        for pp in PP_SIZES:
            if tp * pp > system.devices or arch.layers % pp:
                continue
            eps = [e for e in range(1, tp + 1) if tp % e == 0 and arch.experts % e == 0] if arch.experts else [1]
            for ep in eps:
                out.append((tp, pp, ep, False))
            if arch.experts and tp > 1 and arch.experts % tp == 0:
                out.append((tp, pp, tp, True))
    return out


def _pool(role: str, lay: tuple[int, int, int, bool], workers: int, batch: int = 0, chunk: int = 0) -> Pool:
    tp, pp, ep, adp = lay
    return Pool(role, tp, workers, pp, ep, adp, batch, chunk)


def deployments(arch: Arch, system: System, opts: Options, fixed: dict[str, int] | None = None,
                disagg: str = "on", batches: tuple[int, ...] = BATCHES) -> Iterator[Deployment]:
    """Every deployment of the module docs: aggregated unless ``disagg`` is 'only', disaggregated unless it is
    'off' or a replica's tp/pp/ep are ``fixed``; each worker at the max ``batches``."""
    n = system.devices
    lays = [lay for lay in worker_layouts(arch, system)
            if not fixed or all(lay[("tp", "pp", "ep").index(k)] == v for k, v in fixed.items())]
    for lay in lays if disagg != "only" else []:
        size = lay[0] * lay[1]
        if n % size == 0:
            for b in batches:
                for c in CHUNKS if b > 1 else CHUNKS[-1:]:
                    if b == 1 or b - math.ceil(c / max(opts.fresh, 1)) >= 1:  # AIConfigurator's: a decode beside
                        yield Deployment((_pool("replica", lay, n // size, b, c),))
    if fixed or disagg == "off":
        return
    for pl in lays:
        for dl in lays:
            sp, sd = pl[0] * pl[1], dl[0] * dl[1]
            for x in range(1, n // sp):
                rest = n - x * sp
                if rest > 0 and rest % sd == 0:
                    for b in batches:
                        yield Deployment((_pool("prefill", pl, x, 1), _pool("decode", dl, rest // sd, b)))


def enumerate_deployments(arch: Arch, system: System, opts: Options, fixed: dict[str, int] | None = None,
                          disagg: str = "on", batches: tuple[int, ...] = BATCHES) -> list[Deployment]:
    """:func:`deployments` as a list, refused in one line past ``ROOFLINE_MAX_DEPLOYMENTS``."""
    limit, out = max_deployments(), []
    for d in deployments(arch, system, opts, fixed, disagg, batches):
        out.append(d)
        if len(out) > limit:
            raise RooflineError(f"the search of {arch.name} on {system.devices} devices has more than {limit:,} "
                                "deployments (ROOFLINE_MAX_DEPLOYMENTS); set ROOFLINE_MAX_DEPLOYMENTS higher, or "
                                "fix the replica with --layout tp=...")
    return out


# -- the two stages -----------------------------------------------------------------------------------
def _price(pricer: Pricer, found: list[Deployment]) -> list[Row]:
    """Stage one: every deployment's mean-static figures, those whose batch fits kept."""
    rows = []
    for d in found:
        s = pricer.static(d)  # None where a pool's worker or batch does not fit (Pricer.fits)
        if s is not None:
            rows.append(Row(d, s))
    return rows


def pareto(rows: list[Row]) -> list[Row]:
    """The rows no other row beats on both tokens/s per device and tokens/s per user (mean-static), by user."""
    pts = sorted(rows, key=lambda r: (-r.figures("mean-static")[1], -r.figures("mean-static")[0]))
    out: list[Row] = []
    best = -math.inf
    for r in pts:
        dev = r.figures("mean-static")[0]
        if dev > best:
            out.append(r)
            best = dev
    return out[::-1]


def rank_key(r: Row, stat: str) -> tuple[float, float, int]:
    """Best first: tokens/s per device, then per user (both to :data:`TIE_DIGITS` significant digits: closer is
    a tie, within the models' resolution), then fewer pipeline stages in all (a stage's sends are not priced)."""
    dev, user = r.figures(stat)[:2]
    return -_sig(dev), -_sig(user), sum(p.pp for p in r.deployment.pools)


def _sig(x: float) -> float:
    return float(f"{x:.{TIE_DIGITS}g}") if math.isfinite(x) else x


def _simulate_and_rank(pricer: Pricer, within: list[Row], short_list: int, scheduler: str,
                       stat: str) -> list[Row]:
    """Stage two: the first ``short_list`` rows in mean-static order whose figures differ (a twin, the same
    figures to :data:`TIE_DIGITS` digits, e.g. one prefill worker of pp 4 for four of pp 1, is passed over)
    simulated, each at the highest Poisson rate within the SLO (the search starts at its mean-static rate); the
    simulated rows ranked under ``stat`` (p99: :func:`rank_key`), then the rest in mean-static order."""
    o = pricer.opts
    head: list[Row] = []
    rest: list[Row] = []
    seen: set[tuple[float, float]] = set()
    for r in within:
        twin = rank_key(r, "mean-static")[:2]
        if len(head) == short_list or twin in seen:
            rest.append(r)
            continue
        seen.add(twin)
        start = max(r.figures("mean-static")[0] * r.deployment.devices / o.osl / RATE_STEP, 1e-3)
        life = r.static.ttft + o.osl * r.static.tpot
        head.append(Row(r.deployment, r.static, best_rate(pricer, r.deployment, scheduler, start=start,
                                                          step=RATE_STEP, lifetime=life)))
    if stat == "p99":
        head.sort(key=lambda r: rank_key(r, "p99"))
    return head + rest


def search(arch: Arch, system: System, opts: Options, *, slo_stat: str = "p99", short_list: int = 3,
           scheduler: str = "vllm", fixed: dict[str, int] | None = None, disagg: str = "on",
           batches: tuple[int, ...] = BATCHES) -> SearchResult:
    """The search of the module docs (``fixed``, ``disagg``, ``batches``: :func:`deployments`).

    >>> from roofline.catalog import resolve_system
    >>> from roofline.llm.config import load_arch
    >>> from roofline.serving.figures import Slo
    >>> r = search(load_arch("llama-3-8b"), resolve_system("dgx-h100"), Options(4000, 500, Slo(1.0, 0.05)),
    ...            short_list=1)
    >>> r.best is not None and r.best.simulated
    True
    """
    _check(arch, opts, slo_stat, short_list, scheduler, disagg)
    t0 = time.perf_counter()
    pricer = Pricer(arch, system, opts)
    found = enumerate_deployments(arch, system, opts, fixed, disagg, batches)
    rows = _price(pricer, found)
    if not rows:
        raise RooflineError(f"no deployment of {arch.name} fits {system.devices} devices of {system.name}: "
                            "add devices, or lower --precision")
    within = sorted((r for r in rows if r.static.within(opts.slo)),
                    key=lambda r: rank_key(r, "mean-static"))
    ranked = _simulate_and_rank(pricer, within, short_list, scheduler, slo_stat)
    timely = [r for r in rows if r.static.ttft <= (opts.slo.ttft or math.inf)]
    front = [f for kind in (False, True) for f in pareto([r for r in timely if r.deployment.disaggregated == kind])]
    return SearchResult(arch.name, system, opts, slo_stat, scheduler, tuple(ranked), tuple(front), len(found),
                        time.perf_counter() - t0, len(within))


def _check(arch: Arch, opts: Options, slo_stat: str, short_list: int, scheduler: str, disagg: str) -> None:
    """Each setting checked before any work, in one line: the statistic, the short list, the scheduler's name,
    and the lengths against the model's context."""
    from roofline.llm.spec import make_spec
    from roofline.serving.schedulers import get

    if slo_stat not in SLO_STATS:
        raise RooflineError(f"--slo-stat {slo_stat!r} is not one of {', '.join(SLO_STATS)}")
    if disagg not in ("on", "off", "only"):
        raise RooflineError(f"--disagg {disagg!r} is not one of on, off, only")
    if short_list < 1:
        raise RooflineError(f"--short-list must be >= 1, got {short_list}")
    get(scheduler)
    make_spec(arch, phase="generate", prompt=opts.isl, gen=opts.osl, wbits=opts.precision, abits=opts.precision,
              kvbits=opts.precision)
    if opts.spec is not None and not opts.spec.mtp:
        make_spec(opts.spec.draft, phase="generate", prompt=opts.isl, gen=opts.osl)


# -- files ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SavedPlan:
    """A ``plan --serve`` JSON read back: its ``schema``, what its figures are (``kind``: 'capacity at the SLO',
    or for an old file 'decode-step price, not a capacity'), and its layouts' rows as written."""

    schema: str
    kind: str
    layouts: tuple[dict[str, Any], ...] = field(default=())

    def deployments(self) -> list[Deployment]:
        """The typed deployments of a /2 file's rows (an old file has none)."""
        return [Deployment.from_dict(r["deployment"]) for r in self.layouts if r.get("deployment")]


def read_plan_serve(doc: Any, where: str = "plan JSON") -> SavedPlan:
    """A ``plan --serve --json`` document: ``roofline.plan-serve/2``, or an older one (``/1``, or the step-price
    file with ``"mode": "serving"`` and no schema), whose figures are labelled as decode-step prices."""
    if not isinstance(doc, dict):
        raise RooflineError(f"{where}: expected a JSON object")
    schema = doc.get("schema")
    if schema == SCHEMA:
        return SavedPlan(SCHEMA, "capacity at the SLO", tuple(doc.get("layouts", [])))
    if schema == OLD_SCHEMA or (schema is None and doc.get("mode") == "serving"):
        return SavedPlan(OLD_SCHEMA, "decode-step price, not a capacity", tuple(doc.get("layouts", [])))
    raise RooflineError(f"{where}: schema: expected {SCHEMA!r} (or the older {OLD_SCHEMA!r}), got {schema!r}")
