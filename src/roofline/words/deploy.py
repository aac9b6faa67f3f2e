"""The words of ``roofline plan --serve``, read off a :class:`~roofline.planner.deploy_search.SearchResult`: the
answer (a capacity at the SLO, saying which statistic judged it), the other statistic's best beside it, how the
deployments were found, the settings, and what each column is.  The table between them is
:mod:`roofline.render.deploy`'s."""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.text import display
from roofline.core.units import format_count, format_seconds
from roofline.planner.deploy_search import Row, SearchResult

#: the statistics, as the lines name them
STAT_NAMES = {"p99": "p99 under Poisson arrivals (simulated)",
              "mean-static": "mean of fixed-length static batches (AIConfigurator's statistic, analytic)"}
GLOSSARY = ("columns: tok/s/GPU = output tokens per second per device at the highest load within the SLO (a "
            "capacity: p99 rows from the simulated rate, mean-static rows from the static batch); tok/s/user = "
            "1 / TPOT; TTFT, TPOT = p99s of the simulated rate (mean-static rows: the static batch's means); "
            "b = max sequences per worker, chunk = max tokens per step (chunked prefill)")


@dataclass(frozen=True)
class DeployWords:
    """The lines around the table, in the order they print: ``answer``, ``other``, ``header``, ``settings``
    (then the table), ``glossary``; ``title`` names the chart."""

    title: str
    answer: str
    other: str
    header: str
    settings: str
    glossary: str = GLOSSARY


def _slo(r: SearchResult) -> str:
    s = r.opts.slo
    return f"TTFT <= {format_seconds(s.ttft or 0)}, TPOT <= {format_seconds(s.tpot or 0)}"


def row_clause(row: Row, stat: str) -> str:
    """'agg 8x tp1 b64 chunk1024: 2,421 output tokens/s per GPU, 43.9 tokens/s per user, TTFT 0.77 s, TPOT ...'."""
    dev, user, ttft, tpot = row.figures(stat)
    s = row.static
    if stat == "p99":
        times = f"p99 TTFT {format_seconds(ttft or 0)}, p99 TPOT {format_seconds(tpot or 0)}"
    else:
        times = f"mean TTFT {format_seconds(s.ttft)}, mean TPOT {format_seconds(s.tpot)}"
    return (f"{row.deployment.describe()}: {format_count(dev)} output tokens/s per GPU, {user:.3g} tokens/s per "
            f"user ({times})")


def deploy_words(r: SearchResult) -> DeployWords:
    """The words of one search (module docs)."""
    name = display(r.model)
    where = f"{display(r.system.name)} ({r.system.devices} devices)"
    other_stat = "mean-static" if r.slo_stat == "p99" else "p99"
    best, other = r.best_by(r.slo_stat), r.best_by(other_stat)
    if best is None:
        answer = (f"no deployment of {name} on {where} meets {_slo(r)} at the {r.slo_stat} statistic: relax "
                  "--slo, shorten --isl/--osl, or add devices")
    else:
        answer = (f"best deployment: {row_clause(best, r.slo_stat)}: the capacity at {_slo(r)}, judged by the "
                  f"{STAT_NAMES[r.slo_stat]}")
    other_line = (f"by the {other_stat} statistic: {row_clause(other, other_stat)}" if other is not None
                  else f"by the {other_stat} statistic: none within the SLO")
    sim = len(r.simulated)
    header = (f"{r.tried:,} deployments of {name} on {where} priced at mean-static, {r.within:,} within the SLO; "
              f"the first {sim} simulated under Poisson arrivals ({display(r.scheduler)} scheduler) in "
              f"{r.seconds:.1f} s; ranked by tokens/s per GPU at the SLO ({r.slo_stat})")
    o = r.opts
    parts = [f"ISL {o.isl:,}, OSL {o.osl:,}", f"precision {o.precision}",
             f"prefix hit {o.prefix_hit:g}" if o.prefix_hit else "no prefix cache",
             f"KV transfer overlap {'on (layer-wise)' if o.kv_overlap else 'off'}"]
    if o.spec is not None:
        parts.append(f"speculative decoding: {o.spec.describe()}")
    title = f"{name} on {where}: tokens/s per GPU against tokens/s per user"
    return DeployWords(title, answer, other_line, header, "settings: " + "; ".join(parts))
