import json
import subprocess
import sys

import pytest

from roofline.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_seed_example_one_cli_call(tmp_path, capsys):
    chart = tmp_path / "chart.png"
    code, out, _ = run(capsys, "plot", "--peak", "100GFLOP/s", "--bandwidth", "10GB/s",
                       "--point", "app:0.8e9:4e9:1", "-o", str(chart))
    assert code == 0
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # AI 0.2, attainable min(100, 0.2 * 10) = 2 GFLOP/s, measured 0.8 GFLOP/s = 40 %
    assert "memory-bound" in out and "2 GFLOP/s" in out and "40%" in out


def test_seed_example_one_python_call(tmp_path):
    import roofline

    a = roofline.analyze(roofline.Workload.from_ops([roofline.Op("app", flops=0.8e9, bytes_read=4e9, measured_seconds=1)]),
                         roofline.Device.simple("seed", "100 GFLOP/s", "10 GB/s"))
    roofline.plot(a).savefig(tmp_path / "c.svg")
    assert a.bound[0] == "memory" and (tmp_path / "c.svg").stat().st_size > 1000


@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_chart_formats(tmp_path, capsys, ext):
    out = tmp_path / f"c.{ext}"
    code, _, _ = run(capsys, "plot", "--device", "h100", "--point", "gemm:2.2T:100M", "--point", "softmax:1G:4G",
                     "-o", str(out))
    assert code == 0 and out.stat().st_size > 1000


def test_analyze_workload_file_writes_every_output(tmp_path, capsys):
    w = {"schema": "roofline.workload/1", "title": "two ops",
         "ops": [{"name": "gemm", "kind": "matmul", "flops": 2e12, "bytes_read": 1e9, "bytes_written": 1e8,
                  "precision": "bf16", "unit": "matrix", "group": "model.block"},
                 {"name": "gelu", "kind": "elementwise", "flops": 5e8, "bytes_read": 2e8, "bytes_written": 2e8,
                  "precision": "bf16", "group": "model.block"}]}
    src = tmp_path / "w.json"
    src.write_text(json.dumps(w))
    outs = {k: tmp_path / f"out.{k}" for k in ("png", "json", "csv")}
    code, out, _ = run(capsys, "analyze", str(src), "--device", "a100", "-o", str(outs["png"]),
                       "--json", str(outs["json"]), "--csv", str(outs["csv"]))
    assert code == 0
    assert all(p.exists() for p in outs.values())
    # gemm on A100 bf16: max(2e12 / 312e12, 1.1e9 / 2.039e12) = 6.41 ms compute-bound; gelu is memory-bound
    assert "compute-bound" in out and "memory-bound" in out
    saved = json.loads(outs["json"].read_text())
    assert saved["schema"] == "roofline.analysis/2"
    assert saved["ops"]["time"][0] == pytest.approx(2e12 / 312e12)
    code, out, _ = run(capsys, "analyze", str(src), "--device", "a100", "--group-by", "kind")
    assert code == 0 and "by kind" in out


def test_devices_and_device(capsys):
    code, out, _ = run(capsys, "devices")
    assert code == 0 and "H100" in out
    code, out, _ = run(capsys, "device", "H100-SXM5-80GB")
    assert code == 0 and "989.4 TFLOP/s" in out and "3.35 TB/s" in out and "ridge" in out
    code, out, _ = run(capsys, "devices", "--json")
    assert len(json.loads(out)) >= 25


# -- bad input: one line, exit 2, nothing written ---------------------------------------

def bad_device_files(tmp_path):
    good = {"schema": "roofline.device/1", "name": "d", "compute": [{"unit": "vector", "precision": "fp32", "flops": 1e12}],
            "memory": [{"level": "DRAM", "bandwidth": 1e11}]}
    cases = {
        "schema": {**good, "schema": "roofline.device/9"},
        "missing": {k: v for k, v in good.items() if k != "memory"},
        "negative": {**good, "compute": [{"unit": "vector", "precision": "fp32", "flops": -1}]},
        "zero": {**good, "memory": [{"level": "DRAM", "bandwidth": 0}]},
        "unit": {**good, "memory": [{"level": "DRAM", "bandwidth": "10 GFLOP/s"}]},
    }
    paths = []
    for name, doc in cases.items():
        p = tmp_path / f"dev-{name}.json"
        p.write_text(json.dumps(doc))
        paths.append(p)
    return paths


def bad_workload_files(tmp_path):
    def op(**kw):
        return {"name": "x", "flops": 1.0, "bytes_read": 1.0, "bytes_written": 1.0, **kw}
    cases = {
        "negative": [op(flops=-1)],
        "nan": '{"schema": "roofline.workload/1", "ops": [{"name": "x", "flops": NaN, "bytes_read": 1, "bytes_written": 1}]}',
        "inf": '{"schema": "roofline.workload/1", "ops": [{"name": "x", "flops": 1, "bytes_read": Infinity, "bytes_written": 1}]}',
        "seconds": [op(measured_seconds=-1)],
        "columns": {"name": ["x"], "flops": [1.0]},
        "empty": [],
    }
    paths = []
    for name, ops in cases.items():
        p = tmp_path / f"w-{name}.json"
        p.write_text(ops if isinstance(ops, str) else json.dumps({"schema": "roofline.workload/1", "ops": ops}))
        paths.append(p)
    return paths


def assert_one_line_error(code, err, *needles):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("roofline: error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0]


def test_unknown_device_lists_closest_three(capsys, tmp_path):
    code, _, err = run(capsys, "device", "h1000")
    assert_one_line_error(code, err, "unknown device 'h1000'", "closest:")
    assert err.count(",") >= 2


def test_bad_device_files_exit_2_and_write_nothing(tmp_path, capsys):
    for p in bad_device_files(tmp_path):
        chart = tmp_path / "never.png"
        code, _, err = run(capsys, "plot", "--device", str(p), "--point", "a:1:1", "-o", str(chart))
        assert_one_line_error(code, err, str(p))
        assert not chart.exists()


def test_bad_workload_files_exit_2_and_write_nothing(tmp_path, capsys):
    for p in bad_workload_files(tmp_path):
        outs = [tmp_path / "never.png", tmp_path / "never.json", tmp_path / "never.csv"]
        code, _, err = run(capsys, "analyze", str(p), "--device", "h100", "-o", str(outs[0]),
                           "--json", str(outs[1]), "--csv", str(outs[2]))
        assert_one_line_error(code, err, str(p))
        assert not any(o.exists() for o in outs)


@pytest.mark.parametrize("point", ["app", "app:1", ":1:2", "app:x:4e9", "app:1:2:3:4", "app:-1:2", "app:1:2:0",
                                   "app:1:2:fast"])
def test_malformed_points(capsys, tmp_path, point):
    chart = tmp_path / "never.png"
    code, _, err = run(capsys, "plot", "--peak", "1TFLOP/s", "--bandwidth", "1GB/s", "--point", point, "-o", str(chart))
    assert_one_line_error(code, err, "--point")
    assert not chart.exists()


def test_unknown_chart_extension_lists_valid(capsys, tmp_path):
    code, _, err = run(capsys, "plot", "--peak", "1TFLOP/s", "--bandwidth", "1GB/s", "--point", "a:1:1", "-o",
                       str(tmp_path / "c.bmp"))
    assert_one_line_error(code, err, ".png", ".svg", ".pdf")


def test_console_script_subprocess_has_no_traceback(tmp_path):
    r = subprocess.run([sys.executable, "-m", "roofline.cli", "analyze", str(tmp_path / "missing.json"), "--device", "h100"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("roofline: error:") and "Traceback" not in r.stderr


def test_every_command_has_help_with_example(capsys):
    from roofline.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        text = p.format_help()
        assert "example" in text and f"roofline {name}" in text, name


# -- issue 14, item 8: the CLI ---------------------------------------------------------

def test_torch_module_callable_from_the_current_directory(tmp_path, monkeypatch, capsys):
    """MODULE:CALLABLE finds a module in the current directory without PYTHONPATH, as ``python -m`` does."""
    pytest.importorskip("torch")
    (tmp_path / "issue14_lm.py").write_text(
        "import torch\n\n"
        "def make():\n"
        "    return torch.nn.Linear(4, 8), (torch.zeros(2, 4),)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delitem(sys.modules, "issue14_lm", raising=False)
    assert str(tmp_path) not in sys.path and "" not in sys.path  # only the command's own import adds it
    out = tmp_path / "a.json"
    code, _, err = run(capsys, "torch", "issue14_lm:make", "--device", "h100", "--json", str(out))
    assert code == 0, err
    totals = json.loads(out.read_text())["totals"]
    # Linear(4, 8) on a 2x4 input: addmm 2 x (2 rows x 4 in x 8 out) = 128 FLOPs; fp32 bytes: input 2*4*4 = 32,
    # weight 4*8*4 = 128, bias 8*4 = 32, output 2*8*4 = 64 -> 256
    assert totals["flops"] == 128 and totals["bytes"] == 256
    assert str(tmp_path) not in sys.path  # removed again after the import


def test_torch_module_not_found_says_where_it_looked(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "torch", "issue14_missing.lm:build", "--device", "h100")
    assert_one_line_error(code, err, "cannot import module 'issue14_missing.lm': no module named 'issue14_missing' "
                                     f"in the current directory ({tmp_path}) or on sys.path",
                          "PYTHONPATH", "path/to/issue14_missing/lm.py:build")


def test_mistyped_command_suggests_the_closest(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["devcies"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    # normalised 'devcies' vs 'devices': difflib ratio 2*6/14 = 0.86, the best (vs 'device' 2*5/13 = 0.77); neither
    # contains 'devcies', so one suggestion; one line, the program named once
    assert err == "roofline: error: unknown command 'devcies'; did you mean 'devices'? (see 'roofline --help')\n"
    with pytest.raises(SystemExit):
        main(["dev"])
    # 'dev' is contained in both 'device' (ratio 2*3/9 + 0.5 = 1.17, the best) and 'devices' (2*3/10 + 0.5 = 1.1)
    assert "unknown command 'dev'; did you mean 'device' or 'devices'?" in capsys.readouterr().err


def test_subcommand_usage_errors_name_the_program_once(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["compare"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert err.startswith("roofline: error: compare: the following arguments are required: WORKLOAD_OR_MODEL, "
                          "--devices (see 'roofline compare --help')")


@pytest.mark.parametrize("peak,bandwidth,message", [
    # a bare 10 on the command line was read as 10 B/s: refused, the example keeps the number with a G prefix
    ("100GFLOP/s", "10", "--bandwidth '10': give a unit, e.g. '10 GB/s' (a bare number would be 10 B/s)"),
    ("100", "10GB/s", "--peak '100': give a unit, e.g. '100 GFLOP/s' (a bare number would be 100 FLOP/s)"),
    # 1e12 FLOP/s = 1 TFLOP/s: an exponent is already scaled, so the example uses the base unit
    ("1e12", "10GB/s", "--peak '1e12': give a unit, e.g. '1e12 FLOP/s' (a bare number would be 1 TFLOP/s)"),
    # a prefix alone is no unit: its own prefix is kept in the example
    ("1T", "10GB/s", "--peak '1T': give a unit, e.g. '1 TFLOP/s'"),
    ("1TFLOP/s", "10 Gi", "--bandwidth '10 Gi': give a unit, e.g. '10 GiB/s'"),
])
def test_bare_numbers_for_peak_and_bandwidth_are_refused(tmp_path, capsys, peak, bandwidth, message):
    chart = tmp_path / "never.png"
    code, _, err = run(capsys, "plot", "--peak", peak, "--bandwidth", bandwidth, "--point", "a:1:1", "-o", str(chart))
    assert_one_line_error(code, err)
    assert err == f"roofline: error: {message}\n"
    assert not chart.exists()


def test_quantities_with_units_and_unit_free_points_still_work(capsys):
    # '10 G B/s' (spaces inside) is 10 GB/s; the point's 0.8G FLOPs and 4G bytes stay unit-free SI numbers:
    # AI 0.8e9 / 4e9 = 0.2 FLOP/B, attainable min(100, 0.2 x 10) = 2 GFLOP/s
    code, out, err = run(capsys, "plot", "--peak", "100 GFLOPS", "--bandwidth", "10 G B/s", "--point", "app:0.8G:4G")
    assert code == 0, err
    assert "memory-bound" in out and "2 GFLOP/s" in out


def test_llm_and_compare_share_the_phase_default():
    from roofline.cli import build_parser
    from roofline.llm.spec import LLMSpec

    parser = build_parser()
    llm = parser.parse_args(["llm", "llama-3-8b", "--device", "h100"])
    compare = parser.parse_args(["compare", "llama-3-8b", "--devices", "h100"])
    # both take the library's own default, LLMSpec.phase = "generate" (compare used to default to decode)
    assert llm.phase == compare.phase == LLMSpec.phase == "generate"
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    helps = {name: next(a.help for a in sub.choices[name]._actions if a.dest == "phase") for name in ("llm", "compare")}
    assert helps["llm"] == helps["compare"] == "default generate (prefill + decode)"


def test_option_prefix_note_reads_either_form_of_argparse_private_return(monkeypatch, capsys):
    """argparse's _parse_optional returns a tuple (3.10-3.13.0) or a list of tuples (later patch releases):
    the unique-prefix note reads both and hands argparse back exactly what it gave."""
    import argparse

    from roofline import cli

    p = cli.Parser(prog="x")
    p.add_argument("--quick", action="store_true")
    original = argparse.ArgumentParser._parse_optional
    as_list = [original(p, "--quic")]  # what a newer argparse returns for one match
    monkeypatch.setattr(argparse.ArgumentParser, "_parse_optional", lambda self, arg: as_list)
    cli._NOTED.clear()
    assert cli.Parser._parse_optional(p, "--quic") is as_list
    assert "'--quic' taken as '--quick'" in capsys.readouterr().err
    monkeypatch.setattr(argparse.ArgumentParser, "_parse_optional", lambda self, arg: [as_list[0], as_list[0]])
    cli.Parser._parse_optional(p, "--qu")  # several matches: argparse's own error follows, no note
    assert capsys.readouterr().err == ""
