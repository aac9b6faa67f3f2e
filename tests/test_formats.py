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
