"""roofline: how fast can this workload run on this hardware, what limits it, and what would help.

>>> import roofline
>>> dev = roofline.Device.simple("seed", peak="100 GFLOP/s", bandwidth="10 GB/s")
>>> a = roofline.analyze(roofline.Workload.from_ops([roofline.Op("app", flops=0.8e9, bytes_read=4e9)]), dev)
>>> str(a.bound[0])
'memory'

Frontends (PyTorch, Hugging Face configs, ONNX, LLM configs), measurement and
the benchmark are imported lazily: ``roofline.from_torch`` loads torch only
when called.
"""

from __future__ import annotations

import importlib
from typing import Any

from roofline.analysis import Analysis, GroupRow, analyze
from roofline.catalog import devices as catalog_devices
from roofline.catalog import get_device, resolve_device
from roofline.device import ComputeCeiling, Device, Interconnect, MemoryCeiling, Provenance
from roofline.errors import RooflineError
from roofline.workload import Op, UnsupportedOp, Workload, WorkloadBuilder

__version__ = "0.1.0"

_LAZY = {
    "from_torch": "roofline.frontends.torch",
    "from_hf_config": "roofline.frontends.hf",
    "from_onnx": "roofline.frontends.onnx",
    "from_llm": "roofline.frontends.llm",
    "measure": "roofline.measurement",
    "measure_callable": "roofline.measurement",
    "kernel": "roofline.measurement",
    "run_bench": "roofline.bench",
    "plot": "roofline.render.chart",
    "advise": "roofline.advice",
    "compare": "roofline.comparison",
    "summarize": "roofline.summary",
}

__all__ = [
    "Analysis", "ComputeCeiling", "Device", "GroupRow", "Interconnect", "MemoryCeiling", "Op",
    "Provenance", "RooflineError", "UnsupportedOp", "Workload", "WorkloadBuilder", "analyze",
    "catalog_devices", "get_device", "resolve_device", *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'roofline' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
