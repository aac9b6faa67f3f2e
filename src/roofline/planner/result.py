"""The answer of ``roofline plan`` as data: the layouts ranked (one :class:`PlanRow` each: its rank, whether
its forecast ties the best's, its cost per million tokens) and how they were found (:class:`PlanResult`,
whose :meth:`~PlanResult.to_dict` is the JSON ``--json`` writes).

:func:`plan_layouts` makes the choice the command used to: one layout timed (``--layout`` naming every key
the search varies, or sp=/stages=, or any ``--layout`` when serving), the search's best with the named keys
fixed, or, when none of those fits, the named layout with the rest at their defaults.  When no layout is
ranked at all it raises the one line that says which constraint failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roofline.core.errors import RooflineError
from roofline.core.text import display
from roofline.core.units import format_gib
from roofline.hardware.system import System
from roofline.llm.training import TrainingRun
from roofline.planner.forecast import tied
from roofline.planner.layout import SEARCHED, Layout, layout_keys, names_one_layout
from roofline.planner.search import Plan, no_layout_divides, plan
from roofline.planner.serve import ServingEstimate, ServingRun, estimate_serving
from roofline.planner.train import Estimate, estimate

#: the largest price taken (USD per device-hour): far above any rental, small enough that a cost per token
#: stays a finite number
MAX_PRICE = 1e6
#: the training forecast's overlap rules, in the order :func:`~roofline.planner.search.plan` takes them
RULES = ("dp", "tp", "pp", "ep")
#: the seconds a search is taken to last at least, for its rate (a search of no measurable time)
MIN_SEARCH_SECONDS = 1e-9


@dataclass(frozen=True)
class PlanRow:
    """One ranked layout: its estimate, its rank (1: the best), whether its forecast lies within the stated
    error of the best's (:func:`~roofline.planner.forecast.tied`; training only, the best tied with itself)
    and what a million tokens cost on it (None: no price given)."""

    rank: int
    estimate: Estimate | ServingEstimate
    tied: bool = False
    usd_per_mtok: float | None = None

    @property
    def marked_tied(self) -> bool:
        """Whether the table marks the row as tied with the best ('~' after the rank): below the best, tied."""
        return self.rank > 1 and self.tied

    def to_dict(self) -> dict[str, Any]:
        """The row of the JSON ``layouts`` list (the published keys)."""
        e, lay = self.estimate, self.estimate.layout
        out: dict[str, Any] = {"layout": e.describe(), "tp": lay.tp, "pp": lay.pp, "dp": lay.dp,
                               "seconds": e.time, "bound_seconds": e.bound, "tokens_per_second": e.tokens_per_second,
                               "exposed_comm_seconds": e.exposed_comm, "binding": e.binding, "fits": e.fits,
                               "memory": e.memory,
                               "comms": [{"name": c.name, "seconds": c.time, "tiers": list(c.tiers)} for c in e.comms]}
        if isinstance(e, ServingEstimate):
            out["ttft_seconds"] = e.ttft
        else:
            out.update(cp=lay.cp, ep=lay.ep, zero=lay.zero, micro_batch=lay.micro_batch, recompute=lay.recompute,
                       interleave=lay.interleave, micro_batches=e.micro_batches, bubble_share=e.bubble_share,
                       stage_layers=list(e.stage_layers), memory_stage=e.memory_stage, precision=e.run.precision,
                       zero_note=e.zero, flops_per_device=e.flops, forecast_seconds=e.time, mfu=e.mfu,
                       model_tflops_per_device=e.model_tflops_per_device, tied_with_best=self.tied,
                       overlap_rules={"dp": lay.overlap_dp, "tp": lay.overlap_tp, "pp": lay.overlap_pp,
                                      "ep": lay.overlap_ep})
        if self.usd_per_mtok is not None:
            out["usd_per_million_tokens"] = self.usd_per_mtok
        return out


@dataclass(frozen=True)
class PlanResult:
    """What ``roofline plan`` answers: the rows ranked (best first) of ``run`` on ``system``, how many layouts
    were tried, and how: ``search`` (None: one layout timed), the ``fixed`` Layout fields every layout tried
    kept, ``none_fit`` (none of the search's with them fitted: the named layout timed, the rest at their
    defaults), serving's
    ``overlap`` and training's overlap ``rules``, the ``price`` per device-hour."""

    run: TrainingRun | ServingRun
    system: System
    rows: tuple[PlanRow, ...]
    tried: int
    search: Plan | None = None
    fixed: dict[str, Any] = field(default_factory=dict)
    none_fit: bool = False
    overlap: float = 0.0
    rules: dict[str, bool] = field(default_factory=dict)
    price: float | None = None

    @property
    def serving(self) -> bool:
        return isinstance(self.run, ServingRun)

    @property
    def mode(self) -> str:
        return "serving" if self.serving else "training"

    @property
    def best(self) -> Estimate | ServingEstimate:
        return self.rows[0].estimate

    @property
    def estimates(self) -> list[Estimate | ServingEstimate]:
        return [r.estimate for r in self.rows]

    @property
    def one_layout(self) -> bool:
        """Whether one layout was timed rather than a search's best ranked."""
        return self.search is None or self.none_fit

    @property
    def search_rate(self) -> float:
        """Layouts estimated per second of the search (0 without one)."""
        if self.search is None:
            return 0.0
        return self.search.tried / max(self.search.seconds, MIN_SEARCH_SECONDS)

    @property
    def uncalibrated(self) -> str:
        """'' when the system's device has a calibration (cited, or the user's); else what its forecasts are, said
        wherever one is shown (issue 48): every op at its roofline bound, the forecast above the bound only by what
        the layout adds (bubbles, exposed communication, overheads), so not alike with a calibrated device's."""
        from roofline.engine.forecast import effective_calibration

        if effective_calibration(self.system.device) is not None:
            return ""
        return "uncalibrated: ops forecast at their bound, no cited efficiencies for this device"

    @property
    def ranked_by(self) -> str:
        return "step seconds" if self.serving else "forecast step seconds"

    @property
    def shape(self) -> str:
        """The run's shape: 'global batch 64 x 4096 tokens', or serving's batch, prompt and generated tokens."""
        r = self.run
        if isinstance(r, ServingRun):
            return f"batch {r.batch} per replica, prompt {r.prompt}, gen {r.gen}"
        return f"global batch {r.global_batch} x {r.seq} tokens"

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``--json`` writes: the run, the system, how the layouts were ranked, every row."""
        s = self.system
        how = {"overlap": self.overlap} if self.serving else {"overlap_rules": dict(self.rules)}
        return {"model": self.run.arch.name, "mode": self.mode, "system": s.name, "nodes": s.nodes,
                "devices": s.devices, "shape": self.shape, "tried": self.tried, "ranked_by": self.ranked_by, **how,
                "uncalibrated": self.uncalibrated or None,
                "layouts": [r.to_dict() for r in self.rows]}


def system_where(system: System) -> str:
    """'DGX H100 x 2 (16 devices)': the system as the plan's lines and errors name it (its name is data)."""
    return f"{display(system.name)} x {system.nodes} ({system.devices} devices)"


def plan_rows(estimates: list[Estimate | ServingEstimate], price: float | None) -> tuple[PlanRow, ...]:
    """The rows of ``estimates`` (ranked, best first): rank, tie with the best (training), cost at ``price``."""
    best = estimates[0].time
    return tuple(PlanRow(k, e, tied=isinstance(e, Estimate) and tied(e.time, best),
                         usd_per_mtok=e.usd_per_million_tokens(price) if price else None)
                 for k, e in enumerate(estimates, 1))


def plan_layouts(run: TrainingRun | ServingRun, system: System, *, layout: str | None = None, top: int = 10,
                 overlap: float = 0.0, rules: dict[str, bool] | None = None,
                 price: float | None = None) -> PlanResult:
    """The layouts of ``run`` on ``system`` ranked (see the module): ``layout`` is ``--layout``'s text
    (:func:`~roofline.planner.layout.layout_keys`), ``rules`` training's overlap rules by :data:`RULES`
    (default dp, pp and ep on, tp off), ``price`` USD per device-hour."""
    rules = dict(rules) if rules is not None else {"dp": True, "tp": False, "pp": True, "ep": True}
    serving = isinstance(run, ServingRun)
    keys: dict[str, Any] = {}
    if layout:
        keys = layout_keys(layout, overlap)
        if keys.get("etp") and not run.arch.experts:
            raise RooflineError(f"--layout etp={keys['etp']}: etp splits the routed experts, and {run.arch.name} is a "
                                "dense model (no experts)")
        if not serving:
            keys.update({f"overlap_{k}": v for k, v in rules.items()})
    fixed = {k: v for k, v in keys.items() if k in SEARCHED}

    def result(estimates: list[Estimate | ServingEstimate], tried: int, search: Plan | None = None,
               none_fit: bool = False) -> PlanResult:
        return PlanResult(run, system, plan_rows(estimates, price), tried, search, fixed, none_fit, overlap, rules,
                          price)

    if layout and (serving or names_one_layout(keys)):
        return result([_one(run, Layout(**keys), system)], 1)
    p = plan(run, system, top=top, overlap=overlap, fixed=fixed,
             overlaps=(rules["dp"], rules["tp"], rules["pp"], rules.get("ep", True)),
             **({"etp": keys["etp"]} if keys.get("etp") else {}))
    if not p.ranked and fixed:  # none fits (or none divides): the named layout, the rest at their defaults, timed
        return result([_one(run, Layout(**keys), system)], 1, p, none_fit=True)  # or its constraint, in one line
    if not p.ranked:
        raise no_layout_error(p)
    return result(list(p.ranked), p.tried, p)


def _one(run: TrainingRun | ServingRun, lay: Layout, system: System) -> Estimate | ServingEstimate:
    return estimate_serving(run, lay, system) if isinstance(run, ServingRun) else estimate(run, lay, system)


def no_layout_error(p: Plan) -> RooflineError:
    """The one line when a search ranks no layout: the constraint that failed, and the nearest that pass."""
    name, where = display(p.run.arch.name), system_where(p.system)
    if p.tried == 0 and isinstance(p.run, TrainingRun):
        return RooflineError(f"no layout of {name} divides {where}: {no_layout_divides(p.run, p.system)}")
    if p.tried == p.uneven:
        return RooflineError(f"no layout of {name} divides {where}: every one of the {p.tried} splits a group "
                             "unevenly over the nodes; use a node count that is a power of two")
    near = "; ".join(f"{e.describe()} needs {format_gib(e.memory_total)}" for e in p.nearest)
    return RooflineError(f"no layout of {name} fits {where}: {p.tried - p.uneven} tried, all past the device's "
                         f"{format_gib(p.nearest[0].capacity)} of memory; nearest: {near}; add nodes, or shorten "
                         "the sequences")
