"""Issue 27 items 4-6: per-hop latency in the per-op bound (one formula with the planner's), the TF32 rule, and
memory capacities as the devices report them (nvidia-smi totals less a stated reserve), printed in GiB."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from roofline import Device, Op, Workload, analyze, get_device
from roofline.catalog import get_system
from roofline.cli import main
from roofline.core.errors import RooflineError
from roofline.engine.analysis import Analysis
from roofline.engine.collectives import cost, on_link
from roofline.frontends.llm import from_llm
from roofline.hardware.ceilings import Interconnect
from roofline.planner.layout import Layout
from roofline.planner.serve import ServingRun, estimate_serving
from roofline.words.comparison import compare
from roofline.words.llm_report import report

US = 1e-6
MIB, GIB = 2**20, 2**30
SIZES = (8.0, 1e6, 1e9)  # message bytes: 8 B, 1 MB, 1 GB


def one_collective(message: float, ranks: int, factor: float) -> Workload:
    """One all-reduce of ``message`` bytes over ``ranks`` devices, its bytes counted as the frontends count them:
    the message x the ring bus factor 2(n-1)/n (roofline.work.costs.collective, the LLM table)."""
    return Workload.from_ops([Op("layers.all_reduce", kind="collective", bytes_read=factor * message, level="interconnect")],
                             info={"collective_ranks": ranks})


# -- item 4: latency in the bound ---------------------------------------------------------------------------
@pytest.mark.parametrize("message", SIZES)
def test_ring_all_reduce_alpha_term_by_hand(message):
    """8-rank ring all-reduce over the A100's NVLink 3 (300 GB/s per direction, 0.6 us per hop, no NVLS):
    t = 2(8-1) x 0.6 us + 2(8-1)/8 x message / 300 GB/s."""
    a100 = get_device("a100")
    assert (a100.interconnect.latency, a100.interconnect.bandwidth) == (0.6 * US, 300e9)
    a = analyze(one_collective(message, 8, 2 * 7 / 8), a100)
    alpha = 14 * 0.6 * US  # 8.4 us: 14 steps
    beta = 1.75 * message / 300e9  # 8 B: 4.7e-11 s; 1 MB: 5.833 us; 1 GB: 5.833 ms
    assert a.latency_time[0] == pytest.approx(alpha, rel=1e-12)
    assert a.time[0] == pytest.approx(alpha + beta, rel=1e-12)
    # the planner's formula on the DGX A100's node tier gives the same time: one formula, in one place
    assert a.time[0] == pytest.approx(cost("all_reduce", message, get_system("dgx-a100"), ranks=8).time, rel=1e-12)
    # 8.4 us of hops against 5.8 us of bytes at 1 MB: latency-bound; at 1 GB the bytes dominate
    assert a.bound[0] == ("latency" if message <= 1e6 else "interconnect")
    assert a.verdict(0).startswith("latency-bound" if message <= 1e6 else "interconnect-bound")


@pytest.mark.parametrize("message", SIZES)
def test_nvls_all_reduce_alpha_term_by_hand(message):
    """8-rank all-reduce through the H100's NVSwitch with in-switch reduction (NVLS, 450 GB/s, 0.6 us per hop):
    each device sends its buffer once and receives the reduced one once, t = 2 x 0.6 us + message / 450 GB/s."""
    h100 = get_device("h100")
    assert h100.interconnect.in_switch_reduction and h100.interconnect.latency == 0.6 * US
    a = analyze(one_collective(message, 8, 2 * 7 / 8), h100)
    alpha = 2 * 0.6 * US  # 1.2 us
    beta = message / 450e9  # 8 B: 1.8e-11 s; 1 MB: 2.222 us; 1 GB: 2.222 ms
    assert a.latency_time[0] == pytest.approx(alpha, rel=1e-12)
    assert a.time[0] == pytest.approx(alpha + beta, rel=1e-12)
    assert a.time[0] == pytest.approx(cost("all_reduce", message, get_system("dgx-h100"), ranks=8).time, rel=1e-12)
    # 1.2 us of hops against 2.2 us of bytes at 1 MB: the bytes dominate already
    assert a.bound[0] == ("latency" if message < 1e6 else "interconnect")


def test_on_link_is_on_tier_of_the_link():
    """analysis -> collectives.on_link -> collectives.on_tier: the per-op view and the planner share the step."""
    link = Interconnect("x", 100e9, latency=2 * US)
    p = on_link("all_gather", 7 / 8 * 4e6, 8, link)  # all-gather: (n-1)/n of the gathered output per device
    assert (p.steps, p.latency, p.transfer) == (7, pytest.approx(14 * US), pytest.approx(3.5e6 / 100e9))


def test_bare_device_tp8_uses_its_node_interconnect():
    """``--device h100 --tp 8``: Llama-2-7B's decode all-reduces (4096 x 2 B = 8192 B each) on the H100's NVLink 4
    with NVLS: 2 x 0.6 us + 8192 B / 450 GB/s = 1.2182 us each."""
    w = from_llm("llama-2-7b", phase="decode", batch=1, context=1024, tp=8)
    a = analyze(w, get_device("h100"))
    names = w.column("name")
    i = list(names).index("decode.layers.attn.all_reduce")
    assert a.time[i] == pytest.approx(1.2 * US + 8192 / 450e9, rel=1e-12)
    assert a.bound[i] == "latency"
    assert "latency" in a.time_share_by_bound()


def llm_tpot(system_name: str = "dgx-a100") -> tuple[float, Analysis]:
    w = from_llm("llama-2-7b", phase="generate", batch=1, prompt=1024, gen=256, tp=8, flash=True)
    a = analyze(w, get_system(system_name).device_on("node"))
    return report(a).tpot, a


def test_llm_plan_serve_and_compare_agree():
    """Llama-2-7B on 8 A100s at tp 8, batch-1 decode (prompt 1024, 256 tokens): the per-op view (llm, compare)
    and ``plan --serve`` time the same collectives with the same formula.  The per-op view also counts the
    embedding's all-reduce and the logits' all-gather, which the planner's serving step leaves out, so
    llm = plan + one all-reduce of 8192 B + one all-gather of 32000 x 2 B (each from collectives.cost)."""
    tpot, a = llm_tpot()
    system = get_system("dgx-a100")
    plan = estimate_serving(ServingRun.of("llama-2-7b", batch=1, prompt=1024, gen=256), Layout(tp=8), system)
    embed = cost("all_reduce", 4096 * 2, system, ranks=8).time  # 14 x 0.6 us + 14336 B / 300 GB/s = 8.448 us
    logits = cost("all_gather", 32000 * 2, system, ranks=8).time  # 7 x 0.6 us + 56000 B / 300 GB/s = 4.387 us
    assert embed == pytest.approx(8.4 * US + 14336 / 300e9)
    assert logits == pytest.approx(4.2 * US + 56000 / 300e9)
    assert tpot == pytest.approx(plan.time + embed + logits, rel=1e-9)
    # the planner's 64 tp all-reduces per token: 64 x 8.448 us = 540.7 us, its exposed communication
    assert plan.exposed_comm == pytest.approx(64 * embed, rel=1e-9)
    # compare: the same workload on the bare catalog A100 (its link is the DGX A100's node tier) gives the same
    w = a.workload
    row = compare(w, [get_device("a100")])[0]
    assert row.time == pytest.approx(a.total_time, rel=1e-12)
    assert report(row.analysis).tpot == pytest.approx(tpot, rel=1e-12)


def test_compare_cli_tp(tmp_path):
    out = tmp_path / "c.json"
    assert main(["compare", "llama-2-7b", "--devices", "a100", "--tp", "8", "--phase", "decode", "--json",
                 str(out)]) == 0
    row = json.loads(out.read_text())["rows"][0]
    w = from_llm("llama-2-7b", phase="decode", batch=1, tp=8)
    assert row["time_s"] == pytest.approx(analyze(w, get_device("a100")).total_time, rel=1e-12)


def test_link_without_latency_keeps_bytes_over_bandwidth():
    """A device file that gives no latency (older files) times collectives as bytes / bandwidth, as before."""
    dev = replace(get_device("a100"), interconnect=Interconnect("link", 300e9))
    a = analyze(one_collective(1e6, 8, 1.75), dev)
    assert a.latency_time is None
    assert a.time[0] == pytest.approx(1.75e6 / 300e9)
    assert a.bound[0] == "interconnect"


def test_unknown_group_size_is_a_warning():
    w = Workload.from_ops([Op("allreduce", kind="collective", bytes_read=1e6, level="interconnect")])
    a = analyze(w, get_device("a100"))
    assert a.latency_time is None and a.time[0] == pytest.approx(1e6 / 300e9)
    assert any("group size is unknown" in m for m in a.warnings)


def test_device_file_round_trips_latency_and_reserve(tmp_path):
    h100 = get_device("h100")
    back = Device.from_dict(json.loads(h100.to_json()))
    assert back.interconnect == h100.interconnect
    assert back.main_memory.reserve == 512 * MIB and back.memory_capacity == h100.memory_capacity


@pytest.mark.parametrize("field, value, says", [
    ("latency", "-1 us", "interconnect.latency must be a time from 0 to 1 s"),
    ("latency", "fast", "interconnect.latency"),
    ("in_switch_reduction", "yes", "interconnect.in_switch_reduction"),
])
def test_bad_interconnect_fields(field, value, says):
    d = json.loads(get_device("h100").to_json())
    d["interconnect"][field] = value
    with pytest.raises(RooflineError, match=says):
        Device.from_dict(d)


# -- item 5: the TF32 rule ----------------------------------------------------------------------------------
def fp32_conv_and_matmul() -> Workload:
    """A compute-bound fp32 convolution and matmul (1 TFLOP each, 1 MB), on the matrix unit by their kind."""
    return Workload.from_ops([Op("conv", kind="conv", flops=1e12, bytes_read=1e6, precision="fp32"),
                              Op("mm", kind="matmul", flops=1e12, bytes_read=1e6, precision="fp32")])


@pytest.mark.parametrize("mode, conv_roof, mm_roof", [
    ("default", 494.7e12, 66.9e12),  # PyTorch: cudnn.allow_tf32 True, cuda.matmul.allow_tf32 False
    ("on", 494.7e12, 494.7e12),
    ("off", 66.9e12, 66.9e12),
])
def test_tf32_rule_on_h100(mode, conv_roof, mm_roof):
    """H100 SXM: tf32 matrix 494.7 TFLOP/s (dense), fp32 vector 66.9 TFLOP/s; 1 TFLOP takes 1e12 / roof."""
    a = analyze(fp32_conv_and_matmul(), get_device("h100"), tf32=mode)
    assert a.time[0] == pytest.approx(1e12 / conv_roof) and a.time[1] == pytest.approx(1e12 / mm_roof)
    assert a.tf32 == mode and a.tf32_ops == 2
    line = [x for x in a.assumptions if x.startswith("TF32")]
    assert len(line) == 1 and f"--tf32 {mode}" in line[0]
    assert Analysis.from_dict(json.loads(json.dumps(a.to_dict()))).time.tolist() == a.time.tolist()


def test_tf32_leaves_devices_without_it_alone():
    """A device with no tf32 matrix roof (a CPU, a TPU) runs fp32 on fp32 whatever the flag: no assumption line."""
    cpu = Device.simple("cpu", "1 TFLOP/s", "100 GB/s")
    for mode in ("default", "on", "off"):
        a = analyze(fp32_conv_and_matmul(), cpu, tf32=mode)
        assert a.time.tolist() == [1.0, 1.0] and a.tf32_ops == 0
        assert not any(x.startswith("TF32") for x in a.assumptions)


def test_tf32_bad_value():
    with pytest.raises(RooflineError, match="tf32: 'maybe' is not one of default, on, off"):
        analyze(fp32_conv_and_matmul(), get_device("h100"), tf32="maybe")


def test_tf32_cli(tmp_path, capsys):
    w = tmp_path / "w.json"
    fp32_conv_and_matmul().save(w)
    assert main(["analyze", str(w), "--device", "a100", "--tf32", "on"]) == 0
    assert "assumption: TF32 on (--tf32 on)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as bad:  # argparse's refusal, turned into one line by roofline.cli
        main(["analyze", str(w), "--device", "a100", "--tf32", "maybe"])
    assert bad.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("roofline: error:") and "--tf32" in err[0] and "'maybe'" in err[0]


# -- item 6: capacities as the devices report them -----------------------------------------------------------
@pytest.mark.parametrize("name, reported_mib, reserve_mib", [
    ("h100", 81559, 512),  # nvidia-smi: 81559 MiB = 79.65 GiB; less 512 MiB = 79.15 GiB
    ("h200", 143771, 512),  # 140.40 GiB; 139.90 GiB
    ("b200", 183359, 512),  # 179.06 GiB; 178.56 GiB
    ("a100", 81920, 512),  # 80 GiB; 79.5 GiB
    ("a100-40gb", 40960, 512),  # 40 GiB; 39.5 GiB
    ("l4", 23034, 512),  # 22.49 GiB
    ("l40s", 46068, 512),  # 44.99 GiB
    ("mi300x", 206141652992 / MIB, 0),  # 8 x 25767706624 B = 196592 MiB = 191.98 GiB; no reserve published
])
def test_capacities_in_gib_by_hand(name, reported_mib, reserve_mib):
    d = get_device(name)
    assert d.main_memory.capacity == reported_mib * MIB
    assert d.memory_capacity == (reported_mib - reserve_mib) * MIB


def test_capacities_printed_in_gib(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "79.15 GiB" in out  # the H100: (81559 - 512) / 1024
    assert "139.9 GiB" in out  # the H200: (143771 - 512) / 1024 = 139.90
    assert main(["device", "h100"]) == 0
    assert "79.65 GiB less 0.5 GiB reserve" in capsys.readouterr().out


def test_llm_fit_reads_the_capacity_less_the_reserve(capsys):
    """Llama-2-70B in bf16 (about 129 GiB of weights) fits neither device; the finding names the capacity in GiB."""
    a = analyze(from_llm("llama-2-70b", phase="decode", batch=1), get_device("h100"))
    r = report(a)
    assert r.footprint.capacity == (81559 - 512) * MIB
    assert any("has 79.15 GiB" in f for f in r.findings)


def test_bad_reserve():
    d = json.loads(get_device("h100").to_json())
    d["memory"][0]["reserve"] = d["memory"][0]["capacity"]
    with pytest.raises(RooflineError, match=r"memory\[0\].reserve must be from 0 to below the capacity"):
        Device.from_dict(d)
