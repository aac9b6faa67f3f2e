"""Number formats as data (roofline.core.formats): every width and scale derived by hand from the specs."""

from __future__ import annotations

import pytest

from roofline.core import formats
from roofline.core.errors import RooflineError


@pytest.mark.parametrize(("name", "role", "bits"), [
    ("bf16", "weight", 16.0),
    ("fp8", "activation", 8.0),                 # per-tensor scale only: not spread over elements
    ("fp8-block", "activation", 8 + 32 / 128),  # 1x128 tiles, fp32 scale: 8.25
    ("fp8-block", "weight", 8 + 32 / 16384),    # 128x128 blocks, fp32 scale
    ("mxfp8", "gradient", 8 + 8 / 32),          # OCP MX: 32-element blocks, E8M0 scale
    ("mxfp6", "weight", 6 + 8 / 32),
    ("mxfp4", "weight", 4 + 8 / 32),            # 4.25
    ("nvfp4", "activation", 4 + 8 / 16),        # 16-element blocks, E4M3 scale: 4.5
])
def test_bits_per_element(name: str, role: str, bits: float) -> None:
    assert formats.get(name).bits_per_element(role) == pytest.approx(bits)


def test_tensor_bytes_count_every_started_block_and_the_tensor_scale() -> None:
    # mxfp8, 100 elements: 100 B of elements + ceil(100/32) = 4 scale bytes; no tensor scale
    assert formats.tensor_bytes("mxfp8", 100, "weight") == 104
    # nvfp4, 100 elements: 50 B + ceil(100/16) = 7 scale bytes + 4 B fp32 tensor scale
    assert formats.tensor_bytes("nvfp4", 100, "weight") == 61
    # fp8 per tensor, 3 tensors of 1000: 3 x (1000 + 4)
    assert formats.tensor_bytes("fp8", 1000, "activation", tensors=3) == 3012


def test_quantize_reads_once_and_writes_each_copy() -> None:
    # current scaling reads the bf16 tensor twice (amax, then cast): 2 x 2 B x 1000; writes 1000 + 4
    c = formats.quantize_cost("fp8-current", 1000, "activation")
    assert (c.bytes_read, c.bytes_written) == (4000, 1004)
    # delayed scaling: one fused pass
    assert formats.quantize_cost("fp8", 1000, "activation").bytes_read == 2000
    # nvfp4 both axes (row-wise and transposed copy): 2 x (500 + 63 + 4) from 1000 fp32 elements (4 B)
    c = formats.quantize_cost("nvfp4", 1000, "gradient", source_bits=32, both_axes=True)
    assert (c.bytes_read, c.bytes_written, c.flops) == (4000, 2 * 567, 3000)


def test_roof_native_or_upcast_in_the_stated_order() -> None:
    assert formats.matrix_roof("nvfp4", {"fp4", "fp8", "bf16"}) == ("fp4", True)
    assert formats.matrix_roof("nvfp4", {"fp8", "bf16"}) == ("fp8", False)   # Hopper: FP8 units
    assert formats.matrix_roof("mxfp6", {"bf16"}) == ("bf16", False)          # A100: BF16 only
    with pytest.raises(RooflineError, match="no fp8 matrix roof"):
        formats.matrix_roof("mxfp8", {"fp32"})


def test_unknown_names_and_roles_are_one_line_errors() -> None:
    with pytest.raises(RooflineError, match="unknown number format 'fp3'; give one of bf16"):
        formats.get("fp3")
    with pytest.raises(RooflineError, match="role 'bias'"):
        formats.get("mxfp8").bits_per_element("bias")
    assert formats.get(" MXFP8 ").name == "mxfp8"


def test_every_format_is_cited_and_its_roof_a_known_precision_or_a_new_low_one() -> None:
    from roofline.core.precision import PRECISIONS

    for f in formats.FORMATS.values():
        assert f.source, f.name
        for r in (f.roof, *f.upcast):
            assert r in PRECISIONS or r in ("fp6", "fp4"), (f.name, r)


# -- training in a format: plan --train --precision NAME ---------------------------------------------------------
def test_training_state_holds_each_formats_weight_copies() -> None:
    from roofline.llm.training import state_bytes

    # 16 B of bf16 weight + gradient + fp32 master/m/v, plus the row-wise and transposed weight copies:
    assert sum(state_bytes("bf16").values()) == 16
    assert sum(state_bytes("fp8").values()) == 16 + 2 * 1             # 1 B each, per-tensor scale not per element
    assert sum(state_bytes("mxfp8").values()) == 16 + 2 * 8.25 / 8     # 8 bits + 8/32 scale bits each
    assert sum(state_bytes("nvfp4").values()) == 16 + 2 * 4.5 / 8      # 4 bits + 8/16 scale bits each


def test_training_gemms_run_on_the_formats_roof_with_the_devices_fallback() -> None:
    from roofline import get_device
    from roofline.llm.training import TrainingRun, training_ceilings

    gb200, h100 = get_device("gb200"), get_device("h100")
    peak = {p: training_ceilings(gb200, TrainingRun.of("llama-3-8b", precision=p))["peak_gemm"]
            for p in ("bf16", "mxfp8", "nvfp4")}
    # GB200 per GPU, dense: bf16 2.5 PFLOP/s, fp8 5, fp4 10 (the catalog's cited roofs)
    assert (peak["bf16"], peak["mxfp8"], peak["nvfp4"]) == (2.5e15, 5e15, 10e15)
    # H100 has no fp4 units: NVFP4 GEMMs fall back to its fp8 roof (989.4 x 2 TFLOP/s dense)
    h = training_ceilings(h100, TrainingRun.of("llama-3-8b", precision="nvfp4"))["peak_gemm"]
    assert h == h100.choose_compute("matrix", "fp8").ceiling.flops


def test_plan_precision_takes_the_format_names_and_refuses_others(capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main

    assert main(["plan", "llama-3-8b", "--system", "gb200-nvl72", "--devices", "8", "--train", "--precision", "mxfp4",
                 "--layout", "tp=1,pp=1,dp=8,zero=1,mb=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bf16, fp8, fp8-current, fp8-block, mxfp8, nvfp4" in err[0]


def test_a_narrower_format_lowers_the_bound_and_names_its_tier(capsys: pytest.CaptureFixture[str]) -> None:
    """llama-3-8b on 8 GB200 of one NVL72 domain, one fixed layout: the compute-bound GEMMs' roof doubles from
    bf16 to mxfp8 and again to nvfp4, so the bound falls each time (not by 2x: attention, norms and the
    optimizer stay in bf16/fp32); tp's all-reduce runs over the rack's NVLink domain, named as the system names it."""
    from roofline.catalog import resolve_system
    from roofline.llm.training import TrainingRun
    from roofline.planner.result import plan_layouts
    from roofline.words.plan import best_lines

    system = resolve_system("gb200-nvl72", devices=8)
    bound = {}
    for p in ("bf16", "mxfp8", "nvfp4"):
        r = plan_layouts(TrainingRun.of("llama-3-8b", seq=4096, global_batch=64, precision=p), system,
                         layout="tp=2,pp=1,dp=4,zero=1,mb=1,recompute=none", top=1, overlap=0.0,
                         rules={"dp": True, "tp": False, "pp": True}, price=None)
        bound[p] = r.best.bound
        if p == "mxfp8":
            assert "over NVLink 5 via NVLink Switch (NVL72 domain)" in best_lines(r)[0]
    assert bound["bf16"] > bound["mxfp8"] > bound["nvfp4"]
    assert bound["bf16"] / bound["mxfp8"] < 2


def test_plan_serve_honours_precision_or_refuses_it() -> None:
    """issue 52's 'plan --serve --precision fp8 silently ignores the flag': fp8 weights, activations and KV
    halve the bytes a memory-bound decode step reads, so the step is faster (not 2x: the roofs and the
    collectives do not halve); a block-scaled name is refused for serving in one line."""
    from roofline.catalog import resolve_system
    from roofline.core.errors import RooflineError
    from roofline.planner.result import plan_layouts
    from roofline.planner.serve import ServingRun

    system = resolve_system("dgx-h100")
    time = {}
    for p in ("bf16", "fp8"):
        run = ServingRun.of("llama-3-8b", batch=64, prompt=1024, gen=256, precision=p)
        assert run.precisions.weights == run.precisions.kv_cache == p
        r = plan_layouts(run, system, layout="tp=1,pp=1,dp=8", top=1, overlap=0.0,
                         rules={"dp": True, "tp": False, "pp": True}, price=None)
        time[p] = r.best.time
    assert 1 < time["bf16"] / time["fp8"] <= 2
    with pytest.raises(RooflineError, match="'mxfp8' is not a serving precision here; give one of bf16, fp8"):
        ServingRun.of("llama-3-8b", precision="mxfp8")
