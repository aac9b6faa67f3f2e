"""The parallel dimensions declared once (roofline.planner.dims.DIMS), and what reads the table."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from roofline.catalog import resolve_system
from roofline.core.errors import RooflineError
from roofline.planner import Layout, ServingRun, TrainingRun, dims
from roofline.planner.dims import DIMS, DIMS_BY_NAME, ParallelDim, divisors, names, replicas, shapes, stride
from roofline.planner.layout import SEARCHED, layout_keys
from roofline.planner.overlap import OVERLAP_DEFAULTS, rule_of
from roofline.work.costs import BUS_FACTORS

MEMORY = {"weights", "gradients", "optimizer", "activations", "kv"}


def test_every_dimension_is_a_layout_field_and_the_table_is_whole():
    fields = dataclasses.fields(Layout)
    # every dimension is an int field of Layout, 1 by default: its first fields, in names()' order (tp, pp, dp, ...)
    assert tuple(f.name for f in fields[:len(DIMS)]) == names() == ("tp", "pp", "dp", "cp", "ep")
    assert all(f.default == 1 for f in fields[:len(DIMS)])
    for d in DIMS:
        assert d.divides and set(d.memory) <= MEMORY and d.overlap in OVERLAP_DEFAULTS, d.name
        assert all(c in BUS_FACTORS or c == "send_recv" for c in d.collectives), d.name
        assert d.devices or DIMS_BY_NAME[d.within].devices, d.name
    # Megatron-LM's rank order: tp fastest, then cp, dp, pp (the devices dimensions, each rank once)
    assert sorted((d.rank, d.name) for d in DIMS if d.devices) == [(0, "tp"), (1, "cp"), (2, "dp"), (3, "pp")]


def test_devices_describe_and_strides_from_the_table():
    lay = Layout(tp=4, pp=2, dp=8, cp=2, ep=4)
    # tp x cp x pp x dp = 4 * 2 * 2 * 8 = 128; ep carves groups out of dp, no factor of its own
    assert lay.devices == 128
    assert lay.describe().startswith("tp4 pp2 dp8 cp2 ep4 zero1")
    assert Layout(tp=8, dp=2).describe().startswith("tp8 pp1 dp2 zero1")  # cp, ep 1: not named
    # ranks tp fastest, then cp, dp, pp: cp groups 4 apart, dp 4 * 2 = 8, pp 4 * 2 * 8 = 64; ep within dp: 8
    assert [stride(lay, n) for n in ("tp", "cp", "dp", "pp", "ep")] == [1, 4, 8, 64, 8]
    # the same weights on the dimensions whose memory effect leaves the weights whole: dp x cp = 16; an
    # expert's, divided over ep as well: 16 / 4 = 4
    assert (replicas(lay), replicas(lay, expert=True)) == (16, 4)
    assert [d.name for d in DIMS if d.devices and "weights" not in d.memory] == ["cp", "dp"]


def test_overlap_rules_follow_each_dimension():
    assert [rule_of(n) for n in ("tp all-reduce", "cp kv all-gather", "ep all-to-all", "pp send/recv",
                                 "dp grad all-reduce", "expert dp grad reduce-scatter")] == [
        "tp", "tp", "ep", "pp", "dp", "dp"]  # ep: its own switch (--overlap-ep)


def test_the_layout_grammar_and_the_search_keys_read_the_table():
    assert SEARCHED[:len(DIMS)] == names()
    assert layout_keys("tp=2,pp=4,dp=8,cp=2,ep=2", 0.0) == {"overlap": 0.0, "tp": 2, "pp": 4, "dp": 8, "cp": 2, "ep": 2}
    with pytest.raises(RooflineError, match="expected KEY=VALUE with KEY one of capacity, cp, dispatcher, dp, embed-split, ep, etp, first, interleave"):
        layout_keys("xp=2", 0.0)


def _old_training_shapes(run, system):
    """The nested loops the search ran before the table: tp within a node dividing the heads; cp splitting the
    sequence into 2 cp chunks (and each shard over tp); pp up to the layers; dp the rest, dividing the global
    batch; ep dividing the experts and dp."""
    from roofline.llm.table import check_tp

    a, n = run.arch, system.devices
    for tp in divisors(system.devices_per_node):
        try:
            check_tp(a, tp)
        except RooflineError:
            continue
        for cp in divisors(n // tp):
            if (cp > 1 and run.seq % (2 * cp)) or (tp > 1 and run.seq % (cp * tp)):
                continue
            for pp in (p for p in divisors(n // (tp * cp)) if p <= a.layers):
                dp = n // (tp * cp * pp)
                if run.global_batch % dp:
                    continue
                for ep in ([e for e in divisors(dp) if a.experts % e == 0] if a.experts else [1]):
                    yield {"tp": tp, "cp": cp, "pp": pp, "dp": dp, "ep": ep}


@pytest.mark.parametrize("model", ["llama-2-7b", "mixtral-8x7b"])
def test_the_table_enumerates_what_the_nested_loops_did(model):
    run = TrainingRun.of(model, seq=8192, global_batch=96)
    system = resolve_system("dgx-h100", nodes=4)
    got = list(shapes(run, system, "train", {"sp": True}))
    assert got == list(_old_training_shapes(run, system)) and len(got) > 10
    # serving: cp up to 8 dividing the prompt, pp dividing the layers and the batch, dp the rest
    srun = ServingRun.of(model, batch=64, prompt=1024, gen=256)
    for s in shapes(srun, system, "serve", {"max_cp": 8}):
        assert s["tp"] * s["cp"] * s["pp"] * s["dp"] == 32 and s["cp"] <= 8 and srun.arch.layers % s["pp"] == 0


def test_a_new_dimension_is_one_table_entry(monkeypatch):
    """A made-up 'xp' (1, or 2 where the devices left are even): the search's shapes, the description, the
    devices and the strides take it in from the table alone."""
    def xp(run, system, left, chosen, opts):
        return [x for x in (1, 2) if left % x == 0]

    run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=64)
    system = resolve_system("dgx-h100", nodes=2)
    before = list(shapes(run, system, "train", {"sp": True}))
    new = ParallelDim("xp", "made-up parallelism", ("sequence",), ("all_to_all",), ("activations",), "tp", xp, xp,
                      rank=4)
    table = (*DIMS[:3], new, *DIMS[3:])  # after pp, before dp (which takes the devices left)
    monkeypatch.setattr(dims, "DIMS", table)
    monkeypatch.setattr(dims, "DIMS_BY_NAME", {d.name: d for d in table})
    got = list(shapes(run, system, "train", {"sp": True}))
    # xp 1: the shapes of before; xp 2: half the devices left to dp, the product still the 16 devices
    assert [{k: v for k, v in s.items() if k != "xp"} for s in got if s["xp"] == 1] == before
    halved = [s for s in got if s["xp"] == 2]
    assert halved and all(s["tp"] * s["cp"] * s["pp"] * s["xp"] * s["dp"] == 16 for s in halved)
    lay = SimpleNamespace(tp=2, cp=1, pp=2, dp=2, ep=1, xp=2)
    assert dims.devices(lay) == 16 and dims.describe(lay) == ["tp2", "pp2", "dp2", "xp2"]
    assert stride(lay, "xp") == 2 * 1 * 2 * 2  # the slowest of all (rank 4): after tp, cp, dp and pp
    assert names() == ("tp", "pp", "dp", "cp", "xp", "ep")
