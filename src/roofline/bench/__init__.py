"""Measured ceilings: this machine's hierarchical roofline, as a :class:`~roofline.hardware.device.Device`.

``run_bench`` measures (CPU with numba kernels and numpy/torch GEMM; the CUDA
GPU with torch when ``gpu=True``) and returns a Device whose every ceiling has
``Provenance(kind="measured", ...)`` with its method, date, repeats, spread
and details.  ``load_local_device`` returns the last measurement cached by
``roofline bench``, which is what ``--device local`` means everywhere.

>>> from roofline.bench import run_bench                  # doctest: +SKIP
>>> dev = run_bench(quick=True)                           # about a minute on 2 cores
>>> [m.level for m in dev.memory]                         # doctest: +SKIP
['L1', 'L2', 'L3', 'DRAM']
>>> dev.ceiling("vector", "fp64").provenance.spread       # doctest: +SKIP
(55.1e9, 57.3e9)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roofline.bench.cache import cache_dir, load_local_device, local_device_path, save_local_device, writer_lock
from roofline.hardware.device import Device

if TYPE_CHECKING:
    from roofline.bench.sampling import Progress

__all__ = ["run_bench", "load_local_device", "save_local_device", "local_device_path", "cache_dir", "writer_lock"]


#: how many times a CPU run that comes back disturbed or inconsistent is measured again (quick, full)
RETRIES = {"quick": 1, "full": 2}


def run_bench(*, quick: bool = True, full: bool = False, threads: int | None = None, gpu: bool = False,
              progress: Progress | None = None, retries: int | None = None, **overrides: Any) -> Device:
    """Measure this machine and return a Device (kind ``cpu``, or ``gpu`` with ``gpu=True``).

    ``full=True`` sweeps finer and repeats more (``quick`` is the default);
    ``threads``: CPU threads (default every CPU); ``progress(fraction, text)``
    is called as stages complete; ``overrides`` go to
    :class:`roofline.bench.sampling.BenchConfig` (e.g. ``max_bytes=1 << 20,
    repeats=3`` for a tiny run) or to :func:`roofline.bench.gpu.run_gpu_bench`.
    On the GPU the roof audit (:mod:`roofline.bench.gpu_audit`) follows the measurement.
    The overhead floors (:mod:`roofline.bench.overhead`) are measured last, in this process.

    A CPU run whose quality (:mod:`roofline.bench.quality`) comes back ``disturbed`` or ``inconsistent``
    is measured again, up to ``retries`` more times (default :data:`RETRIES` of the mode); the
    attempt with the fewest causes is kept, its quality record saying how many attempts ran.
    ``metadata["run"]`` names this run (id, start, pid, host).
    Nothing is written: saving and caching are the caller's choice
    (:func:`save_local_device`).

    The CPU is measured in a child process (:mod:`roofline.bench._worker`): the OpenMP and
    numba settings measuring needs (threads pinned to cores, passive waiting) stay there.
    A :class:`~roofline.core.errors.RooflineError` in it comes back as the same one-line error;
    Ctrl-C stops it and raises KeyboardInterrupt here.  (:func:`roofline.bench.cpu.run_cpu_bench`
    measures in this process, settings included.)
    """
    from dataclasses import replace

    from roofline.bench import overhead, quality
    from roofline.core import arguments as arg

    run = quality.new_run()

    for flag, value in (("quick", quick), ("full", full), ("gpu", gpu)):
        arg.boolean(value, "run_bench", flag)
    arg.optional_int(threads, "run_bench", "threads")
    if progress is not None:
        arg.function(progress, "run_bench", "progress")
    if gpu:
        import torch

        from roofline.bench.gpu import run_gpu_bench
        from roofline.bench.gpu_audit import audit_gpu

        dev = run_gpu_bench(quick=quick and not full, progress=progress, **overrides)
        dev, messages = audit_gpu(dev)  # the roof audit, as on the CPU: a kernel faster than its roof raises it
        if messages:
            dev = replace(dev, metadata={**dev.metadata, "warnings": [*dev.metadata.get("warnings", []), *messages]})
        return replace(dev, overhead=overhead.measure_cuda(torch), metadata={**dev.metadata, "run": run})
    from roofline.bench.sampling import BenchConfig, check_threads

    cfg = BenchConfig.full(**overrides) if full else BenchConfig.quick(**overrides)
    # checked here, before a process starts: bad input is one line and nothing runs
    cfg = replace(cfg, threads=check_threads(threads if threads is not None else cfg.threads or None))
    budget = RETRIES[cfg.mode] if retries is None else max(0, retries)
    best = _measure_within_budget(cfg, progress, budget)
    return replace(best, overhead=overhead.measure_cpu(), metadata={**best.metadata, "run": run})


def _measure_within_budget(cfg: Any, progress: Progress | None, budget: int) -> Device:
    """The CPU run measured again while flagged, up to ``budget`` more times; the least bad attempt, its quality
    record saying how many attempts ran (:func:`roofline.bench.quality.badness`)."""
    from dataclasses import replace

    from roofline.bench import quality
    from roofline.bench._worker import run_in_child

    best: Device | None = None
    attempts = 0
    while attempts <= budget:
        attempts += 1
        dev = run_in_child(cfg, progress)
        record = dict(dev.metadata.get("quality") or quality.assess([], [], []))
        if best is None or quality.badness(record) < quality.badness(best.metadata.get("quality") or {}):
            best = dev
        if not record.get("flags"):
            break
    assert best is not None
    record = {**(best.metadata.get("quality") or {}), "attempts": attempts, "budget": budget}
    return replace(best, metadata={**best.metadata, "quality": record})
