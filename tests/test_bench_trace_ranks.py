"""The many-rank benchmark's own arithmetic (``benchmarks/bench_trace_ranks.py``): medians and the Amdahl bound it
prints beside the measured ratios.  Its timings are not checked here: it is run by hand (issue 34)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    """The script imported as its own directory's scripts import each other (_trace_common beside it)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module("bench_trace_ranks")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_median(bench):
    assert bench._median([3.0, 1.0, 2.0]) == 2.0  # the middle of 1, 2, 3
    assert bench._median([4.0, 1.0, 3.0, 2.0]) == 2.5  # (2 + 3) / 2


def test_ideal_ratio_by_hand(bench):
    # --jobs 1 takes 13 s, 2 of them the serial warm-up: 11 s split over 2 workers is 5.5 s, after the Dask run's
    # own 2.5 s warm-up: 13 / (2.5 + 5.5) = 1.625
    assert bench.ideal_ratio(13.0, 2.0, 2.5) == pytest.approx(1.625)
    # no serial part and one worker: no speed-up (13 / 13)
    assert bench.ideal_ratio(13.0, 0.0, 0.0, workers=1) == pytest.approx(1.0)
    # no serial part, 2 workers: exactly 2x
    assert bench.ideal_ratio(13.0, 0.0, 0.0) == pytest.approx(2.0)
