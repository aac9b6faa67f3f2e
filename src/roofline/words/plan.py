"""The words of ``roofline plan``, read off a :class:`~roofline.planner.result.PlanResult`: the answer, the
line saying how the layouts were found, the settings, the notes, the best layout's communication and memory,
and what each time column is.  The table between them is :mod:`roofline.render.plan`'s."""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.text import display
from roofline.core.units import format_gib, format_seconds
from roofline.planner.forecast import STATED_ERROR
from roofline.planner.overlap import describe
from roofline.planner.result import PlanResult, system_where
from roofline.planner.serve import ServingEstimate

#: how the table's model FLOPs are counted (:func:`roofline.llm.training.training_flops`)
FLOP_NOTE = ("MFU and model TFLOP/s per device: model FLOPs = 3 x the forward's (6 N per token for the GEMMs, "
             "lm_head included, plus attention counted causal: the query-key pairs at or below the diagonal, "
             "4 d per pair forward), recomputation not counted, over the forecast step time and the dense matrix "
             "peak at the GEMMs' precision; ~ marks a forecast within the planner's stated error "
             f"({STATED_ERROR:.0%}) of the best: tied")
#: what each time column of the serving table is
SERVING_GLOSSARY = ("times: per token = one decode step of every sequence of a replica, the communication not "
                    "hidden counted (--overlap); bound = the same with all of it hidden; ttft = one sequence's "
                    "prompt through every stage; exposed comm = per token; tokens/s = output tokens over the whole "
                    "system")
#: what each time column of the training table is
TRAINING_GLOSSARY = ("times: forecast = the expected step (global batch x seq tokens), what the layouts are ranked "
                     "by; bound = its roofline lower bound; exposed comm = per step, the communication the overlap "
                     "rules do not hide; tokens/s = the step's tokens over the forecast")


@dataclass(frozen=True)
class PlanWords:
    """The lines around the plan's table, in the order they print: ``answer``, ``header``, ``settings``,
    ``notes`` (then the table), ``best`` and ``glossary``; ``title`` names the chart."""

    title: str
    answer: str
    header: str
    settings: str
    notes: tuple[str, ...]
    best: tuple[str, ...]
    glossary: str


def plan_words(r: PlanResult) -> PlanWords:
    """The words of ``r``."""
    title = f"{display(r.run.arch.name)} {r.mode} on {system_where(r.system)}"
    # 'best layout:' for a free search; a layout named in part or whole is answered by its headline alone
    answer = r.best.headline() if r.one_layout or r.fixed else f"best layout: {r.best.headline()}"
    if r.uncalibrated:  # a forecast on a device without a calibration says what it is, at once
        answer += f" ({r.uncalibrated})"
    if r.serving:
        settings = (f"{r.shape}; overlap {r.overlap:.0%} of communication in the time (the bound hides all the "
                    "schedule allows)")
        notes: tuple[str, ...] = ()
    else:
        settings = f"{r.shape}; ranked by the forecast step time (bound beside it); {describe(r.best.layout)}"
        notes = (FLOP_NOTE,)
    return PlanWords(title, answer, f"{title}: {_found(r)}", settings, notes, best_lines(r),
                     SERVING_GLOSSARY if r.serving else TRAINING_GLOSSARY)


def _fixed(r: PlanResult) -> str:
    return ", ".join(f"{k}={v}" for k, v in r.fixed.items())


def _found(r: PlanResult) -> str:
    """How the layouts were found: one timed, or the search's counts."""
    p = r.search
    if p is None:
        return "one layout"
    if r.none_fit:
        return f"one layout (none of the {p.tried:,} with {_fixed(r)} fits; the rest at their defaults)"
    return (f"{p.tried:,} layouts tried in {p.seconds:.2f} s ({r.search_rate:,.0f}/s), {p.too_big:,} of them left "
            "out as they do not fit in device memory"
            + (f", {p.uneven:,} splitting groups unevenly over nodes" if p.uneven else "")
            + f", best {len(p.ranked)}" + (f" with {_fixed(r)} fixed" if r.fixed else ""))


def tier_names(r: PlanResult, scopes: tuple[str, ...]) -> str:
    """The tiers a collective crosses, by the system's names for them ('NVLink 5 via NVLink Switch (NVL72
    domain)'), joined by '+'; a scope the system does not name stays as it is."""
    names = {t.scope: t.name for t in r.system.tiers}
    return " + ".join(display(names.get(s, s)) for s in scopes)


def best_lines(r: PlanResult) -> tuple[str, ...]:
    """The best layout's collectives and memory, then (training) its ZeRO stage, precision and stages."""
    best = r.best
    capacity = (f" of {format_gib(best.capacity)}" if best.capacity < float("inf") else " (no capacity given)")
    comms = ", ".join(f"{display(c.name)} {format_seconds(c.time)} over {tier_names(r, c.tiers)}" for c in best.comms)
    memory = ", ".join(f"{k} {format_gib(v)}" for k, v in best.memory.items())
    lines = [f"best: {best.describe()} — comms: {comms}; memory: {memory}{capacity}"]
    if not isinstance(best, ServingEstimate):
        stages = f"; layers per stage {'/'.join(map(str, best.stage_layers))}" if best.layout.pp > 1 else ""
        lines.append(f"  {best.zero}; {best.run.precision}{stages}")
    return tuple(lines) + domain_lines(r)


def domain_lines(r: PlanResult) -> tuple[str, ...]:
    """The scale-up tier, how many devices it joins (what tp, cp and ep may span), and which of the best layout's
    parallel groups run their collectives on it alone and which cross to other tiers ('tiers: NVLink 5 via NVLink
    Switch (NVL72 domain) joins 72 devices, ...; on it: tp 4, cp 2; across: dp 8 over ...'); none on a system
    without a scale-up tier.  A group's tiers are those of its collectives in the best layout's comms."""
    node = next((t for t in r.system.tiers if t.scope == "node"), None)
    if node is None:
        return ()
    on: list[tuple[str, int, tuple[str, ...]]] = []
    across: list[tuple[str, int, tuple[str, ...]]] = []
    scope_of = {t.name: t.scope for t in r.system.tiers}  # the ep all-to-alls name their tiers by the system's names
    for dim in ("tp", "cp", "ep", "pp", "dp"):
        size = getattr(r.best.layout, dim, 1)
        scopes = tuple(dict.fromkeys(scope_of.get(s, s) for c in r.best.comms if c.name.startswith(f"{dim} ")
                                     for s in c.tiers))
        if size > 1 and scopes:
            (on if scopes == ("node",) else across).append((dim, size, scopes))
    line = (f"  tiers: {display(node.name)} joins {r.system.domain} devices, what tp, cp and ep groups may span"
            + (f"; on it: {', '.join(f'{d} {n}' for d, n, _ in on)}" if on else "")
            + (f"; across: {'; '.join(f'{d} {n} over {tier_names(r, s)}' for d, n, s in across)}" if across else ""))
    return (line,)
