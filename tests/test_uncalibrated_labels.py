"""Issue 48, item 1: plan and serve say when a forecast is on a device without a calibration (the H20 has none, the
H100 SXM5 a cited one: src/roofline/catalog/calibrations/nvidia-h100-sxm5-80gb.json)."""

from __future__ import annotations

from dataclasses import replace

from roofline.catalog import get_device, get_system
from roofline.catalog.calibrations import cited_calibration
from roofline.planner import TrainingRun
from roofline.planner.result import plan_layouts
from roofline.serving.requests import Traffic
from roofline.serving.run import serve
from roofline.words.plan import plan_words


def test_the_fixture_devices_are_what_the_tests_assume() -> None:
    assert cited_calibration(get_device("h20").name) is None
    assert cited_calibration(get_device("h100").name) is not None


def _plan(device: str) -> tuple[str, dict[str, object]]:
    """One layout on a DGX H100's 8 GPUs, its device ``device`` (the H20 is sold in HGX boards of 8 too)."""
    system = replace(get_system("dgx-h100"), device=get_device(device))
    r = plan_layouts(TrainingRun.of("llama-3-8b", global_batch=16, seq=1024), system, layout="tp=1,pp=1,dp=8,mb=1")
    return plan_words(r).answer, r.to_dict()


def test_plan_labels_an_uncalibrated_forecast_in_its_answer_and_json() -> None:
    answer, doc = _plan("h20")
    assert "uncalibrated: ops forecast at their bound" in answer
    assert doc["uncalibrated"] and "uncalibrated" in str(doc["uncalibrated"])
    answer, doc = _plan("h100")
    assert "uncalibrated" not in answer and doc["uncalibrated"] is None


def test_serve_labels_an_uncalibrated_forecast_and_not_a_bound() -> None:
    traffic = Traffic(rate=1.0, requests=4)
    b200 = serve("llama-3-8b", device="h20", traffic=traffic)
    assert b200.uncalibrated == "uncalibrated: ops at their bound"
    assert b200.to_dict(headline="")["uncalibrated"] == b200.uncalibrated
    assert serve("llama-3-8b", device="h100", traffic=traffic).uncalibrated == ""
