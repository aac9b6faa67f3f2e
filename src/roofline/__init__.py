"""roofline: how fast can this workload run on this hardware, what limits it, and what would help.

>>> import roofline
>>> dev = roofline.Device.simple("seed", peak="100 GFLOP/s", bandwidth="10 GB/s")
>>> a = roofline.analyze(roofline.Workload.from_ops([roofline.Op("app", flops=0.8e9, bytes_read=4e9)]), dev)
>>> str(a.bound[0])
'memory'
>>> roofline.device("h100")
<Device 'NVIDIA H100 SXM5 80GB': 989.4 TFLOP/s bf16 matrix, HBM 3.35 TB/s>

``roofline.device(name)`` looks a device up as ``--device`` does on the command line.  The
module that defines Device is ``roofline.hardware.device``.

The package's layers, top to bottom (docs/architecture.md): ``cli``, ``commands``, ``demo``,
``render``, ``words`` (summary, advice, comparison), ``planner`` and ``serving``, the sources
(``bench``, ``measurement``, ``frontends``), ``llm``, ``engine`` (analysis, forecast,
collectives), ``catalog``, ``work`` (costs, workloads), ``hardware`` (devices, systems,
calibrations) and ``core`` (errors, units, files, text).  The old flat module paths
(``roofline.units``, ``roofline.analysis``, ...) stay importable for one release.

Frontends (PyTorch, Hugging Face configs, ONNX, LLM configs), measurement and
the benchmark are imported lazily: ``roofline.from_torch`` loads torch only
when called.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from roofline import render as _render  # noqa: F401  (registers how an Analysis shows itself: repr, print, HTML)
from roofline.catalog import devices as catalog_devices
from roofline.catalog import get_device, get_system
from roofline.core.errors import RooflineError
from roofline.core.version import __version__ as __version__
from roofline.engine.analysis import Analysis, GroupRow, analyze
from roofline.hardware.device import ComputeCeiling, Device, Interconnect, MemoryCeiling, Provenance
from roofline.work.workload import Op, UnsupportedOp, Workload, WorkloadBuilder
from roofline.work.workload_facts import register_field_reader as _register_field_reader


def _read_llm_run(raw: Any, where: str, field: str) -> Any:
    """A workload file's ``llm`` field, read by the LLM model (imported only when a file holds one)."""
    from roofline.llm.spec import read_spec

    return read_spec(raw, where, field)


_register_field_reader("llm", _read_llm_run)

_LAZY = {
    "from_torch": "roofline.frontends.torch",
    "from_hf_config": "roofline.frontends.hf",
    "from_onnx": "roofline.frontends.onnx",
    "from_llm": "roofline.frontends.llm",
    "from_trace": "roofline.frontends.trace",
    "read_trace": "roofline.frontends.trace",
    "read_traces": "roofline.frontends.trace",
    "measure": "roofline.measurement",
    "measure_callable": "roofline.measurement",
    "kernel": "roofline.measurement",
    "run_bench": "roofline.bench",
    "resolve_device": "roofline.bench.resolve",
    "plot": "roofline.render.chart",
    "advise": "roofline.words.advice",
    "compare": "roofline.words.comparison",
    "summarize": "roofline.words.summary",
    "headline": "roofline.words.summary",
    "serve": "roofline.serving.run",
    "ServeConfig": "roofline.serving.config",
    "Traffic": "roofline.serving.requests",
}

__all__ = [
    "Analysis", "ComputeCeiling", "Device", "GroupRow", "Interconnect", "MemoryCeiling", "Op",
    "Provenance", "RooflineError", "UnsupportedOp", "Workload", "WorkloadBuilder", "analyze",
    "catalog_devices", "device", "get_device", "get_system", *_LAZY,
]


def device(name: str | Device) -> Device:
    """A device by name, as ``--device`` takes it: a catalog name or alias (case and punctuation
    ignored), a device JSON file, or ``'local'`` (the last ``roofline bench``); a Device passes through.

    Unknown names fail with a :class:`RooflineError` naming the three closest catalog devices.

    The module that defines :class:`Device` is ``roofline.hardware.device``. The old module path
    ``roofline.device`` (a shim kept for one release) is registered in ``sys.modules`` at import, so
    ``from roofline.device import Device`` still works and never rebinds this function.

    >>> device("a100-80gb").name
    'NVIDIA A100 SXM4 80GB'
    >>> device("h100") is get_device("H100-SXM5-80GB")
    True
    """
    from roofline.bench.resolve import resolve_device  # not at import: 'import roofline' loads no bench module
    from roofline.core import arguments as arg

    if not isinstance(name, Device):
        arg.text(arg.need(name, str, "device", "name", "a device name (str) or a Device"), "device", "name")
    return resolve_device(name)


def _register_device_by_name() -> None:
    """``analyze(workload, "h100")`` takes a name as ``device()`` does (analysis sits below the catalog)."""
    from roofline.engine import analysis

    analysis.DEVICE_BY_NAME[:] = [device]


_register_device_by_name()

#: the flat module paths of 0.x before the package move, kept importable for one release: module -> subpackage.
#: Each old path has a shim file (for static tools); ``roofline.device`` is registered here, before any import
#: of the shim can rebind the package attribute ``device`` (the function above) to the module.
MOVED_MODULES = {
    **{m: "core" for m in ("text", "version", "formatters", "errors", "units", "precision", "names", "fileio",
                           "limits", "formula", "stats", "arguments")},
    **{m: "hardware" for m in ("device", "device_format", "ceilings", "bench_facts", "calibration",
                               "calibration_curves", "system")},
    **{m: "work" for m in ("costs", "workload_columns", "workload_facts", "workload")},
    **{m: "engine" for m in ("collectives", "analysis", "forecast", "gemm_shape")},
    **{m: "words" for m in ("summary", "llm_report", "advice", "comparison")},
}
sys.modules.setdefault("roofline.device", sys.modules["roofline.hardware.device"])


def __getattr__(name: str) -> Any:
    if name == "__version__":  # kept in roofline.core.version (what stamps it imports that, not the package)
        from roofline.core.version import __version__

        return __version__
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'roofline' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
