"""The worker processes of the many-rank trace reader (``--jobs N``, ``--dask local``): where they are forked from,
and starting that server early.

Only the standard library is imported here, so the command line can start the server before it imports anything
else (:func:`start_early`, called by :mod:`roofline.cli` on the command's own words, then again by the reader).
"""

from __future__ import annotations

from typing import Any

#: what the forkserver imports before it forks a worker (multiprocessing.set_forkserver_preload); for a local Dask
#: cluster, ``distributed`` first.  :mod:`roofline.frontends.trace.warm` imports torch, pays the lazy imports of
#: its first meta replay, and freezes the objects made so far out of the garbage collector's reach (``gc.freeze``)
PRELOAD = ["roofline.frontends.trace.warm"]


def mp_context(dask: bool = False) -> Any:
    """forkserver where the platform has it (a fresh, single-threaded server process that imports
    :data:`PRELOAD` once and forks each worker from it: no copy of the driver's memory or threads, no import
    paid per worker, and a forked worker exits without the interpreter's teardown), else spawn.  The preload
    counts only for the server's start (one per process: the first run's list stays)."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload((["distributed"] if dask else []) + PRELOAD)
    return ctx


def wants_workers(jobs: Any, dask: str | None) -> bool:
    """The run forks workers from the forkserver: ``jobs`` > 1 (no Dask) or a local Dask cluster."""
    return dask == "local" or (dask is None and isinstance(jobs, int) and not isinstance(jobs, bool) and jobs > 1)


def start_early(jobs: Any, dask: str | None) -> None:
    """Start the forkserver now, when the run will fork workers from it (:func:`wants_workers`): its warm-up
    (``distributed`` 0.3 s, torch 1.1 s, the lazy imports of a first meta replay 1.1 s, on one core here) then
    runs while the driver still imports the command, parses its arguments, imports distributed and starts the
    scheduler, instead of after them.  A second call is a no-op (``ensure_running``)."""
    if not wants_workers(jobs, dask):
        return
    ctx = mp_context(dask == "local")
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def from_argv(argv: list[str]) -> tuple[int, str | None]:
    """``--jobs`` and ``--dask`` of a ``roofline trace`` command line, read from its words before argparse does
    (so :func:`start_early` can run before the command's imports): only the exact spellings ``--jobs N``,
    ``--jobs=N``, ``--dask ADDRESS`` and ``--dask=ADDRESS`` count (the last of each), and any other command, or
    a word after ``--``, gives ``(1, None)``: no early start.  argparse still reads the line; a form missed
    here (an abbreviated option) only starts the server later, when the command calls :func:`start_early`."""
    jobs, dask = 1, None
    if not argv or argv[0] != "trace":
        return jobs, dask
    words = argv[1:]
    for i, word in enumerate(words):
        if word == "--":
            break
        name, eq, value = word.partition("=")
        if not eq:
            value = words[i + 1] if i + 1 < len(words) else ""
        if name == "--jobs":
            jobs = int(value) if value.isdigit() else 1
        elif name == "--dask":
            dask = value or None
    return jobs, dask
