"""Judging a real timing in a test: was the host ours while it ran?

A test of a measurement's logic runs on an injected clock or injected samples.  The few tests that must time real
execution (collectives over gloo, a kernel against the roof measured beside it) wrap the timed work in a
:class:`Watch` and check their figure with :func:`judge`: a figure within its limit passes; one outside it fails
only when the host was quiet over the watched window, and is skipped, with the causes as the reason, when other
work ran (the same causes ``roofline bench`` names: :func:`roofline.bench.contention.window_causes`).

>>> w = Watch(threads=1)
>>> with w:
...     pass
>>> judge(True, "an empty window", w)   # within its limit: passes whatever the host did
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

import pytest

from roofline.bench import contention


def _ours() -> float:
    """CPU seconds of this process and of every child it has waited for (torchrun and its ranks)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _snapshot() -> contention.Snapshot:
    return replace(contention.snapshot(), wall=time.perf_counter(), process_cpu=_ours())


class Watch:
    """The OS's view at the start and the end of a window of real work on ``threads`` threads (processes)."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.windows: list[tuple[contention.Snapshot, contention.Snapshot]] = []
        self._start: contention.Snapshot | None = None

    def __enter__(self) -> Watch:
        self._start = _snapshot()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._start is not None
        self.windows.append((self._start, _snapshot()))
        self._start = None

    def causes(self) -> list[str]:
        """Every cause of contention seen over any watched window (empty: the host was ours)."""
        cores = os.cpu_count() or 1
        return [c for a, b in self.windows for c in contention.window_causes(a, b, self.threads, cores)]


def judge(ok: bool, what: str, *watches: Watch) -> None:
    """Pass when ``ok``; otherwise skip naming the contention seen, or fail (``what``) on a quiet host."""
    if ok:
        return
    causes = [c for w in watches for c in w.causes()]
    if causes:
        pytest.skip(f"cannot judge on a busy host ({what}): " + "; ".join(dict.fromkeys(causes)))
    pytest.fail(f"{what} (the host was quiet over the timed window)")
