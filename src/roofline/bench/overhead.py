"""The overhead floor: what one op costs however small it is, measured here.

- ``torch-eager``: ``a + b`` on one-element CPU tensors from Python, in inference mode
  (Python -> dispatcher -> kernel -> result tensor), timed in batches.
- ``numpy``: ``a + b`` on one-element arrays.
- ``cuda-launch``: an ``add_`` on a one-element CUDA tensor, ``inner`` back-to-back launches
  timed with CUDA events (the launch rate is the floor: the kernel itself is empty work).
- ``cuda-graph``: the same launches captured in a CUDA graph and replayed, per kernel.

Each figure is the median of its samples, with the interquartile range as its spread
(:mod:`roofline.core.stats`).
"""

from __future__ import annotations

from typing import Any

from roofline.bench import machine
from roofline.core.stats import Timing
from roofline.hardware.device import OverheadFloor, Provenance

REPEATS = 15


def _floor(framework: str, t: Timing, method: str, date: str) -> OverheadFloor:
    return OverheadFloor(framework, t.median, Provenance(
        kind="measured", source="roofline overhead floor", method=method, date=date, repeats=t.repeats,
        spread=(t.low, t.high), note="fixed cost of one op however small (seconds per op)"))


def measure_cpu(repeats: int = REPEATS) -> tuple[OverheadFloor, ...]:
    """torch-eager (when torch imports) and numpy floors on this CPU."""
    import numpy as np

    from roofline.core.stats import time_calls

    date = machine.now()
    x = np.ones(1)
    out = [_floor("numpy", time_calls(lambda: x + x, repeats=repeats, warmup=200),
                  "numpy a + b on 1-element float64 arrays, timed in batches", date)]
    try:
        import torch
    except ImportError:
        return tuple(out)
    a = torch.ones(1)
    with torch.inference_mode():
        t = time_calls(lambda: a + a, repeats=repeats, warmup=200)
    out.append(_floor("torch-eager", t,
                      "torch a + b on 1-element float32 CPU tensors in inference mode, timed in batches", date))
    return tuple(out)


def measure_cuda(torch: Any, repeats: int = REPEATS, inner: int = 200) -> tuple[OverheadFloor, ...]:
    """cuda-launch and cuda-graph floors on the current CUDA device (CUDA events around ``inner`` launches,
    :func:`roofline.bench.gpu.time_cuda`)."""
    from roofline.bench.gpu import time_cuda

    date = machine.now()
    x = torch.ones(1, device="cuda")

    def launch() -> None:
        x.add_(1.0)

    out = [_floor("cuda-launch", Timing.of(time_cuda(torch, launch, inner=inner, repeats=repeats)),
                  f"{inner} back-to-back x.add_(1) launches on a 1-element tensor, CUDA events", date)]
    try:
        graph = time_cuda(torch, launch, inner=inner, repeats=repeats, graph=True, strict=True)
    except RuntimeError:  # capture unsupported here: the eager floor alone
        return tuple(out)
    out.append(_floor("cuda-graph", Timing.of(graph),
                      f"the same {inner} launches captured in a CUDA graph and replayed, per kernel", date))
    return tuple(out)
