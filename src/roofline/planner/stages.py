"""The pipeline's split of the layers: layers per stage and per virtual stage (model chunk), as Megatron-Core
splits them and as published runs state them, and what an uneven split does to the schedule.

A split is ``chunks``: per pipeline rank, the layers of each of its ``v`` model chunks, in chunk order.  Megatron-Core
numbers the virtual stages in model order, virtual stage ``j`` being chunk ``j // pp`` of rank ``j % pp``
(``get_num_layers_to_build`` and ``get_transformer_layer_offset`` in ``megatron/core/transformer/transformer_block.py``
and ``transformer_layer.py``, Megatron-LM at d98e8a64: "Stage 0: [0] [2] [4] [6] / Stage 1: [1] [3] [5] [7]").

Where the split comes from (:func:`split`), first match:

* ``stages=`` with ``pp x v`` entries: the virtual stages in model order, what Megatron-Core's
  ``--pipeline-model-parallel-layout`` states layer by layer (DeepSeek-V3's published H100 run,
  ``"Et|(tt|)*30mL"`` at pp 8, v 4: 1/2x30/0, Megatron-MoE-ModelZoo ``best_practice/deepseek-v3/
  run_deepseek_v3_h100.sh`` at e8650517);
* Megatron-Core's flags (:func:`megatron_split`, its rules and its errors): ``first=`` / ``last=``
  (``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers``), ``embed-split`` /
  ``loss-split`` (``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``);
* else the layers per rank (``stages=`` with ``pp`` entries, or :func:`~roofline.planner.layout.stage_layers`'
  split, the edges one layer short as Llama 3's) and each rank's over its ``v`` chunks as evenly as possible
  (:func:`even_chunks`).  Megatron-Core itself refuses a rank whose layers ``v`` does not divide ("number of layers
  on each pipeline rank ... must be divisible by virtual_pipeline_model_parallel_size", ``transformer_config.py``);
  such a split runs there through ``--pipeline-model-parallel-layout``, which takes any per-virtual-stage
  counts: 61 layers at pp 4, v 8 is 15/15/16/15 per rank, chunks of 2 with one of 1 on each short rank.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from roofline.core.errors import RooflineError
from roofline.planner.layout import compact_stages, in_flight, stage_layers

Chunks = tuple[tuple[int, ...], ...]


def even_chunks(n: int, v: int, rank: int, pp: int) -> tuple[int, ...]:
    """Rank ``rank``'s ``n`` layers over its ``v`` chunks as evenly as possible: ``n mod v`` chunks of
    ``ceil(n / v)``, the rest one fewer; the lighter ones first on the first rank (its chunk 0 holds the
    embedding), last elsewhere (the last rank's chunk v - 1 holds the output layer and the loss), Llama 3's
    placement (Dubey et al. 2024, section 3.3.2: "the first model chunk on the first stage has only the embedding,
    and the last model chunk on the last stage has only output projection and loss calculation").

    >>> even_chunks(15, 8, 0, 4), even_chunks(15, 8, 3, 4), even_chunks(7, 8, 0, 16)
    ((1, 2, 2, 2, 2, 2, 2, 2), (2, 2, 2, 2, 2, 2, 2, 1), (0, 1, 1, 1, 1, 1, 1, 1))
    """
    q, r = divmod(n, v)
    light, heavy = [q] * (v - r), [q + 1] * r
    return tuple(light + heavy) if rank == 0 and pp > 1 else tuple(heavy + light)


def megatron_split(layers: int, pp: int, v: int, first: int = 0, last: int = 0, embed: bool = False,
                   loss: bool = False) -> Chunks:
    """Megatron-Core's split with its pipeline flags (``TransformerConfig.__post_init__`` and
    ``get_num_layers_to_build``, Megatron-LM d98e8a64), its refusals as one-line errors:

    * ``first`` / ``last`` (0: not given): those layers on the first / last rank, the rest divided evenly over the
      ranks between ("the left over layers must be divisible by left over stages"), each rank's divisible by ``v``;
      not with ``embed`` / ``loss`` ("cannot be set at the same time");
    * ``embed`` / ``loss``: the embedding and the loss each counted as one layer: ``layers + embed + loss`` over
      ``pp`` ranks and ``v`` chunks evenly, then the first rank's chunk 0 one layer fewer (the embedding in its
      place) and the last rank's chunk v - 1 one fewer (the loss).

    >>> megatron_split(61, 16, 1, first=4, last=1)[:2], megatron_split(61, 16, 1, first=4, last=1)[-1]
    (((4,), (4,)), (1,))
    >>> qwen = megatron_split(94, 8, 4, embed=True, loss=True)   # (94 + 2) / 8 = 12 a rank, chunks of 3
    >>> [sum(c) for c in qwen], qwen[0], qwen[-1]
    ([11, 12, 12, 12, 12, 12, 12, 11], (2, 3, 3, 3), (3, 3, 3, 2))
    """
    if (first or last) and (embed or loss):
        raise RooflineError("first=/last= and embed-split/loss-split cannot be set together (Megatron-Core refuses "
                            "--decoder-first/last-pipeline-num-layers with --account-for-embedding/loss-in-pipeline-split)")
    if first or last:
        return _first_last(layers, pp, v, first, last)
    total = layers + embed + loss
    if total % pp or (total // pp) % v:
        raise RooflineError(f"{layers} layers{' + the embedding' if embed else ''}{' + the loss' if loss else ''} = "
                            f"{total} do not divide evenly over pp {pp} x interleave {v} (Megatron-Core's "
                            "--account-for-*-in-pipeline-split needs whole chunks)")
    each = total // pp // v
    out = [[each] * v for _ in range(pp)]
    out[0][0] -= embed
    out[-1][-1] -= loss
    return tuple(tuple(c) for c in out)


def _first_last(layers: int, pp: int, v: int, first: int, last: int) -> Chunks:
    """Megatron-Core's uneven first / last pipeline stage (:func:`megatron_split`)."""
    given = [n for n in (first, last) if n]
    if any(n < 0 for n in (first, last)):
        raise RooflineError("first= and last= are layers, >= 1")
    if any(n % v for n in given):
        raise RooflineError(f"first=/last= ({'/'.join(map(str, given))} layers) must be divisible by interleave {v} "
                            "(Megatron-Core: 'number of layers at first stage ... must be divisible by virtual "
                            "pipeline parallel degree')")
    middle_ranks = pp - (first > 0) - (last > 0)
    rest = layers - first - last
    if middle_ranks < 0 or bool(rest) != bool(middle_ranks) or rest < 0 or (middle_ranks and rest % middle_ranks) \
            or (middle_ranks and (rest // middle_ranks) % v):
        raise RooflineError(f"first={first or '-'} last={last or '-'} leave {rest} of the {layers} layers for "
                            f"{middle_ranks} middle stages: Megatron-Core needs them divided evenly (and each by "
                            f"interleave {v})")
    each = rest // middle_ranks if middle_ranks else 0
    ranks = [each] * pp
    if first:
        ranks[0] = first
    if last:
        ranks[-1] = last
    return tuple(tuple([n // v] * v) for n in ranks)


def virtual_split(stages: tuple[int, ...], pp: int, v: int) -> Chunks:
    """``stages=`` as ``pp x v`` virtual stages in model order -> chunks per rank (virtual stage ``j`` is chunk
    ``j // pp`` of rank ``j % pp``).

    >>> virtual_split((1, 2, 2, 2, 2, 2, 2, 0), 4, 2)
    ((1, 2), (2, 2), (2, 2), (2, 0))
    """
    return tuple(tuple(stages[c * pp + r] for c in range(v)) for r in range(pp))


def check_chunks(chunks: Chunks, layers: int) -> Chunks:
    """``chunks``, or a one-line error: a chunk with no layer other than the first (the embedding's) or the last
    (the loss's), or a split that does not sum to the model's layers."""
    pp, v = len(chunks), len(chunks[0])
    got = sum(map(sum, chunks))
    if got != layers:
        raise RooflineError(f"the pipeline split sums to {got} layers; the model has {layers}")
    for r, ch in enumerate(chunks):
        for c, n in enumerate(ch):
            edge = (r == 0 and c == 0) or (r == pp - 1 and c == v - 1)
            if n < 0 or (n == 0 and not edge):
                raise RooflineError(f"interleave {v} leaves chunk {c} of pipeline stage {r + 1} with {n} layers "
                                    f"({'/'.join(str(sum(x)) for x in chunks)} per stage): use a smaller interleave")
    return chunks


@lru_cache(maxsize=4096)
def split(layers: int, pp: int, v: int, stages: tuple[int, ...] | None = None, first: int = 0, last: int = 0,
          embed: bool = False, loss: bool = False) -> Chunks:
    """The layers of each rank's chunks (see the module): ``stages`` as virtual stages when it has ``pp x v``
    entries (v > 1), else per rank; Megatron-Core's flags; else the default split.

    >>> [sum(c) for c in split(61, 4, 8)], split(61, 4, 8)[2], split(61, 4, 8)[0]
    ([15, 15, 16, 15], (2, 2, 2, 2, 2, 2, 2, 2), (1, 2, 2, 2, 2, 2, 2, 2))
    """
    if stages is not None and v > 1 and len(stages) == pp * v:
        return check_chunks(virtual_split(stages, pp, v), layers)
    if stages is None and (first or last or embed or loss):
        return check_chunks(megatron_split(layers, pp, v, first, last, embed, loss), layers)
    if stages is not None and (first or last or embed or loss):
        raise RooflineError("stages= states the split; first=/last=/embed-split/loss-split would set it again")
    ranks = stage_layers(layers, pp, stages)
    return check_chunks(tuple(even_chunks(n, v, r, pp) for r, n in enumerate(ranks)), layers)


def uniform(chunks: Chunks) -> bool:
    """Whether every rank's chunks are alike (the closed forms of :func:`~roofline.planner.layout.in_flight` hold)."""
    return all(len(set(c)) == 1 for c in chunks)


def bubble_skew(chunks: Chunks) -> float:
    """The interleaved pipeline bubble of an uneven split over the even one's: the warm-up and the cool-down each
    put ``pp - 1`` chunk passes on the critical path (Narayanan et al. 2021, section 2.2.2: bubble ``(pp - 1) / v``
    of a micro-batch's time ``t`` on the busiest stage, chunks of ``t / v`` each); with unequal chunks each of
    those passes takes up to the largest chunk's time, ``t x c_max / n`` (``n`` the most layers a stage has), so
    the bubble is ``(pp - 1) / v x (v c_max / n)``: this factor, 1 for equal chunks and without interleaving (the
    stage's whole micro-batch is the chunk).  A forecast's: the bound keeps the even ``(pp - 1) / v``.

    >>> bubble_skew(((2, 2), (2, 2))), bubble_skew(((1, 2, 2), (2, 2, 2))), bubble_skew(((1, 1, 2), (2, 1, 1)))
    (1.0, 1.0, 1.5)
    """
    v, n = len(chunks[0]), max(map(sum, chunks))
    biggest = max(max(c) for c in chunks)
    return max(1.0, v * biggest / n) if n and v > 1 else 1.0


@lru_cache(maxsize=4096)
def peak_layers(pp: int, m: int, stage: int, weights: tuple[int, ...]) -> float:
    """The most layers' activations pipeline stage ``stage`` holds over Megatron-LM's interleaved schedule, its
    chunks ``weights`` layers each (any, uneven included): the order of
    ``forward_backward_pipelining_with_interleaving`` (``schedules.py``): ``W = 2 (pp - stage - 1) + (v - 1) pp``
    warm-up forwards (all ``m v`` when m = pp), then a forward and a backward per step, then the remaining
    backwards; forward ``i`` runs chunk ``(i mod pp v) // pp``, backward ``j`` chunk ``v - 1 - (j mod pp v) // pp``.

    >>> peak_layers(4, 8, 0, (3, 3)) / 6   # uniform chunks: in_flight(4, 2, 8, 0) = 4 (1 + 3 / 8)
    5.5
    """
    v = len(weights)
    total = m * v
    warm = total if m == pp else min(2 * (pp - stage - 1) + (v - 1) * pp, total)
    held = peak = 0
    for f in range(total):
        held += weights[(f % (pp * v)) // pp]
        peak = max(peak, held)
        if f >= warm:
            b = f - warm
            held -= weights[v - 1 - (b % (pp * v)) // pp]
    return float(peak)


def describe(chunks: Chunks) -> str:
    """'1/2x30/0': the virtual stages in model order, runs of equal ones as NxK (``stages=``' grammar)."""
    pp, v = len(chunks), len(chunks[0])
    return compact_stages(tuple(chunks[j % pp][j // pp] for j in range(pp * v)))


def layout_chunks(layout: Any, layers: int) -> Chunks:
    """The split of a :class:`~roofline.planner.layout.Layout` (its ``stages``, ``interleave`` and Megatron-Core
    keys) of ``layers`` layers: :func:`split`."""
    return split(layers, layout.pp, layout.interleave, layout.stages, layout.first_layers, layout.last_layers,
                 layout.embed_split, layout.loss_split)


def in_flight_layers(pp: int, v: int, m: int, stage: int, chunks: tuple[int, ...]) -> float:
    """Micro-batches whose activations stage ``stage`` holds at its peak, in units of all its layers: the closed
    forms of :func:`~roofline.planner.layout.in_flight` for equal chunks, else :func:`peak_layers` over its layers."""
    n = sum(chunks)
    if v == 1 or len(set(chunks)) == 1 or not n:
        return in_flight(pp, v, m, stage)
    return peak_layers(pp, m, stage, chunks) / n
