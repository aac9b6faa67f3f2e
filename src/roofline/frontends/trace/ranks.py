"""Many ranks read where they lie: local processes (``jobs``) or a Dask cluster (``dask``), one summary each.

Each rank is one task that opens its own file, reads it with
:func:`~roofline.frontends.trace.events.read_events`, places its ops and
returns a :class:`~roofline.frontends.trace.ranksummary.RankSummary` (well
under 1 MB: per-step figures, collectives in order, ops aggregated by cost).
The driver never opens a trace: it only merges summaries, so its memory grows
with ranks x ops kept, not with trace bytes.

Dask: ``dask="local"`` starts a ``LocalCluster`` of worker processes on this
machine; any other value is a scheduler address (``tcp://host:8786``),
reached within :data:`CONNECT_TIMEOUT_S` seconds or refused in one line.
Each task gets :data:`RETRIES` retries (and the scheduler's own
``allowed-failures`` for a worker that dies); a rank still failing after them
is named in one line, or left out with ``skip_bad_ranks=True``.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from typing import Any

from roofline.errors import RooflineError
from roofline.frontends.trace.events import read_events
from roofline.frontends.trace.placer import Placer
from roofline.frontends.trace.ranksummary import RankSummary, summarize_rank
from roofline.text import shown_path

CONNECT_TIMEOUT_S = 10.0  # a Dask scheduler that does not answer within this is refused
RETRIES = 1  # Dask retries per rank task (a parse error fails again; a lost worker may not)
#: failed ranks named in the one error line: a worker killed while reading one rank can take a rank it had
#: already read with it (its result lost with the worker, recomputed where the next kill lands)
NAMED_FAILURES = 3
_MAGIC = ("*", "?", "[")


def expand(patterns: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Quoted globs expanded by roofline itself (sorted by the rank number in the name, then by name);
    other paths kept as given (the worker that reads one says if it is missing)."""
    out: list[str] = []
    for p in patterns:
        text = os.fspath(p)
        if any(c in text for c in _MAGIC):
            hits = sorted(glob.glob(text), key=_natural)
            if not hits:
                raise RooflineError(f"{shown_path(text)}: no trace file matches this pattern")
            out += hits
        else:
            out.append(text)
    return out


def _natural(name: str) -> tuple[Any, ...]:
    import re

    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def rank_task(path: str, index: int, parser: str = "auto") -> RankSummary:
    """One rank, read where the task runs (a worker process): the summary, never the events."""
    ev = read_events(path, parser)
    w = Placer(ev).workload(None)
    return summarize_rank(ev, w, shown_path(path), index)


def _guarded(path: str, index: int, parser: str) -> RankSummary | str:
    """A rank's summary, or its bad-input message (a RooflineError is data: the driver names the rank)."""
    try:
        return rank_task(path, index, parser)
    except RooflineError as exc:
        return str(exc)


Picker = Any  # callable: list of summaries / failures -> the index of the rank whose workload to read, or None


def run_ranks(files: list[str], *, jobs: int = 1, dask: str | None = None, parser: str = "auto",
              pick: Picker = None) -> tuple[list[RankSummary | str], Any]:
    """Every rank's summary (or its failure, one line naming it), in the order of ``files``; and, when
    ``pick`` names one of them, that rank's whole Workload, read by the same engine (a worker, not the driver)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise RooflineError(f"--jobs {jobs!r}: give a number of processes >= 1")
    if dask is not None:
        return _on_dask(files, dask, parser, pick)
    if jobs == 1 or len(files) == 1:
        got: list[RankSummary | str] = [_guarded(f, i, parser) for i, f in enumerate(files)]
        k = pick(got) if pick else None
        return got, (_workload(files[k], parser) if k is not None else None)
    return _on_processes(files, jobs, parser, pick)


def _workload(path: str, parser: str) -> Any:
    return Placer(read_events(path, parser)).workload(None)


def _on_processes(files: list[str], jobs: int, parser: str, pick: Picker) -> tuple[list[RankSummary | str], Any]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    out: list[RankSummary | str] = []
    # spawn: a worker starts clean (no copy of the driver's memory, no forked locks)
    with ProcessPoolExecutor(max_workers=min(jobs, len(files)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_guarded, f, i, parser) for i, f in enumerate(files)]
        for i, fut in enumerate(futures):
            try:
                out.append(fut.result())
            except BrokenProcessPool:
                out.append(f"{shown_path(files[i])}: the process reading it died (killed, or out of memory)")
        k = pick(out) if pick else None
        return out, (pool.submit(_workload, files[k], parser).result() if k is not None else None)


def _client(address: str) -> tuple[Any, Any]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise RooflineError("--dask needs dask.distributed: pip install 'roofline[dask]'") from None
    if address == "local":
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        return Client(cluster), cluster
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S), None
    except (OSError, TimeoutError, ValueError) as exc:
        raise RooflineError(f"--dask {address}: no Dask scheduler answered within {CONNECT_TIMEOUT_S:g} s "
                            f"({type(exc).__name__})") from None


def _on_dask(files: list[str], address: str, parser: str, pick: Picker) -> tuple[list[RankSummary | str], Any]:
    client, cluster = _client(address)
    try:
        futures = [client.submit(_guarded, f, i, parser, key=f"roofline-rank-{i}", retries=RETRIES, pure=False)
                   for i, f in enumerate(files)]
        out: list[RankSummary | str] = []
        for i, fut in enumerate(futures):
            try:
                out.append(fut.result())
            except Exception as exc:  # KilledWorker, a worker's own failure after Dask's retries
                out.append(f"{shown_path(files[i])}: failed on the Dask cluster after its retries "
                           f"({type(exc).__name__})")
        k = pick(out) if pick else None
        work = (client.submit(_workload, files[k], parser, key=f"roofline-workload-{k}", retries=RETRIES,
                              pure=False).result() if k is not None else None)
        return out, work
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def read_traces(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *, jobs: int = 1,
                dask: str | None = None, skip_bad_ranks: bool = False, parser: str = "auto",
                with_workload: bool = False) -> Any:
    """Read the ranks of one run (quoted globs expanded here) into a typed
    :class:`~roofline.frontends.trace.crossrank.MultiRankTrace`: ``jobs`` local processes, or ``dask``
    (``"local"`` or a scheduler address).  A rank that fails is named in one line (RooflineError) unless
    ``skip_bad_ranks``.  ``with_workload``: also return the slowest rank's Workload, read by a worker.

    >>> # t = read_traces("run/rank*.json", jobs=4); t.stragglers[0].line()
    """
    from roofline import arguments as arg
    from roofline.frontends.trace.crossrank import cross_rank

    files = expand(arg.paths(paths, "read_traces", "paths"))
    if not files:
        raise RooflineError("read_traces: no trace files given")
    state: dict[str, Any] = {}

    def pick(got: list[RankSummary | str]) -> int | None:
        ranks = [g for g in got if not isinstance(g, str)]
        bad = [f"rank {i} ({shown_path(f)}): {g}" for i, (f, g) in enumerate(zip(files, got, strict=True))
               if isinstance(g, str)]
        if bad and not skip_bad_ranks:
            more = f" (and {len(bad) - NAMED_FAILURES} more)" if len(bad) > NAMED_FAILURES else ""
            raise RooflineError(f"{'; '.join(bad[:NAMED_FAILURES])}{more}; --skip-bad-ranks goes on without "
                                + ("it" if len(bad) == 1 else "them"))
        if not ranks:
            raise RooflineError(f"no rank could be read: {bad[0]}")
        view = state["view"] = cross_rank(ranks, bad)
        return next(i for i, g in enumerate(got) if not isinstance(g, str) and g.rank == view.slowest_rank) \
            if with_workload else None

    _, work = run_ranks(files, jobs=jobs, dask=dask, parser=parser, pick=pick)
    return (state["view"], work) if with_workload else state["view"]
