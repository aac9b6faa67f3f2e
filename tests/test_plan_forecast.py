"""The planner ranks by the forecast: MFU by hand, the overlap rules on a toy by hand, partial --layout, tied
marks, compare says what it ranked by."""

from __future__ import annotations

import json
import re

import pytest

from roofline.catalog import get_system
from roofline.cli import main
from roofline.planner import Comm, Estimate, Layout, TrainingRun, estimate, plan, plan_layouts
from roofline.planner.forecast import STATED_ERROR
from roofline.planner.overlap import exposed
from roofline.planner.train import StepForecast

PLAN = ["plan", "llama-2-7b", "--system", "dgx-h100", "--nodes", "2", "--train", "--global-batch", "64"]


def test_mfu_by_hand_for_one_row():
    """llama-2-7b, 64 x 4096 tokens, tp8 dp2 on 16 H100s.  GEMM parameters per layer 4 x 4096^2 + 3 x 4096 x
    11008 = 202,375,168, x 32 layers = 6,476,005,376, plus lm_head 4096 x 32000 = 131,072,000: N = 6,607,077,376;
    2 N = 13,214,154,752 FLOPs per token forward.  Causal attention: 4096 x 4097 / 2 = 8,390,656 pairs per
    sequence, 4 x 4096 FLOPs per pair per layer, x 32 layers.  Model FLOPs = 3 x (2 N x 262,144 tokens + 64 x
    8,390,656 x 16384 x 32) = 3 x (3.464011e15 + 2.815437e14) = 1.1236665e16 (norms, activations and softmax add
    about 0.1% more: rel 2e-3).  MFU = that / (16 devices x step x 989.4e12, the H100 SXM's dense bf16 peak)."""
    run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=64)
    e = estimate(run, Layout(tp=8, dp=2), get_system("dgx-h100", nodes=2))
    gemm = 3 * 13_214_154_752 * 64 * 4096
    attention = 3 * 64 * 8_390_656 * 4 * 4096 * 32
    assert e.model_flops == pytest.approx(gemm + attention, rel=2e-3)
    assert gemm + attention == pytest.approx(1.1236665e16, rel=1e-6)
    assert e.system.device.choose_compute("matrix", "bf16").ceiling.flops == pytest.approx(989.4e12, rel=1e-3)
    assert e.mfu == pytest.approx(1.1236665e16 / (16 * e.time * 989.4e12), rel=2e-3)
    assert e.model_tflops_per_device == pytest.approx(1.1236665e16 / 16 / e.time / 1e12, rel=2e-3)
    assert e.time >= e.bound  # the forecast never beats the bound


def _toy(**switches: bool) -> Estimate:
    """Two stages, two replicas (pp2 dp2), 4 micro-batches: per micro-batch forward F = 1 s, backward B = 2 s
    (forecast), optimizer 0.5 s; collectives with hand-picked forecast seconds per step."""
    run = TrainingRun.of("llama-2-7b", seq=1024, global_batch=8)
    comms = (Comm("tp all-reduce", 4.0, ("node",), "micro-batch", 1.0, 4, 4.0),
             Comm("pp send/recv", 0.8, ("cluster",), "micro-batch", 1.0, 8, 0.8),
             Comm("dp grad reduce-scatter", 2.5, ("cluster",), "step", 1.0, 1, 2.5),
             Comm("dp weight all-gather", 1.5, ("cluster",), "step", 1.0, 1, 1.5))
    lay = Layout(tp=2, pp=2, dp=2, **switches)
    return Estimate(run, lay, get_system("dgx-h100"), 4, 0.5, 1.0, 0.0, 0.25, comms, {}, (16, 16), 0, None,
                    StepForecast(1.0, 2.0, 0.0, 0.5))


def test_overlap_rules_on_a_two_stage_two_replica_toy():
    """slots = m + pp - 1 = 5.  Defaults (dp on, tp off, pp on):
    tp all-reduce exposed: 4 s x 5 / 4 = 5 s (between the GEMMs, on every slot);
    pp: 8 calls of 0.1 s, the warm-up's and cool-down's 2 (pp - 1) = 2 exposed: 0.2 s;
    dp grad reduce-scatter behind the last backward: 2.5 - 2 = 0.5 s; weight all-gather behind the first
    forward: 1.5 - 1 = 0.5 s.  Step = 5 x 3 + 5 + 0.2 + 0.5 + 0.5 + 0.5 (optimizer) = 21.7 s.
    All on: tp hidden 5 x max(0, 1 - 3) = 0; step 15 + 0.2 + 1 + 0.5 = 16.7 s.
    All off: tp 5, pp 0.8 x 5 / 4 = 1, dp 2.5 + 1.5 = 4: 15 + 5 + 1 + 4 + 0.5 = 25.5 s."""
    e = _toy()
    assert e.exposed() == pytest.approx({"tp all-reduce": 5.0, "pp send/recv": 0.2, "dp grad reduce-scatter": 0.5,
                                         "dp weight all-gather": 0.5})
    assert e.time == pytest.approx(21.7)
    assert sum(e.parts().values()) == pytest.approx(21.7)
    assert _toy(overlap_tp=True).time == pytest.approx(16.7)
    assert _toy(overlap_dp=False, overlap_pp=False).time == pytest.approx(25.5)


def test_interleaved_fill_and_drain_expose_2_pp_v_minus_1_sends():
    """Interleaved over v chunks the fill's first micro-batch crosses pp v chunks, pp v - 1 sends, the drain as many
    (Narayanan et al. 2021 section 2.2.2): 8 calls of 0.1 s (T = 0.8 s), pp 2, m 4, slots 5; v 1: 2 x 1 = 2 calls,
    0.2 s; v 2: 2 x 3 = 6 calls, 0.6 s; v 4: 2 x 7 = 14 calls, 1.4 s, capped at all of them on every slot,
    0.8 x 5 / 4 = 1.0 s."""
    c = Comm("pp send/recv", 0.8, ("node",), "micro-batch", 1.0, 8, 0.8)
    got = [exposed(c, Layout(pp=2, dp=2, interleave=v), 4, 5, 1.0, 2.0) for v in (1, 2, 4)]
    assert got == pytest.approx([0.2, 0.6, 1.0])


def test_zero3_gathers_prefetched_by_hand():
    """ZeRO 3, 4 micro-batches, F = 1, B = 2: a 16 s all-gather is 2 s per pass; prefetched, each hides behind
    its forward (1 s) or backward (2 s): 4 x (1 + 0) = 4 s exposed; a 12 s reduce-scatter, 3 s per backward:
    4 x (3 - 2) = 4 s; off: all 16 and 12."""
    lay = Layout(pp=2, dp=2, zero=3)
    ag = Comm("dp fsdp weight all-gather", 16.0, ("node",), "micro-batch", 1.0, 8, 16.0)
    rs = Comm("dp fsdp grad reduce-scatter", 12.0, ("node",), "micro-batch", 1.0, 4, 12.0)
    assert exposed(ag, lay, 4, 5, 1.0, 2.0) == pytest.approx(4.0)
    assert exposed(rs, lay, 4, 5, 1.0, 2.0) == pytest.approx(4.0)
    off = Layout(pp=2, dp=2, zero=3, overlap_dp=False)
    assert exposed(ag, off, 4, 5, 1.0, 2.0) == 16.0 and exposed(rs, off, 4, 5, 1.0, 2.0) == 12.0


def test_partial_layout_ranks_only_matching_layouts(tmp_path, capsys):
    """--layout tp=8,pp=2 searches the rest; its rows are exactly the full search's rows with tp 8 and pp 2, in
    the same order (cross-checked against plan() without the filter)."""
    out = tmp_path / "p.json"
    assert main([*PLAN, "--layout", "tp=8,pp=2", "--top", "500", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["layouts"]
    assert len(rows) > 1 and all(r["tp"] == 8 and r["pp"] == 2 for r in rows)
    full = plan(TrainingRun.of("llama-2-7b", seq=4096, global_batch=64), get_system("dgx-h100", nodes=2), top=100_000)
    want = [e.describe() for e in full.ranked if e.layout.tp == 8 and e.layout.pp == 2][:500]
    assert [r["layout"] for r in rows] == want
    result = plan_layouts(TrainingRun.of("llama-2-7b", seq=4096, global_batch=64), get_system("dgx-h100", nodes=2),
                          layout="tp=8,pp=2", top=500)
    assert result.fixed == {"tp": 8, "pp": 2} and not result.one_layout and not result.none_fit
    assert [e.describe() for e in result.estimates] == want


def test_tied_layouts_are_marked_and_json_keys(tmp_path, monkeypatch):
    """A row is tied when its forecast lies within the stated error of the best's (the result's rows, the JSON,
    and the table's '~' after the rank of every tied row but the best, drawn from them); JSON rows carry
    forecast_seconds (the ranking key, ascending), mfu, model_tflops_per_device, bound_seconds, and no other
    key names the forecast."""
    from roofline.render.plan import plan_table

    out = tmp_path / "p.json"
    assert main([*PLAN, "--top", "400", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    rows = doc["layouts"]
    f = [r["forecast_seconds"] for r in rows]
    assert f == sorted(f) and all(r["forecast_seconds"] >= r["bound_seconds"] for r in rows)
    ties = [r["forecast_seconds"] - f[0] < STATED_ERROR * f[0] for r in rows]
    assert [r["tied_with_best"] for r in rows] == ties and any(ties[1:]) and not all(ties)
    result = plan_layouts(TrainingRun.of("llama-2-7b", seq=4096, global_batch=64), get_system("dgx-h100", nodes=2),
                          top=400)
    assert [r.tied for r in result.rows] == ties and [r.marked_tied for r in result.rows] == [False, *ties[1:]]
    monkeypatch.setenv("COLUMNS", "200")
    lines = [ln for ln in plan_table(result) if ln[:3].strip().isdigit()]  # the table's rows
    assert [ln[3] == "~" for ln in lines] == [False, *ties[1:]]
    keys = {k for r in rows for k in r} | set(doc)
    assert {k for k in keys if "forecast" in k} == {"forecast_seconds"}
    assert {"mfu", "model_tflops_per_device", "bound_seconds"} <= keys
    assert doc["ranked_by"] == "forecast step seconds" == result.ranked_by


def test_overlap_f_for_training_is_refused_with_a_pointer(capsys):
    assert main([*PLAN, "--overlap", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "--overlap-dp" in err and err.count("\n") == 1


def test_overlap_switches_change_the_forecast_not_the_bound(tmp_path):
    """--overlap-tp on hides the tp all-reduces: the same layout's forecast drops, its bound stays."""
    got = {}
    for flag in ("off", "on"):
        out = tmp_path / f"{flag}.json"
        assert main([*PLAN, "--layout", "tp=8,pp=1,dp=2,cp=1,ep=1,zero=1,mb=1,recompute=selective,interleave=1",
                     "--overlap-tp", flag, "--json", str(out)]) == 0
        got[flag] = json.loads(out.read_text())["layouts"][0]
    assert got["on"]["forecast_seconds"] < got["off"]["forecast_seconds"]
    assert got["on"]["bound_seconds"] == got["off"]["bound_seconds"]


def test_compare_says_what_it_ranked_by(capsys, tmp_path):
    out = tmp_path / "c.json"
    assert main(["compare", "llama-2-7b", "--devices", "h100,a100", "--json", str(out)]) == 0
    assert "ranked by roofline time (the bound)" in capsys.readouterr().out
    assert json.loads(out.read_text())["ranked_by"] == "roofline time (the bound)"
    assert main(["compare", "llama-2-7b", "--devices", "h100,a100", "--forecast", "--json", str(out)]) == 0
    assert "ranked by forecast" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["ranked_by"] == "forecast"
    f = [r["forecast_s"] for r in doc["rows"]]
    assert f == sorted(f)


def test_shard_forecasts_batched_equal_one_by_one_and_quantization_shows():
    """The search forecasts every shard shape in one analyze call: the same figures as one shard at a time.  A
    tp8 shard's GEMMs are 1/8 as wide: its forecast over its bound exceeds the unsharded one's (tile/wave
    quantization and the launch floor weigh more on the smaller kernels)."""
    from roofline.planner.forecast import shard_forecast, shard_forecasts

    run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=64)
    dev = get_system("dgx-h100").device
    keys = [(1, 1, 1, 1), (8, 1, 1, 1), (2, 2, 1, 2)]
    batch = shard_forecasts(run, keys, dev)
    for k in keys:
        one = shard_forecast(run, *k, dev)
        assert batch[k].layers_forward == pytest.approx(one.layers_forward, rel=1e-12)
        assert batch[k].layers_backward == pytest.approx(one.layers_backward, rel=1e-12)
    from roofline.planner.cache import _shard_on

    ratio = {tp: batch[(tp, 1, 1, 1)].layers_forward / _shard_on(run, tp, 1, 1, 1, dev).layers_time for tp in (1, 8)}
    assert ratio[8] > ratio[1] >= 1.0


def test_price_and_ties_of_plan_rows_by_hand():
    """The toy's step is 21.7 s on 8 devices (pp2 dp2 tp2) for 8 x 1024 = 8192 tokens; at 3 USD per device-hour a
    step costs 3 x 8 / 3600 x 21.7 = 0.144667 USD, 1.76595e-5 per token: 17.6595 USD per million.  With tp
    overlapped the step is 16.7 s (test above): ranked first, and 21.7 - 16.7 = 5 s is past 10% of 16.7 s, so the
    slower row is not tied (the best is tied with itself)."""
    from roofline.planner.result import plan_rows

    slow, fast = _toy(), _toy(overlap_tp=True)
    assert slow.usd_per_million_tokens(3.0) == pytest.approx(17.6595, rel=1e-5)
    rows = plan_rows([fast, slow], 3.0)
    assert [(r.rank, r.tied, r.marked_tied) for r in rows] == [(1, True, False), (2, False, False)]
    assert rows[1].usd_per_mtok == pytest.approx(17.6595, rel=1e-5)
    assert rows[0].usd_per_mtok == pytest.approx(17.6595 * 16.7 / 21.7, rel=1e-5)  # the cost scales with the step
    assert all(r.usd_per_mtok is None for r in plan_rows([fast, slow], None))
    d = rows[1].to_dict()
    assert d["forecast_seconds"] == d["seconds"] == pytest.approx(21.7) and d["bound_seconds"] == slow.bound
    assert d["usd_per_million_tokens"] == rows[1].usd_per_mtok and d["tied_with_best"] is False
    assert "usd_per_million_tokens" not in plan_rows([slow], None)[0].to_dict()


def test_the_layout_grammar():
    """--layout's keys to Layout fields: mb and v are aliases, stages= sets pp to its length (NxK: K stages of N
    layers), sp takes true/false words; naming sp=, stages= or every searched key times one layout."""
    from roofline.core.errors import RooflineError
    from roofline.planner.layout import layout_keys, names_one_layout, parse_layout

    assert parse_layout("tp=8, mb=2 ,v=2,sp=off") == Layout(tp=8, micro_batch=2, interleave=2, sp=False)
    keys = layout_keys("tp=8,stages=7/8x2/7", 0.25)
    assert keys == {"overlap": 0.25, "tp": 8, "stages": (7, 8, 8, 7), "pp": 4} and names_one_layout(keys)
    assert not names_one_layout(layout_keys("tp=8,pp=2"))
    assert names_one_layout(layout_keys("tp=1,pp=1,dp=8,cp=1,ep=1,zero=1,mb=1,recompute=none,interleave=1"))
    for text, message in (("tp=8,pp=2,stages=16x2,pp=4", "conflict (both set pp)"),
                          ("tp=4,pp=4,stages=16x2", "'pp=4' and 'stages=16x2' conflict (2 stages)"),
                          ("stages=0x2", "whole numbers >= 1"), ("sp=maybe", "sp must be true or false"),
                          ("tq=8", "KEY=VALUE"), ("tp=x", "tp must be a whole number")):
        with pytest.raises(RooflineError, match=re.escape(message)):
            layout_keys(text)


def test_the_words_and_the_text_read_the_result(monkeypatch):
    """One layout named in full: the answer is its headline (no 'best layout:'), the header says one layout, the
    training notes and glossary follow; the text prints them in that order around the table (the table's one row
    the layout), and the JSON is the result's."""
    from roofline.render.plan import plan_text
    from roofline.words.plan import FLOP_NOTE, TRAINING_GLOSSARY, plan_words

    monkeypatch.setenv("COLUMNS", "400")  # one line per sentence
    run = TrainingRun.of("llama-2-7b", seq=4096, global_batch=64)
    r = plan_layouts(run, get_system("dgx-h100", nodes=2), layout="tp=8,pp=2,stages=16/16", price=2.0)
    w = plan_words(r)
    assert r.one_layout and r.tried == 1 and w.answer == r.best.headline()
    assert w.header == "llama-2-7b training on NVIDIA DGX H100 x 2 (16 devices): one layout" == f"{w.title}: one layout"
    assert w.notes == (FLOP_NOTE,) and w.glossary == TRAINING_GLOSSARY
    assert w.best[1].endswith("layers per stage 16/16")
    lines = plan_text(r, w).splitlines()
    assert lines[:4] == [w.answer, w.header, w.settings, FLOP_NOTE] and lines[-1] == w.glossary
    assert sum(r.best.describe() in ln for ln in lines) >= 2  # the table's row and the best line
    doc = r.to_dict()
    assert doc["tried"] == 1 and doc["layouts"][0]["stage_layers"] == [16, 16]
    assert doc["layouts"][0]["usd_per_million_tokens"] == r.rows[0].usd_per_mtok
