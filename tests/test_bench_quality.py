"""Runs that agree with the ISA or say they don't; contention seen; labelled spec clocks; one writer at a time;
calibrations that refuse noise (issue 32).  Every input is synthetic: nothing assumes this machine's ISA or speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from roofline.bench import consistency, contention, quality, sampling, spec
from roofline.core.errors import RooflineError
from roofline.hardware.calibration import Calibration, SuitePoint
from roofline.hardware.device import Device

ROOT = Path(__file__).resolve().parents[1]


# -- consistency with the ISA ------------------------------------------------------------------------------

def test_fp64_above_half_of_fp32_is_flagged() -> None:
    # the run: fp64 266.6 beside fp32 335.7; the ISA gives fp64 = fp32 / 2 = 167.85, so 266.6 / 167.85 = 1.59x
    found = consistency.isa_findings({("vector", "fp64"): 266.6e9, ("vector", "fp32"): 335.7e9}, {"avx2", "fma"})
    assert len(found) == 1 and "fp64 vector" in found[0] and "1.59x half of fp32" in found[0]


def test_fp32_twice_fp64_passes_and_fp32_far_above_twice_is_flagged() -> None:
    assert consistency.isa_findings({("vector", "fp64"): 100e9, ("vector", "fp32"): 205e9}, set()) == []  # 1.025x
    found = consistency.isa_findings({("vector", "fp64"): 100e9, ("vector", "fp32"): 250e9}, set())  # 250/200 = 1.25x
    assert len(found) == 1 and "1.25x twice fp64" in found[0]


def test_bf16_against_fp32_follows_the_tables_ratio() -> None:
    fp = {("vector", "fp64"): 100e9, ("vector", "fp32"): 200e9}
    # AVX512-BF16 VDPBF16PS: 2 x fp32 = 400 GFLOP/s allowed (+10 %: 440); 500 is 2.5x
    assert consistency.isa_findings({**fp, ("matrix", "bf16"): 390e9}, {"avx512f", "avx512_bf16"}) == []
    found = consistency.isa_findings({**fp, ("matrix", "bf16"): 500e9}, {"avx512f", "avx512_bf16"})
    assert len(found) == 1 and "2.50x the fp32" in found[0] and "2x AVX512-BF16" in found[0]
    # AMX: 16 x fp32 = 3.2 TFLOP/s allowed, so 500 GFLOP/s is fine; without native bf16 nothing is checked
    assert consistency.isa_findings({**fp, ("matrix", "bf16"): 500e9}, {"avx512f", "amx_bf16"}) == []
    assert consistency.isa_findings({**fp, ("matrix", "bf16"): 5e12}, {"avx2", "fma"}) == []


def test_l3_above_l2_is_flagged_and_order_is_by_capacity() -> None:
    levels = [("DRAM", 20e9, None), ("L3", 120e9, 32 << 20), ("L1", 900e9, 64 << 10), ("L2", 100e9, 1 << 20)]
    found = consistency.memory_findings(levels)  # L3 120 over L2 100: 1.20x > 1.05
    assert len(found) == 1 and found[0].startswith("L3 120 GB/s is above L2 100 GB/s (1.20x)")
    ok = [("L1", 900e9, 64 << 10), ("L2", 300e9, 1 << 20), ("L3", 104e9, 32 << 20), ("DRAM", 20e9, None)]
    assert consistency.memory_findings(ok + [("L2b", 0.0, 2 << 20)][:0]) == []
    assert len(consistency.memory_findings([("L3", 100e9, 1 << 25), ("DRAM", 110e9, None)])) == 1  # 1.10x


def test_device_findings_read_a_device() -> None:
    dev = Device.from_dict({"schema": "roofline.device/3", "name": "synthetic", "kind": "cpu",
                            "compute": [{"unit": "vector", "precision": "fp64", "flops": 300e9},
                                        {"unit": "vector", "precision": "fp32", "flops": 400e9}],
                            "memory": [{"level": "L2", "bandwidth": 100e9, "capacity": 1 << 20},
                                       {"level": "L3", "bandwidth": 150e9, "capacity": 1 << 25},
                                       {"level": "DRAM", "bandwidth": 20e9}]})
    found = consistency.device_findings(dev, set())
    assert len(found) == 2 and found[0].startswith("fp64 vector") and found[1].startswith("L3")


# -- contention --------------------------------------------------------------------------------------------

def test_quantised_timings_are_found_and_ordinary_ones_are_not() -> None:
    # the suite: linear 7.99 ms, relu 7.99 ms, max_pool 32 ms, plus one honest 1.3 ms op
    assert contention.quantised([0.00799, 0.00799, 0.032, 0.0013, 0.01602]) == 0.008
    assert contention.quantised([0.004, 0.0121, 0.0080, 0.02]) == 0.004  # 1, 3, 2, 5 ticks of 4 ms
    assert contention.quantised([0.0051, 0.0133, 0.0277, 0.0419, 0.0615]) is None
    assert contention.quantised([0.0001, 0.0002, 0.0003]) is None  # shorter than any slice: cannot tell
    assert contention.quantised([0.008, 0.016]) is None  # two timings are not a pattern


def test_cpu_time_far_below_wall_is_disturbed() -> None:
    assert contention.sample_disturbed(wall=0.010, cpu=0.0195, threads=2) is False  # 97.5 % of 2 cores
    assert contention.sample_disturbed(wall=0.010, cpu=0.0080, threads=2)  # 40 % < 50 %
    assert not contention.sample_disturbed(wall=0.010, cpu=0.0110, threads=2)  # 55 %
    assert contention.sample_disturbed(wall=0.010, cpu=0.0010, threads=1)  # 10 %
    assert not contention.sample_disturbed(wall=0.010, cpu=0.0, threads=0)  # unchecked


def test_a_sleeping_sampler_is_remeasured_within_its_budget_and_counted() -> None:
    # time.sleep uses no CPU: every sample is disturbed; 4 repeats + budget 1.0 x 4 = 8 samples, then 4 kept
    contention.TALLY.reset()
    calls: list[int] = []

    def call(reps: int) -> None:
        calls.append(reps)
        time.sleep(0.003)

    stat, _ = sampling.measure_rate(call, 1.0, 4, 0.002, threads=1, what="sleeper")
    assert len(stat.samples) == 4
    assert contention.TALLY.checked == 8 and contention.TALLY.disturbed == 8 and contention.TALLY.kept_disturbed == 4
    causes = contention.TALLY.causes()
    assert len(causes) == 1 and "4 of 8 samples" in causes[0] and "sleeper (4)" in causes[0]
    contention.TALLY.reset()


def test_a_busy_sampler_is_clean() -> None:
    contention.TALLY.reset()

    def spin(reps: int) -> None:
        t0 = time.process_time()
        while time.process_time() - t0 < 0.003 * reps:
            pass

    sampling.measure_rate(spin, 1.0, 3, 0.002, threads=1, what="spin")
    # on a loaded machine a spin may still lose its core: never more than the budget is spent
    assert 3 <= contention.TALLY.checked <= 6 and contention.TALLY.kept_disturbed <= 3
    contention.TALLY.reset()


def _snap(wall: float, own: float, total: float, idle: float, steal: float, runnable: int,
          mhz: tuple[float, ...] = (2400.0,)) -> contention.Snapshot:
    return contention.Snapshot(wall, own, contention.CpuTimes(total, idle, 0.0, steal), runnable, 1.0, mhz, 100.0)


def test_window_causes_from_synthetic_proc_files() -> None:
    # 10 s on 2 cores = 2000 ticks; 2 threads of ours used 10 s of CPU (1000 ticks); the machine was busy
    # 1900 ticks, so others used 900 ticks = 0.9 cores (> 0 free + 0.25); steal 100 / 2000 = 5 % is not above 5 %
    a, b = _snap(0.0, 0.0, 0, 0, 0, 1), _snap(10.0, 10.0, 2000, 0, 100, 1)
    causes = contention.window_causes(a, b, threads=2, cores=2)
    assert len(causes) == 1 and "other processes used 0.90 of 2 cores" in causes[0]
    # steal 300 / 2000 = 15 %; 3 runnable others at both ends; the clock moved 2400 -> 3000 MHz (+25 %)
    c = _snap(10.0, 10.0, 2000, 600, 300, 4, (3000.0,))
    text = " | ".join(contention.window_causes(_snap(0.0, 0.0, 0, 0, 0, 4), c, threads=2, cores=2))
    assert "steal 15%" in text and "3 other runnable task(s)" in text and "2400 to 3000 MHz" in text
    quiet = _snap(10.0, 10.0, 2000, 950, 0, 1)  # others: (2000 - 950 - 1000) / 100 / 10 = 0.05 cores
    assert contention.window_causes(a, quiet, threads=2, cores=2) == []


def test_proc_file_parsers() -> None:
    t, running = contention.parse_stat("cpu  10 0 10 70 5 0 0 5 0 0\ncpu0 1 2 3\nprocs_running 2\n")
    assert t is not None and (t.total, t.idle, t.iowait, t.steal, running) == (100.0, 70.0, 5.0, 5.0, 2)
    assert contention.parse_loadavg("garbage") is None
    assert contention.parse_mhz("cpu MHz\t\t: 2445.406\nmodel : 1\ncpu MHz : 2500\n") == (2445.406, 2500.0)


# -- spec clock sources ------------------------------------------------------------------------------------

ZEN3 = {"vendor_id": "AuthenticAMD", "family": 25, "model": 1, "flags": {"avx2", "fma"}}


def test_clock_sources_are_labelled_in_order() -> None:
    vm = {**ZEN3, "model_name": "AMD EPYC 7763 64-Core Processor", "mhz": 2445.406}
    sources = spec.clock_sources(vm)
    assert [k for k, _, _ in sources] == ["table", "cpuinfo"]
    assert sources[0][1] == 3.5e9 and "boost clock" in sources[0][2] and "AMD EPYC 7003" in sources[0][2]
    assert "nominal" in sources[1][2]
    metal = {**vm, "max_mhz": 3600.0, "model_name": "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz"}
    assert [(k, hz) for k, hz, _ in spec.clock_sources(metal)] == [("cpufreq", 3.6e9), ("model name", 2.4e9),
                                                                 ("cpuinfo", 2445.406e6)]
    assert spec.spec_clock(vm) == (3.5e9, sources[0][2])


def test_a_roof_above_spec_is_explained_inferred_or_flagged() -> None:
    # Zen 3, 2 cores: 2 FMA pipes x 4 fp64 lanes x 2 = 16 FLOP/cycle/core; at 2.45 GHz spec fp64 = 78.4 GFLOP/s
    cpuinfo = [("cpuinfo", 2.45e9, spec.CLOCK_LABELS["cpuinfo"])]
    roofs = spec.spec_roofs(ZEN3, 2, (2.45e9, "given"))
    assert roofs[0].flops == pytest.approx(78.4e9)
    # 1. a VM showing only the nominal clock: 109.8 GFLOP/s = 140 % -> clock inferred 109.8 / 32 = 3.43 GHz, unverified
    warnings, causes, record = spec.judge_spec({"fp64": 109.8e9}, roofs, cpuinfo)
    assert causes == [] and record["kind"] == "cpuinfo" and record["unverified"] == ["fp64"]
    assert record["inferred_hz"] == pytest.approx(3.43125e9) and "inferred from the FMA measurement" in warnings[0]
    # 2. spec at the model name's 2.45 GHz; /proc/cpuinfo shows 3.5 GHz (bare metal, turbo): spec there is
    #    32 x 3.5 = 112 GFLOP/s, and 109.8 is 98 % of it, within 5 %: explained, said, not flagged
    both = [("model name", 2.45e9, spec.CLOCK_LABELS["model name"]), ("cpuinfo", 3.5e9, "the clock /proc/cpuinfo shows")]
    warnings, causes, record = spec.judge_spec({"fp64": 109.8e9}, roofs, both)
    assert causes == [] and "unverified" not in record and record["kind"] == "model name"
    assert "explained by the clock /proc/cpuinfo shows (3.5 GHz: spec 112 GFLOP/s, 98% of it)" in warnings[0]
    # 3. cpufreq states 2.45 GHz and nothing reproduces 140 %: flagged
    stated = [("cpufreq", 2.45e9, "cpufreq maximum"), *cpuinfo]
    _, causes, _ = spec.judge_spec({"fp64": 109.8e9}, roofs, stated)
    assert len(causes) == 1 and "no stated clock (cpufreq, cpuinfo)" in causes[0]


# -- the quality record leads every output -----------------------------------------------------------------

def _flagged(dev: Device) -> Device:
    from dataclasses import replace

    q = quality.assess(["steal 12% of CPU time"], ["L3 250 GB/s is above L2 200 GB/s"], [])
    return replace(dev, metadata={**dev.metadata, "quality": q, "run": {"id": "run123"}})


def test_the_warning_leads_the_headline_caption_and_html() -> None:
    from roofline import Op, Workload, analyze
    from roofline.render.html import caption
    from roofline.words.summary import headline, summarize

    dev = _flagged(Device.simple("seed", "100 GFLOP/s", "10 GB/s"))
    s = summarize(analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9)], title="app"), dev))
    lead = "DISTURBED AND INCONSISTENT measurement (run run123): steal 12% of CPU time; L3 250 GB/s is above L2"
    assert headline(s).startswith(lead) and caption(s).startswith(lead)
    clean = summarize(analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9)], title="app"),
                              Device.simple("seed", "100 GFLOP/s", "10 GB/s")))
    assert headline(clean).startswith("app on seed")


def _fake_bench_script(cache: Path, name: str, seconds: float, flagged: bool, args: list[str]) -> str:
    """A child that runs `roofline bench ARGS` with run_bench replaced by a fake measurement of ``seconds``."""
    return textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(ROOT / 'src')!r})
        import roofline.bench
        from dataclasses import replace
        from roofline import cli
        from roofline.bench import quality
        from roofline.hardware.device import Device

        def fake(**kw):
            print("measuring", flush=True)
            release = {str(cache / (name + '.release'))!r}
            t0 = time.monotonic()  # measure until the test releases this run (a loaded machine starts a child slowly)
            while {seconds} and not os.path.exists(release) and time.monotonic() - t0 < {seconds}:
                time.sleep(0.05)
            d = Device.simple({name!r}, "1 GFLOP/s", "1 GB/s")
            q = quality.assess(["steal 9% of CPU time"] if {flagged} else [], [], [])
            return replace(d, metadata={{"quality": q, "run": {{"id": {name!r} + "-run"}}}})

        roofline.bench.run_bench = fake
        sys.exit(cli.main(["bench", *{args!r}]))
    """)


def _start(tmp_path: Path, name: str, seconds: float, args: list[str], flagged: bool = False) -> subprocess.Popen:
    script = tmp_path / f"{name}.py"
    script.write_text(_fake_bench_script(tmp_path, name, seconds, flagged, args))
    env = {**os.environ, "ROOFLINE_CACHE_DIR": str(tmp_path / "cache"), "CI": "1"}
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _wait_for(proc: subprocess.Popen, word: str) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert word in line, line


@pytest.mark.skipif(os.name != "posix", reason="fcntl.flock")
def test_a_second_bench_fails_in_one_line_and_the_cache_is_the_firsts(tmp_path: Path) -> None:
    first = _start(tmp_path, "first", 120.0, [])
    _wait_for(first, "measuring")  # the first holds the lock while it measures, until released below
    second = _start(tmp_path, "second", 0.0, [])
    out2, err2 = second.communicate(timeout=120)
    (tmp_path / "first.release").touch()
    out1, err1 = first.communicate(timeout=120)
    assert first.returncode == 0 and "cached:" in out1 and "run first-run" in out1
    assert second.returncode == 2 and "measuring" not in out2
    lines = err2.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("roofline: error: ") and "local-device.lock" in lines[0]
    assert "the bench cache is being written by another run" in lines[0]
    assert "roofline bench, pid" in lines[0] and "--wait" in lines[0]
    cached = json.loads((tmp_path / "cache" / "local-device.json").read_text())
    assert cached["name"] == "first" and cached["metadata"]["run"]["id"] == "first-run"  # whole, and the first's


@pytest.mark.skipif(os.name != "posix", reason="fcntl.flock")
def test_a_second_bench_with_wait_runs_after_the_first(tmp_path: Path) -> None:
    first = _start(tmp_path, "first", 2.0, [])
    _wait_for(first, "measuring")
    second = _start(tmp_path, "second", 0.0, ["--wait", "120"])
    out1, _ = first.communicate(timeout=120)
    out2, err2 = second.communicate(timeout=120)
    assert first.returncode == 0 and second.returncode == 0, err2
    cached = json.loads((tmp_path / "cache" / "local-device.json").read_text())
    assert cached["name"] == "second" and cached["metadata"]["run"]["id"] == "second-run"
    assert "run second-run" in out2


@pytest.mark.skipif(os.name != "posix", reason="fcntl.flock")
def test_strict_refuses_a_disturbed_run_and_writes_nothing(tmp_path: Path) -> None:
    proc = _start(tmp_path, "noisy", 0.0, ["--strict", "--out", str(tmp_path / "d.json")], flagged=True)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert out.splitlines()[1].startswith("WARNING: DISTURBED measurement (run noisy-run): steal 9%")  # [0]: measuring
    assert "refused" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d.json").exists() and not (tmp_path / "cache" / "local-device.json").exists()
    # without --strict the run is cached, with the word and the cause
    proc = _start(tmp_path, "noisy", 0.0, [], flagged=True)
    proc.communicate(timeout=60)
    cached = json.loads((tmp_path / "cache" / "local-device.json").read_text())
    assert proc.returncode == 0 and cached["metadata"]["quality"]["status"] == "disturbed"
    assert cached["metadata"]["quality"]["causes"] == ["disturbed: steal 9% of CPU time"]


# -- calibrations that refuse noise ------------------------------------------------------------------------

def _calibration(errors: list[float], measured: list[float] | None = None) -> Calibration:
    """Points whose forecast is measured x (1 + error): their |error| median is the held-in error."""
    measured = measured or [1e-3 * (i + 1.37) for i in range(len(errors))]
    points = tuple(SuitePoint(f"op{i}", "elementwise", "memory", "fp32", "x", 1e6, 1e-4, 1e-4, m, (m, m),
                              forecast=m * (1 + e)) for i, (e, m) in enumerate(zip(errors, measured, strict=True)))
    return Calibration("seed", "m", "torch-eager", "2026-12-01", "synthetic", 0.0, (), points)


def test_a_calibration_with_45_percent_held_in_error_is_refused_naming_the_ops() -> None:
    from roofline.bench.calibrate import HELD_IN_ERROR_LIMIT, check_fit

    cal = _calibration([0.45, -0.45, 0.45, 3.0, -0.1])  # |errors| 0.45 0.45 0.45 3.0 0.1: median 0.45
    assert cal.error == pytest.approx(0.45) and HELD_IN_ERROR_LIMIT < 0.45
    with pytest.raises(RooflineError) as exc:
        check_fit(cal)
    text = str(exc.value)
    assert text.startswith("refused: calibration not stored: held-in median error 45%")
    assert "worst ops: op3 +300%, op0 +45%, op1 -45%" in text and "cause:" in text
    check_fit(_calibration([0.1, -0.2, 0.05]))  # 10 %: stored


def test_noise_causes_name_quantised_ops_and_busy_cores() -> None:
    from roofline.bench.calibrate import noise_causes

    cal = _calibration([0.0] * 4, [0.00799, 0.00801, 0.032, 0.0013])
    quiet = _snap(0.0, 0.0, 0, 0, 0, 1)
    causes = noise_causes(cal, quiet, _snap(10.0, 20.0, 2000, 0, 0, 1), threads=2, cores=2)
    assert len(causes) == 1 and "3 of 4 suite times are whole multiples of 8 ms" in causes[0]
    assert "op0, op1, op2" in causes[0]
    busy = _snap(10.0, 20.0, 2000, 0, 0, 2)  # one other runnable task at both ends: 1 of 2 cores free
    causes = noise_causes(_calibration([0.0]), _snap(0.0, 0.0, 0, 0, 0, 2), busy, threads=2, cores=2)
    assert any("torch runs 2 threads but only 1 of 2 cores were free" in c for c in causes)


def test_a_noisy_calibration_is_named_in_the_forecast_headline() -> None:
    from dataclasses import replace

    from roofline import Op, Workload, analyze
    from roofline.engine.analysis import with_forecast
    from roofline.words.summary import headline, summarize

    dev = Device.simple("seed", "100 GFLOP/s", "10 GB/s")
    cal = replace(_calibration([0.1]), device="seed", machine="", quality=("torch runs 2 threads but only 1 free",))
    a = with_forecast(analyze(Workload.from_ops([Op("app", flops=0.8e9, bytes_read=4e9)], title="app"), dev), cal)
    assert headline(summarize(a)).startswith("NOISY calibration (2026-12-01), the forecast uses it: torch runs 2")
    again = Calibration.from_dict(cal.to_dict(), "x")
    assert again.quality == cal.quality and "quality" not in _calibration([0.1]).to_dict()


def _synthetic_cpu(fp64: float, fp32: float, l2: float = 100e9, l3: float = 50e9) -> Device:
    return Device.from_dict({"schema": "roofline.device/3", "name": "synthetic", "kind": "cpu",
                             "compute": [{"unit": "vector", "precision": "fp64", "flops": fp64},
                                         {"unit": "vector", "precision": "fp32", "flops": fp32}],
                             "memory": [{"level": "L2", "bandwidth": l2, "capacity": 1 << 20},
                                        {"level": "L3", "bandwidth": l3, "capacity": 1 << 25},
                                        {"level": "DRAM", "bandwidth": 20e9}]})


def test_a_run_breaking_the_isa_ratios_is_recorded_inconsistent() -> None:
    from roofline.bench import cpu

    warnings: list[str] = []
    meta = cpu._quality(_synthetic_cpu(266.6e9, 335.7e9), (), {"avx2", "fma"}, 1, contention.snapshot(), warnings)
    q = meta["quality"]
    assert "inconsistent" in q["flags"] and any(c.startswith("inconsistent: fp64 vector") for c in q["causes"])
    meta = cpu._quality(_synthetic_cpu(100e9, 200e9), (), {"avx2", "fma"}, 1, contention.snapshot(), warnings)
    assert "inconsistent" not in meta["quality"]["flags"]


def test_a_flagged_run_is_measured_again_within_the_budget(monkeypatch) -> None:
    from dataclasses import replace

    import roofline.bench
    from roofline.bench import _worker, overhead

    flagged = quality.assess(["steal 9% of CPU time"], [], [])
    runs = [flagged, quality.assess([], [], []), flagged]
    made: list[int] = []

    def child(cfg, progress):
        made.append(1)
        return replace(_synthetic_cpu(100e9, 200e9), metadata={"quality": runs[len(made) - 1]})

    monkeypatch.setattr(_worker, "run_in_child", child)
    monkeypatch.setattr(overhead, "measure_cpu", lambda: ())
    dev = roofline.bench.run_bench(quick=True, threads=1)
    assert len(made) == 2 and dev.metadata["quality"]["flags"] == [] and dev.metadata["quality"]["attempts"] == 2
    assert len(dev.metadata["run"]["id"]) == 12
    made.clear()
    runs[:] = [flagged, flagged, flagged]
    dev = roofline.bench.run_bench(quick=True, threads=1, retries=1)  # 1 retry: 2 attempts, still flagged
    assert len(made) == 2 and dev.metadata["quality"]["flags"] == ["disturbed"]
    assert (dev.metadata["quality"]["attempts"], dev.metadata["quality"]["budget"]) == (2, 1)


def test_the_terminal_report_names_the_device_file_and_run() -> None:
    from dataclasses import replace

    from roofline import Op, Workload, analyze
    from roofline.render.terminal import summary_lines
    from roofline.words.summary import summarize

    run = {"id": "abc123def456", "started": "2026-12-01T23:00:00+00:00", "pid": 42, "host": "vm"}
    dev = replace(Device.simple("seed", "100 GFLOP/s", "10 GB/s"),
                  metadata={"run": run, "device_file": "/cache/local-device.json"})
    lines = summary_lines(summarize(analyze(Workload.from_ops([Op("app", flops=1e9, bytes_read=1e9)]), dev)))
    device_line = next(line for line in lines if line.startswith("device: seed"))
    assert device_line.endswith("(device file /cache/local-device.json, run abc123def456 (started "
                                "2026-12-01T23:00:00+00:00, pid 42 on vm))")
