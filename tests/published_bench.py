"""``benchmarks/bench_published.py`` loaded as a module, for the tests of its published rows."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_bench_published() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_published", ROOT / "benchmarks" / "bench_published.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_published"] = mod  # its dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod
