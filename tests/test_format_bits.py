"""--wbits/--abits/--kvbits (llm, serve, compare's --precision) take the number formats' names beside bit counts:
the roof is the format's, the bytes its element bits plus its block scales (each by hand)."""

from __future__ import annotations

import pytest

from roofline.core.errors import RooflineError
from roofline.llm.spec import LLMSpec, make_spec


def test_format_names_give_their_roof_and_their_bytes_with_scales() -> None:
    """NVFP4 weights: 4 bits + one 8-bit E4M3 scale per 16 = 4.5 bits = 0.5625 B on the fp4 roof; MXFP8
    activations: 8 + 8/32 = 8.25 bits = 1.03125 B on fp8; fp8-current KV: fp8, its one scale per tensor no
    per-element traffic: 1 B."""
    s = make_spec("llama-3-8b", phase="decode", wbits="nvfp4", abits="MXFP8", kvbits="fp8-current")
    p = s.precisions
    assert (p.weights, p.activations, p.kv_cache) == ("fp4", "fp8", "fp8")
    b = p.bytes()
    assert b["wq"] == 0.5625 and b["a"] == 1.03125 and b["kv"] == 1.0
    assert p.formats == ("nvfp4", "mxfp8", "")
    # the spec's file keeps the formats
    assert LLMSpec.from_dict(s.to_dict()).precisions.bytes() == b


def test_bit_counts_and_plain_names_as_before() -> None:
    p = make_spec("llama-3-8b", phase="decode", wbits=4, abits="16", kvbits="fp8").precisions
    assert (p.weights, p.activations, p.kv_cache, p.formats) == ("int4", "bf16", "fp8", ("", "", ""))


def test_anything_else_is_one_line_naming_both_lists() -> None:
    with pytest.raises(RooflineError) as e:
        make_spec("llama-3-8b", phase="decode", kvbits="mxfp9")
    msg = str(e.value)
    assert "\n" not in msg and "kvbits: 'mxfp9'" in msg and "int4" in msg and "nvfp4" in msg


def test_cli_llm_and_compare_take_format_names(capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main

    assert main(["llm", "llama-3-8b", "--device", "b200", "--phase", "decode", "--wbits", "nvfp4"]) == 0
    capsys.readouterr()
    assert main(["llm", "llama-3-8b", "--device", "b200", "--phase", "decode", "--abits", "fp5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "abits" in err[0]
    assert main(["compare", "llama-3-8b", "--devices", "h100,b200", "--precision", "nvfp4"]) == 0
    out = capsys.readouterr().out
    assert "nvfp4" in out and "note: nvfp4 runs as fp8 on NVIDIA H100 SXM5 80GB (no fp4 roof)" in out
