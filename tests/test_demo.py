"""`roofline demo` in quick (tiny) mode: the report and the PNGs are written, with the expected analyses."""

from __future__ import annotations

import re

import numpy as np
import pytest


def test_demo_cli_writes_the_report_and_charts(tmp_path, monkeypatch, capsys):
    pytest.importorskip("plotly")
    from roofline.cli import main

    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))  # no cached bench: the demo measures
    out = tmp_path / "roofline-report"
    assert main(["demo", "--out", str(out), "--tiny"]) == 0
    text = capsys.readouterr().out
    expected = ["index.html", "seed.png", "seed-gpu.png", "llama-prefill-local.png", "llama-prefill-gpu.png",
                "llama-decode-local.png", "llama-decode-gpu.png"]
    try:
        import torch  # noqa: F401

        expected.append("cnn-measured.png")
    except ImportError:
        pass
    for name in expected:
        f = out / name
        assert f.is_file() and f.stat().st_size > 1000, name
        assert str(f) in text  # every path printed
        if name.endswith(".png"):
            assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.count("Plotly.newPlot(") == len(expected) - 1 + 1  # one chart per analysis + the comparison
    assert "Llama-3-8B decode on NVIDIA H100 SXM5 80GB" in page and "batching: " in page and "; batch 1 -&gt;" in page
    # every section's answer in one sentence under its title: the time labelled as the bound, the binding roof
    # (a section: its '== title' line and its headline, which a disturbed bench's warning may lead over lines)
    # (the headline wraps at the terminal's width: read it as one line of words)
    answers = [" ".join(chunk.split("\n", 1)[1].split()) for chunk in text.split("done in ")[0].split("== ")[1:]]
    assert len(answers) == len(expected) - 1 and "best lever here:" in text
    assert all(" bound" in x and "-bound on " in x for x in answers), answers
    # the LLM sections on their own time bases: prefill by its TTFT, decode per output token
    assert sum("TTFT " in x for x in answers) == 2 and sum("per output token " in x for x in answers) == 2
    assert "USDT" not in text  # the profiler's C++ prints are silenced
    if "cnn-measured.png" in expected:
        assert "small CNN measured on this CPU" in page and "predicted \\u2192 measured" in page


@pytest.mark.slow
def test_run_demo_api_analyses(tmp_path):
    pytest.importorskip("plotly")
    from roofline import Device
    from roofline.demo import run_demo

    here = Device.simple("given", "50 GFLOP/s", "20 GB/s")
    r = run_demo(tmp_path / "r", local=here)
    assert r.report.is_file()
    seed = r.analyses["seed"]
    # the textbook example: 0.2 FLOP/B x 10 GB/s = 2 GFLOP/s attainable; 0.8 GFLOP/s measured -> 40%
    assert seed.attainable_flops[0] == pytest.approx(2e9) and seed.efficiency[0] == pytest.approx(0.4)
    dec = r.analyses["llama-decode-local"]
    assert dec.device is here and r.analyses["llama-decode-gpu"].device.name == "NVIDIA H100 SXM5 80GB"
    if "cnn-measured" in r.analyses:
        assert np.isfinite(r.analyses["cnn-measured"].workload.columns["measured_seconds"]).all()


def test_demo_unwritable_output(tmp_path, capsys):
    from roofline.cli import main

    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["demo", "--out", str(blocker / "report"), "--tiny"]) == 2
    err = capsys.readouterr().err
    assert re.match(r"roofline: error: .*cannot write", err) and err.count("\n") == 1
