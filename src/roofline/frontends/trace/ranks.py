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

from roofline.core.errors import RooflineError
from roofline.core.text import shown_path
from roofline.frontends.trace.events import read_events
from roofline.frontends.trace.placer import Placer
from roofline.frontends.trace.ranksummary import RankSummary, summarize_rank
from roofline.frontends.workers import mp_context, start_early
from roofline.work.workload import Workload

CONNECT_TIMEOUT_S = 10.0  # a Dask scheduler that does not answer within this is refused
RETRIES = 1  # Dask retries per rank task (a parse error fails again; a lost worker may not)
#: failed ranks named in the one error line: a worker killed while reading one rank can take a rank it had
#: already read with it (its result lost with the worker, recomputed where the next kill lands)
NAMED_FAILURES = 3
_MAGIC = ("*", "?", "[")


def expand(patterns: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Quoted globs expanded by roofline itself (sorted by the rank number in the name, then by name);
    other paths kept as given (the worker that reads one says if it is missing).  A name is a name first: a
    path that exists is read as given, even with ``*``, ``?`` or ``[`` in it; only a missing one is a pattern."""
    out: list[str] = []
    for p in patterns:
        text = os.fspath(p)
        if any(c in text for c in _MAGIC) and not _exists(text):
            hits = sorted(glob.glob(text), key=_natural)
            if not hits:
                raise RooflineError(f"{shown_path(text)}: no trace file matches this pattern")
            out += hits
        else:
            out.append(text)
    return out


def _exists(text: str) -> bool:
    try:
        return os.path.lexists(text)
    except (OSError, ValueError):  # a NUL byte, a name too long: not a file, and not a pattern either
        return False


def _natural(name: str) -> tuple[Any, ...]:
    import re

    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def read_rank(path: str, index: int, parser: str = "auto") -> tuple[RankSummary, Workload]:
    """One rank, read where the task runs (a worker process): its summary, and its placed Workload (kept where
    it was read; it travels only for the slowest rank's analysis)."""
    ev = read_events(path, parser)
    w = Placer(ev).workload(None)
    return summarize_rank(ev, w, shown_path(path), index), w


def rank_task(path: str, index: int, parser: str = "auto") -> RankSummary:
    """One rank's summary, never the events."""
    return read_rank(path, index, parser)[0]


Read = tuple["RankSummary | str", "Workload | None"]  # a rank's summary (or its failure) and maybe its Workload


def _read_guarded(path: str, index: int, parser: str) -> Read:
    """A rank's summary and Workload, or its bad-input message (a RooflineError is data: the driver names it)."""
    try:
        return read_rank(path, index, parser)
    except RooflineError as exc:
        return str(exc), None


def _guarded(path: str, index: int, parser: str) -> RankSummary | str:
    return _read_guarded(path, index, parser)[0]


def slowest_order(summary: RankSummary, index: int) -> tuple[float, int]:
    """The order the slowest rank is picked by: the longest step time, ties to the first rank (as
    :func:`~roofline.frontends.trace.crossrank.cross_rank` picks it over the steps every rank has: the same
    rank unless the ranks' steps differ, and then the pick is read again); every rank's key differs."""
    return summary.step_seconds, -index


class _Slowest:
    """The slowest rank seen so far and its Workload: each engine keeps one, so no rank is read twice."""

    def __init__(self) -> None:
        self.key: tuple[float, int] | None = None
        self.work: Workload | None = None

    def beats(self, got: RankSummary | str, index: int) -> bool:
        return not isinstance(got, str) and (self.key is None or slowest_order(got, index) > self.key)

    def offer(self, got: RankSummary | str, work: Workload | None, index: int) -> None:
        if work is not None and self.beats(got, index):
            assert not isinstance(got, str)
            self.key, self.work = slowest_order(got, index), work

    def of(self, index: int | None) -> Workload | None:
        """The kept Workload when it is rank ``index``'s (always, for the slowest: see the engines)."""
        return self.work if index is not None and self.key is not None and -self.key[1] == index else None


#: in a pool's worker process: the slowest rank this process has returned a Workload for
_WORKER = _Slowest()


def _pool_task(path: str, index: int, parser: str) -> Read:
    """A pool worker's rank: the Workload goes back only when it beats every rank this worker read before.  The
    slowest of all beats every rank its worker read, so the driver gets it; a worker returns O(log n) of them."""
    got, work = _read_guarded(path, index, parser)
    if not _WORKER.beats(got, index):
        return got, None
    _WORKER.offer(got, work, index)
    _WORKER.work = None  # the key is what counts here; the Workload goes to the driver
    return got, work


Picker = Any  # callable: list of summaries / failures -> the index of the rank whose workload to read, or None


def run_ranks(files: list[str], *, jobs: int = 1, dask: str | None = None, parser: str = "auto",
              pick: Picker = None) -> tuple[list[RankSummary | str], Any]:
    """Every rank's summary (or its failure, one line naming it), in the order of ``files``; and, when
    ``pick`` names one of them, that rank's whole Workload, kept by the engine that read it (never read twice;
    a worker's, not the driver's, except with one process)."""
    from roofline.core.limits import check_work, max_jobs

    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise RooflineError(f"--jobs {jobs!r}: give a number of processes >= 1")
    check_work("--jobs", jobs, max_jobs(), "ROOFLINE_MAX_JOBS", " processes")
    if dask is not None:
        return _on_dask(files, dask, parser, pick)
    if jobs == 1 or len(files) == 1:
        best, got = _Slowest(), []
        for i, f in enumerate(files):
            summary, work = _read_guarded(f, i, parser)
            best.offer(summary, work, i)
            got.append(summary)
        k = pick(got) if pick else None
        return got, _kept(best, k, files, parser)
    return _on_processes(files, jobs, parser, pick)


def _kept(best: _Slowest, k: int | None, files: list[str], parser: str) -> Workload | None:
    """Rank ``k``'s Workload from what the engine kept (read again only if a pick other than the slowest asks)."""
    if k is None:
        return None
    got = best.of(k)
    return got if got is not None else read_rank(files[k], k, parser)[1]


def warm() -> None:
    """What a rank task pays once per process before its first rank, paid here instead: torch's import and what
    its first meta replay imports lazily (``torch._refs`` kernels import ``torch._dynamo``, sympy: about 1.1 s
    here, as long as the import of torch itself).  Run by the forkserver the pool's and a local Dask cluster's
    worker processes are forked from (:mod:`.warm`, :mod:`roofline.frontends.workers`), so they start warm: once
    per run, not once per worker."""
    from roofline.frontends.trace.replay import Replayer

    torch = Replayer().torch
    x = torch.empty((8, 16), device="meta")
    torch.ops.aten.native_layer_norm(x, [16], None, None, 1e-5)  # a decomposed meta kernel: _refs, _dynamo


def _on_processes(files: list[str], jobs: int, parser: str, pick: Picker) -> tuple[list[RankSummary | str], Any]:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    out: list[RankSummary | str] = []
    best = _Slowest()
    with ProcessPoolExecutor(max_workers=min(jobs, len(files)), mp_context=mp_context()) as pool:
        futures = [pool.submit(_pool_task, f, i, parser) for i, f in enumerate(files)]
        for i, fut in enumerate(futures):
            try:
                got, work = fut.result()
            except BrokenProcessPool:
                got, work = f"{shown_path(files[i])}: the process reading it died (killed, or out of memory)", None
            best.offer(got, work, i)
            out.append(got)
        k = pick(out) if pick else None
        work = best.of(k) if k is not None else None
        if k is not None and work is None:
            work = pool.submit(_read_guarded, files[k], k, parser).result()[1]
        return out, work


#: a local cluster's own periodic work, set down to what a batch of rank reads uses: each of these wakes a process
#: that would otherwise sleep (the scheduler, two nannies, two workers), and on 2 cores each wake-up is taken from a
#: rank being read.  Defaults (distributed.yaml) in the comments:
QUIET_LOCAL = {
    "distributed.worker.profile.enabled": False,  # the statistical profiler: a sample of the task thread every
                                                  # 10 ms, for a dashboard that is off
    "distributed.admin.tick.interval": "1s",  # 20 ms: the event loop's health check (a loop blocked past
                                              # tick.limit, 3 s, is still reported)
    "distributed.admin.system-monitor.interval": "5s",  # 500 ms: CPU, memory and network sampled for the dashboard
    "distributed.worker.memory.monitor-interval": "1s",  # 100 ms: a worker's RSS checked against its memory limits
    "distributed.scheduler.worker-saturation": 1.0,  # 1.1: a worker is handed a rank only when it has none to
                                                     # read (1.1 keeps a second one queued there; ceil(1.1) = 2)
    "distributed.scheduler.work-stealing": False,  # a rebalance every 1 s, of ranks queued on a busy worker: with
                                                   # none queued there, there is nothing to steal
}


def _client(address: str) -> tuple[Any, Any]:
    try:
        import distributed
        from distributed import Client, LocalCluster
    except ImportError:
        raise RooflineError("--dask needs dask.distributed: pip install 'roofline[dask]'") from None
    if address == "local":
        import dask

        # worker processes forked from a forkserver that imported PRELOAD once (roofline.frontends.workers);
        # distributed would preload its own list, importing pandas and more here first: ours is set instead
        method = mp_context(dask=True).get_start_method()
        if method == "forkserver" and hasattr(distributed.utils, "_forkserver_preload_set"):
            distributed.utils._forkserver_preload_set = True
        with dask.config.set({"distributed.worker.multiprocessing-method": method, **QUIET_LOCAL}):
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        return Client(cluster), cluster
    _probe(address)
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S), None
    except Exception as exc:  # OSError, TimeoutError, a protocol error, MemoryError from a junk frame length
        raise RooflineError(f"--dask {shown_path(address)!r}: no Dask scheduler answered within "
                            f"{CONNECT_TIMEOUT_S:g} s ({type(exc).__name__})") from None


#: the largest first frame a scheduler's handshake may announce (bytes); a handshake is a few hundred bytes
HANDSHAKE_LIMIT = 1 << 24


def check_address(address: object, func: str = "read_traces", param: str = "dask") -> str | None:
    """``address`` when it is None, ``"local"`` or a scheduler address (``tcp://HOST:PORT``, ``tls://...``,
    ``HOST:PORT``), else one line (a type error first: an int, a Client)."""
    from roofline.core import arguments as arg

    if address is None:
        return None
    accepts = "None, 'local' or a Dask scheduler address (tcp://HOST:PORT)"
    if not isinstance(address, str):
        raise arg.type_error(func, param, accepts, address)
    if address == "local":
        return address
    rest = address.split("://", 1)[1] if "://" in address else address
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or not address.isprintable() or " " in address:
        raise arg.value_error(func, param, accepts, address)
    return address


def _probe(address: str) -> None:
    """A TCP scheduler address answers the way a Dask scheduler does, within :data:`CONNECT_TIMEOUT_S`: it
    accepts, then sends its handshake first (distributed.comm.core: both sides write, then read), a frame
    whose 8-byte length is small.  A port that accepts and never speaks, or answers junk, is one line here
    (distributed itself would wait forever, or try to allocate the junk length)."""
    import socket
    import struct

    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "tcp"):
        return
    host, _, port = rest.rpartition(":")
    where = f"--dask {shown_path(address)!r}"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S) as sock:
            head = b""
            while len(head) < 8:
                part = sock.recv(8 - len(head))
                if not part:
                    raise RooflineError(f"{where}: the connection was closed before a Dask handshake")
                head += part
    except TimeoutError:
        raise RooflineError(f"{where}: no Dask scheduler answered within {CONNECT_TIMEOUT_S:g} s") from None
    except OSError as exc:
        raise RooflineError(f"{where}: cannot connect ({exc.strerror or type(exc).__name__})") from None
    (size,) = struct.unpack("<Q", head)
    if not 0 < size <= HANDSHAKE_LIMIT:
        raise RooflineError(f"{where}: the answer is not a Dask handshake (a first frame of {size:,} bytes)")


def _summary_of(read: Read) -> RankSummary | str:
    return read[0]


def _on_dask(files: list[str], address: str, parser: str, pick: Picker) -> tuple[list[RankSummary | str], Any]:
    """Each rank's (summary, Workload) stays on the worker that read it; only its summary travels (a task on
    that worker), and the Workload of the slowest rank so far is the one kept: the others are released as their
    summaries come in, so a worker holds a Workload or two, not all of them."""
    from distributed import as_completed

    client, cluster = _client(address)
    try:
        reads: list[Any] = [client.submit(_read_guarded, f, i, parser, key=f"roofline-rank-{i}", retries=RETRIES, pure=False)
                 for i, f in enumerate(files)]
        heads = {client.submit(_summary_of, r, key=f"roofline-summary-{i}", retries=RETRIES, pure=False): i
                 for i, r in enumerate(reads)}
        out: list[RankSummary | str] = [""] * len(files)
        best, kept = _Slowest(), None  # kept: the future holding the slowest rank's read, on its worker
        for fut in as_completed(list(heads)):
            i = heads[fut]
            try:
                out[i] = fut.result()
            except Exception as exc:  # KilledWorker, a worker's own failure after Dask's retries
                out[i] = f"{shown_path(files[i])}: failed on the Dask cluster after its retries ({type(exc).__name__})"
            if best.beats(out[i], i):
                best.key, kept = slowest_order(out[i], i), reads[i]  # type: ignore[arg-type]
            reads[i] = None  # released on the worker unless it is kept
        k = pick(out) if pick else None
        work = None
        if k is not None:
            held: Any = kept if best.key is not None and -best.key[1] == k else \
                client.submit(_read_guarded, files[k], k, parser, key=f"roofline-workload-{k}", retries=RETRIES,
                              pure=False)
            work = held.result()[1]
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
    from roofline.core import arguments as arg
    from roofline.frontends.trace.crossrank import cross_rank

    check_address(dask)
    start_early(jobs, dask)
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
