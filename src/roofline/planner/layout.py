"""A parallel layout of an LLM step over a system's devices, and the facts every estimate of one derives.

:class:`Layout` splits ``devices = tp x cp x pp x dp`` ways (ranks numbered tp fastest, then cp, dp, pp, as
Megatron-LM does; ``ep`` carves expert groups out of dp) with a ZeRO stage, micro-batch, recomputation and
interleaving; :func:`_per_node` places a group's ranks on the nodes; :class:`Comm` is one kind of collective
in a step.  The search over layouts is :mod:`roofline.planner.search`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from roofline.errors import RooflineError
from roofline.system import System


@dataclass(frozen=True)
class Layout:
    """How a step is split over devices (see :mod:`roofline.planner`)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    zero: int = 1
    micro_batch: int = 1  # sequences per micro-batch (per data-parallel rank)
    sp: bool = True  # sequence parallelism with tp
    recompute: str = "selective"
    interleave: int = 1  # virtual pipeline chunks per device
    overlap: float = 0.0  # share of communication the exposed time hides behind compute

    @property
    def devices(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    def describe(self) -> str:
        parts = [f"tp{self.tp}", f"pp{self.pp}", f"dp{self.dp}"]
        parts += [f"cp{self.cp}"] if self.cp > 1 else []
        parts += [f"ep{self.ep}"] if self.ep > 1 else []
        parts += [f"zero{self.zero}", f"mb{self.micro_batch}", self.recompute]
        parts += [f"v{self.interleave}"] if self.interleave > 1 else []
        return " ".join(parts)


@dataclass(frozen=True)
class Comm:
    """One kind of collective in the step: its total time per step and the tiers it crosses."""

    name: str
    time: float
    tiers: tuple[str, ...]
    overlappable_with: str  # 'micro-batch' or 'step'


class _Facts:
    """What an estimate of either kind derives from its memory and its time split."""

    memory: dict[str, float]
    system: System

    def parts(self) -> dict[str, float]:
        raise NotImplementedError

    @property
    def memory_total(self) -> float:
        return sum(self.memory.values())

    @property
    def capacity(self) -> float:
        c = self.system.device.main_memory.capacity
        return float(c) if c else math.inf

    @property
    def fits(self) -> bool:
        return self.memory_total <= self.capacity

    @property
    def binding(self) -> str:
        """What the time goes to most: 'ops' (their roofline time), 'bubble', a collective, 'optimizer'."""
        parts = self.parts()
        return max(parts, key=lambda k: parts[k])


def _check_sizes(lay: Layout) -> None:
    for label in ("tp", "pp", "dp", "cp", "ep", "micro_batch", "interleave"):
        v = getattr(lay, label)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise RooflineError(f"{label} must be a whole number >= 1, got {v!r}")
    if not 0.0 <= lay.overlap <= 1.0:
        raise RooflineError(f"overlap must be from 0 to 1, got {lay.overlap!r}")


@lru_cache(maxsize=4096)
def _per_node(stride: int, size: int, devices_per_node: int) -> int:
    """How many members of a group (``size`` ranks, ``stride`` apart, from rank 0) share each node; a group
    that splits unevenly over nodes (a node holding more of it than another) is a one-line error."""
    d = devices_per_node
    if size <= 1:
        return 1
    if stride >= d:
        if stride % d:
            raise RooflineError(f"a group of {size} ranks {stride} apart splits unevenly over nodes of {d} devices")
        return 1
    per = min(size, d // stride) if d % stride == 0 else 0
    if not per or size % per:
        raise RooflineError(f"a group of {size} ranks {stride} apart splits unevenly over nodes of {d} devices")
    return per


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending (trial division up to its square root)."""
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return small + [n // k for k in reversed(small) if k * k != n]
