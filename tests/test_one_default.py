"""Issue 48, item 7: one device shown one way, one attention default.

``llm`` (and the API, ``compare``, ``demo``) and ``serve`` attend with fused attention by default, as the engines do;
each command turns it off with ``--unfused``.  Capacities read in GiB in ``serve`` as in ``llm`` and the advice."""

from __future__ import annotations

import pytest

from roofline.cli import main
from roofline.frontends.llm import from_llm, make_spec
from roofline.serving.config import Kernels


def test_llm_and_serve_share_the_fused_attention_default() -> None:
    assert make_spec("llama-3-8b").flash is True and Kernels().flash is True


def test_the_default_llm_prefill_has_no_score_tensor_and_unfused_adds_it() -> None:
    """Fused attention never writes the b x h x s x s scores; unfused moves them four times (QK^T writes them, the
    softmax reads and writes them, PV reads them), bf16.  Llama-3-8B prefill of 1,024 tokens, batch 1: 32 heads x
    1024 x 1024 scores x 2 B = 64 MiB per pass and layer, x 4 passes x 32 layers = 8 GiB more (8,589,934,592 B)."""
    fused = from_llm("llama-3-8b", phase="prefill", prompt=1024)
    unfused = from_llm("llama-3-8b", phase="prefill", prompt=1024, flash=False)
    assert unfused.total_bytes - fused.total_bytes == pytest.approx(32 * 4 * 32 * 1024 * 1024 * 2)


def test_llm_command_takes_unfused_and_refuses_both(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["llm", "llama-3-8b", "--device", "h100", "--phase", "prefill", "--unfused"]) == 0
    assert "unfused attention" in capsys.readouterr().out
    assert main(["llm", "llama-3-8b", "--device", "h100", "--phase", "prefill"]) == 0
    out = capsys.readouterr().out
    assert "fused attention" in out and "unfused attention" not in out
    with pytest.raises(SystemExit) as e:
        main(["llm", "llama-3-8b", "--device", "h100", "--flash", "--unfused"])
    assert e.value.code == 2


def test_serve_states_memory_in_gib(capsys: pytest.CaptureFixture[str]) -> None:
    """The serve report's memory line: the H100's usable memory at --gpu-memory-utilization 0.9 is
    0.9 x 85,520,809,984 B = 71.68 GiB (79.65 GiB, minus 10%), never decimal GB."""
    assert main(["serve", "llama-3-8b", "--device", "h100", "--rate", "1", "--requests", "4"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("memory per device"))
    assert line.endswith("GiB") and " GB" not in line, line
