"""The parallel dimensions of a layout, declared once: what each divides, the collectives it brings, what of
a device's memory it divides, where its ranks sit, and the sizes a search tries.

:data:`DIMS` is the table; the planner reads it for a layout's devices, its description, its size checks,
the stride of each dimension's groups, the devices holding the same weights (:func:`replicas`), the overlap
switch of each collective and the layouts a search enumerates (:func:`shapes`), and ``roofline plan
--layout`` for its keys.  A new dimension is one
:class:`ParallelDim` here, an int field of the same name on :class:`~roofline.planner.layout.Layout`
(default 1), and its cost hooks: the collectives and memory it changes in ``planner.train`` /
``planner.serve``, and the shard it leaves a device in ``planner.cache`` / ``llm.training``.

>>> [d.name for d in DIMS], names()
(['tp', 'cp', 'pp', 'dp', 'ep'], ('tp', 'pp', 'dp', 'cp', 'ep'))
>>> DIMS_BY_NAME["cp"].divides, DIMS_BY_NAME["cp"].collectives, DIMS_BY_NAME["cp"].memory
(('sequence',), ('all_gather', 'reduce_scatter'), ('activations', 'kv'))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from roofline.core.errors import RooflineError
from roofline.llm.table import check_tp

#: (run, system, devices left to split, the sizes chosen so far, the search's options) -> the sizes to try
Choices = Callable[[Any, Any, int, Mapping[str, int], Mapping[str, Any]], Iterable[int]]


@dataclass(frozen=True)
class ParallelDim:
    """One way of splitting a step over devices.

    ``name`` is the :class:`~roofline.planner.layout.Layout` field, the ``--layout`` key and the head of its
    collectives' names ('tp all-reduce').  ``divides``: what each of its ranks holds 1/n of; ``collectives``:
    the ones it brings (torch.distributed names); ``memory``: which of weights, gradients, optimizer (state),
    activations and kv (cache) it divides per device (dp: with ZeRO, by its stage).  ``overlap``: the
    ``--overlap-*`` switch its collectives follow.  ``devices``: a factor of the devices (tp x cp x pp x dp);
    else carved out of the ranks of ``within`` (ep out of dp).  ``rank``: Megatron-LM's rank order, 0 fastest
    (tp, cp, dp, pp).  ``shown``: :func:`describe` names it always, else only above 1.  ``train`` / ``serve``:
    the sizes a training / serving search tries, in the order tried.
    """

    name: str
    title: str
    divides: tuple[str, ...]
    collectives: tuple[str, ...]
    memory: tuple[str, ...]
    overlap: str
    train: Choices
    serve: Choices
    devices: bool = True
    within: str = ""
    rank: int = 0
    shown: bool = False


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending (trial division up to its square root)."""
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return small + [n // k for k in reversed(small) if k * k != n]


# -- the sizes a search tries (hooks of the table) ----------------------------------------------------
def _tp(run: Any, system: Any, left: int, chosen: Mapping[str, int], opts: Mapping[str, Any]) -> Iterable[int]:
    """tp dividing the devices, up to a scale-up domain (a node; an NVL72 rack), dividing the heads and the widths
    (:func:`roofline.llm.table.check_tp`); on 256 GPUs of NVL72 racks tp 16 is tried, its groups at a rack's
    edge costed on the slower tier (:func:`roofline.planner.layout.members_per_domain`)."""
    return (t for t in divisors(left) if t <= system.domain and tp_fits(run.arch, t))


def tp_fits(arch: Any, tp: int) -> bool:
    """Whether tp divides ``arch``'s heads and widths (:func:`roofline.llm.table.check_tp` without the error)."""
    try:
        check_tp(arch, tp)
    except RooflineError:
        return False
    return True


def _cp_train(run: Any, system: Any, left: int, chosen: Mapping[str, int], opts: Mapping[str, Any]
              ) -> Iterable[int]:
    """cp splitting the sequence into ``2 cp`` equal chunks (Megatron-Core's load-balanced causal context
    parallelism), up to ``max_cp``, and (sequence parallelism) each device's shard into tp."""
    tp, max_cp, sp = chosen["tp"], opts.get("max_cp"), opts.get("sp", True)
    return (c for c in divisors(left) if not ((max_cp is not None and c > max_cp) or (c > 1 and run.seq % (2 * c))
                                              or (sp and tp > 1 and run.seq % (c * tp))))


def _cp_serve(run: Any, system: Any, left: int, chosen: Mapping[str, int], opts: Mapping[str, Any]
              ) -> Iterable[int]:
    """cp up to ``max_cp`` dividing the prompt."""
    return (c for c in divisors(left) if c <= opts.get("max_cp", 8) and run.prompt % c == 0)


def _pp_train(run: Any, system: Any, left: int, chosen: Mapping[str, int], opts: Mapping[str, Any]
              ) -> Iterable[int]:
    """pp up to the layers (uneven splits: :func:`~roofline.planner.layout.stage_layers`)."""
    return (p for p in divisors(left) if p <= run.arch.layers)


def _pp_serve(run: Any, system: Any, left: int, chosen: Mapping[str, int], opts: Mapping[str, Any]
              ) -> Iterable[int]:
    """pp dividing the layers and the batch (one micro-batch per stage in flight)."""
    return (p for p in divisors(left) if run.arch.layers % p == 0 and run.batch % p == 0)


def _dp_train(run: Any, system: Any, left: int, chosen: Mapping[str, int], opts: Mapping[str, Any]
              ) -> Iterable[int]:
    """dp: the devices left, when it divides the global batch."""
    return () if run.global_batch % left else (left,)


def _dp_serve(run: Any, system: Any, left: int, chosen: Mapping[str, int], opts: Mapping[str, Any]
              ) -> Iterable[int]:
    """dp: the devices left (replicas)."""
    return (left,)


def _ep(run: Any, system: Any, left: int, chosen: Mapping[str, int], opts: Mapping[str, Any]) -> Iterable[int]:
    """ep dividing the experts and dp (1 for a dense model)."""
    a = run.arch
    return [e for e in divisors(chosen["dp"]) if a.experts % e == 0] if a.experts else [1]


#: The parallel dimensions, in the order a search nests them (tp outermost; the devices left after tp, cp and
#: pp are dp's; ep carves groups out of dp).
DIMS: tuple[ParallelDim, ...] = (
    ParallelDim("tp", "tensor parallelism", ("heads", "hidden"), ("all_reduce", "all_gather", "reduce_scatter"),
                ("weights", "gradients", "optimizer", "activations", "kv"), "tp", _tp, _tp, rank=0, shown=True),
    ParallelDim("cp", "context parallelism", ("sequence",), ("all_gather", "reduce_scatter"), ("activations", "kv"),
                "tp", _cp_train, _cp_serve, rank=1),
    ParallelDim("pp", "pipeline parallelism", ("layers",), ("send_recv",),
                ("weights", "gradients", "optimizer", "kv"), "pp", _pp_train, _pp_serve, rank=3, shown=True),
    # dp by itself divides none of a device's memory: ZeRO shards the states over the replicas (:func:`replicas`)
    ParallelDim("dp", "data parallelism", ("batch",), ("all_reduce", "reduce_scatter", "all_gather"), (), "dp",
                _dp_train, _dp_serve, rank=2, shown=True),
    ParallelDim("ep", "expert parallelism", ("experts",), ("all_to_all",), ("weights", "gradients", "optimizer"),
                "ep", _ep, _ep, devices=False, within="dp"),
)
DIMS_BY_NAME: dict[str, ParallelDim] = {d.name: d for d in DIMS}


def names() -> tuple[str, ...]:
    """The dimensions as a layout names them: those always shown (tp, pp, dp), then the others (cp, ep)."""
    return tuple(d.name for d in DIMS if d.shown) + tuple(d.name for d in DIMS if not d.shown)


def device_factors() -> str:
    """'tp x cp x pp x dp': the dimensions whose product is the devices."""
    return " x ".join(d.name for d in DIMS if d.devices)


def devices(layout: Any) -> int:
    """The devices ``layout`` spans: the product of its :attr:`ParallelDim.devices` dimensions."""
    return math.prod(getattr(layout, d.name) for d in DIMS if d.devices)


def describe(layout: Any) -> list[str]:
    """['tp8', 'pp2', 'dp4', 'cp2']: each dimension shown always, or above 1, in :func:`names`' order."""
    return [f"{n}{getattr(layout, n)}" for n in names() if DIMS_BY_NAME[n].shown or getattr(layout, n) > 1]


def stride(layout: Any, name: str) -> int:
    """How far apart the ranks of one ``name`` group are: the product of the faster dimensions (Megatron-LM
    numbers ranks tp fastest, then cp, dp, pp); a carved dimension's groups are consecutive ranks of its
    ``within`` one (ep: dp ranks, tp x cp apart).

    >>> from types import SimpleNamespace as L
    >>> lay = L(tp=8, cp=2, pp=4, dp=2, ep=2)
    >>> stride(lay, "tp"), stride(lay, "cp"), stride(lay, "dp"), stride(lay, "pp"), stride(lay, "ep")
    (1, 8, 16, 32, 16)
    """
    d = DIMS_BY_NAME[name]
    if not d.devices:
        return stride(layout, d.within)
    return math.prod(getattr(layout, o.name) for o in DIMS if o.devices and o.rank < d.rank)


def replicas(layout: Any, expert: bool = False) -> int:
    """How many devices hold the same weights (a gradient is reduced over them, ZeRO shards over them): the
    product of the devices dimensions whose :attr:`ParallelDim.memory` does not divide the weights (dp x cp);
    of an expert's, over the carved dimensions that do as well (dp x cp / ep).

    >>> from types import SimpleNamespace as L
    >>> replicas(L(tp=8, cp=2, pp=4, dp=4, ep=2)), replicas(L(tp=8, cp=2, pp=4, dp=4, ep=2), expert=True)
    (8, 4)
    """
    held, carved = _replica_dims(DIMS)
    n = 1
    for name in held:  # a loop, not math.prod over a generator: the search calls this ~10 times a layout
        n *= getattr(layout, name)
    if expert:
        etp = getattr(layout, "etp", 0)
        if 0 < etp < layout.tp:  # Megatron-Core's parallel folding: the stage's tp x cp x dp = etp x ep x edp
            n = n * layout.tp // etp
        for name in carved:
            n //= getattr(layout, name)
    return max(n, 1)


_REPLICA_DIMS: list[Any] = [None, ((), ())]  # [the table read, (its names)]: one read per table object


def _replica_dims(dims: tuple[ParallelDim, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the devices dimensions that do not divide the weights, the carved ones that divide an expert's): read
    from the table once per table object, not once per layout (the search asks for each layout several times;
    hashing the table's records each time cost more than reading it)."""
    if _REPLICA_DIMS[0] is not dims:
        _REPLICA_DIMS[:] = [dims, (tuple(d.name for d in dims if d.devices and "weights" not in d.memory),
                                   tuple(d.name for d in dims if not d.devices and "weights" in d.memory))]
    names: tuple[tuple[str, ...], tuple[str, ...]] = _REPLICA_DIMS[1]
    return names


def overlap_rule(head: str) -> str:
    """The ``--overlap-*`` switch of a collective whose name starts with ``head`` ('dp' for any other)."""
    d = DIMS_BY_NAME.get(head)
    return d.overlap if d is not None else "dp"


def shapes(run: Any, system: Any, mode: str, options: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Every choice of the dimensions' sizes a ``mode`` ('train' or 'serve') search tries, as Layout keywords
    (name -> int): the table's hooks nested in its order (tp outermost), each :attr:`ParallelDim.devices` one
    dividing what the outer ones left of ``system.devices``."""
    opts = options or {}
    chosen: dict[str, Any] = {}

    def walk(k: int, left: int) -> Iterator[dict[str, Any]]:
        if k == len(DIMS):
            yield dict(chosen)
            return
        d = DIMS[k]
        for size in getattr(d, mode)(run, system, left, chosen, opts):
            chosen[d.name] = size
            yield from walk(k + 1, left // size if d.devices else left)
        chosen.pop(d.name, None)

    yield from walk(0, system.devices)
