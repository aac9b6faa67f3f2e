"""The legality rules of docs/legality.md held by the code (issue 53): one table of limits, the same check phrased
for Python and for the command line (roofline.core.arguments.as_cli / called)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roofline.core import arguments as arg
from roofline.core.errors import RooflineError
from roofline.core.limits import LIMITS

ROOT = Path(__file__).resolve().parents[2]


def test_every_limit_in_the_code_is_in_the_table_and_the_docs() -> None:
    code = set()
    for p in (ROOT / "src" / "roofline").rglob("*.py"):
        code |= set(re.findall(r"ROOFLINE_(?:ONNX_)?MAX_[A-Z_]+", p.read_text()))
    assert code == set(LIMITS), code ^ set(LIMITS)
    docs = (ROOT / "docs" / "legality.md").read_text()
    assert [env for env in LIMITS if env not in docs] == []
    for env, (default, _) in LIMITS.items():  # the docs state each default as the table does (10**12, 1,073,741,824)
        assert f"`{env}` | {default:,} |" in docs, env


def test_the_table_states_the_defaults_the_readers_use() -> None:
    from roofline.core.fileio import MAX_INPUT_BYTES
    from roofline.frontends.onnx.load import LIMITS as ONNX
    from roofline.frontends.trace.placer import MAX_DEPTH
    from roofline.llm.config import LIMITS as CONFIG
    from roofline.llm.metrics import MAX_SWEEP_POINTS

    stated = {"ROOFLINE_MAX_INPUT_BYTES": MAX_INPUT_BYTES, "ROOFLINE_MAX_TRACE_DEPTH": MAX_DEPTH,
              "ROOFLINE_MAX_SWEEP_POINTS": MAX_SWEEP_POINTS,
              **{env: top for top, env, *_ in ONNX.values()}, **{env: top for top, env, _ in CONFIG.values()}}
    assert {env: LIMITS[env][0] for env in stated} == stated


# -- one check, two phrasings: 'func: param must be ..., got TYPE VALUE' from Python; "--option 'VALUE': must be ..."
# -- from the command line (the option named by the command's destinations) ---------------------------------------
PYTHON_AND_CLI = [
    # (check, Python message, CLI message); the rule words are the helper's, "(int)" dropped on the command line
    (lambda: arg.positive_int(0, "get_system", "devices"), "get_system: devices must be a whole number (int) >= 1, "
     "got int 0", "--devices '0': must be a whole number >= 1"),
    (lambda: arg.positive_int(-1, "Memory", "block_size (--block-size)"), "Memory: block_size (--block-size) must be "
     "a whole number (int) >= 1, got int -1", "--block-size '-1': must be a whole number >= 1"),
    (lambda: arg.positive_int(10, "with_devices", "devices", maximum=8), "with_devices: devices must be a whole "
     "number (int) >= 1 and <= 8, got int 10", "--devices '10': must be a whole number >= 1 and <= 8"),
    (lambda: arg.number(float("nan"), "Traffic", "rate"), "Traffic: rate must be a finite number >= 0, got float NaN",
     "--rate 'nan': must be a finite number >= 0"),
    (lambda: arg.choice("fifo", ("chunked", "vllm"), "Batching", "scheduler"), "Batching: scheduler must be one of "
     "'chunked', 'vllm', got str 'fifo'", "--scheduler 'fifo': must be one of 'chunked', 'vllm'"),
    (lambda: arg.text("", "resolve_system", "spec"), "resolve_system: spec must be a non-empty string, got str ''",
     "--system '': must be a non-empty string"),
    (lambda: arg.choice("\x1b[31m", ("a",), "engine_config", "name"), "engine_config: name must be one of 'a', got "
     "str '\\x1b[31m'", "--engine '\\x1b[31m': must be one of 'a'"),
    (lambda: arg.path("", "diff_traces", "b"), "diff_traces: b must be a non-empty path, got str ''",
     "--diff '': must be a non-empty path"),
]
OPTIONS = {"devices": "--devices", "block_size": "--block-size", "rate": "--rate", "scheduler": "--scheduler",
           "resolve_system.spec": "--system", "engine_config.name": "--engine", "diff_traces.b": "--diff"}


@pytest.mark.parametrize("check, python, cli", PYTHON_AND_CLI)
def test_a_check_names_the_function_from_python(check, python, cli) -> None:
    with pytest.raises(RooflineError) as info:
        check()
    assert str(info.value) == python


@pytest.mark.parametrize("check, python, cli", PYTHON_AND_CLI)
def test_a_check_names_the_option_from_the_command_line(check, python, cli) -> None:
    with arg.as_cli(OPTIONS), pytest.raises(RooflineError) as info:
        check()
    assert str(info.value) == cli


def test_a_type_error_stays_a_type_error_on_the_command_line() -> None:
    with arg.as_cli(OPTIONS), pytest.raises(TypeError, match=r"^--devices '1.5': must be a whole number >= 1$"):
        arg.positive_int(1.5, "get_system", "devices")


def test_a_parameter_the_command_does_not_set_keeps_the_python_phrasing() -> None:
    # a function parameter that no option of the running command sets is named as Python names it
    with arg.as_cli(OPTIONS), pytest.raises(RooflineError, match=r"^collectives.cost: ranks must be"):
        arg.positive_int(0, "collectives.cost", "ranks")
    assert arg.called("f", "p") == "f: p" and arg.option_for("f", "p") is None


def test_one_functions_parameter_is_mapped_apart_from_another_of_the_same_name() -> None:
    with arg.as_cli({"diff_traces.b": "--diff"}):
        assert arg.called("diff_traces", "b", "x.json") == "--diff 'x.json':"
        assert arg.called("other", "b", 1) == "other: b"


def test_as_cli_is_undone_on_leaving_even_on_an_error() -> None:
    with pytest.raises(RooflineError), arg.as_cli(OPTIONS):
        arg.positive_int(0, "get_system", "devices")
    assert arg.option_for("get_system", "devices") is None


def test_the_cli_names_the_options_of_the_command_it_runs(capsys) -> None:
    from roofline.cli import main

    cases = [(["plan", "llama-2-7b", "--system", "dgx-h100", "--train", "--devices", "0"],
              "--devices '0': must be a whole number >= 1"),
             (["plan", "llama-2-7b", "--system", "dgx-h100", "--train", "--devices", "8", "--nodes", "1"],
              "--nodes and --devices: give one, not both"),
             (["serve", "llama-2-7b", "--device", "h100", "--rate", "1", "--scheduler", "fifo"],
              "--scheduler 'fifo': must be one of"),
             (["serve", "llama-2-7b", "--device", "h100", "--rate", "1", "--isl", "-1"], "--isl '-1': give tokens > 0")]
    for argv, needle in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"roofline: error: {needle}"), err


def test_python_callers_are_named_as_python_names_them() -> None:
    from roofline.catalog import get_system
    from roofline.serving.requests import Traffic

    with pytest.raises(RooflineError, match=r"^Traffic: isl '-1': give tokens > 0"):
        Traffic(isl=-1)
    with pytest.raises(RooflineError, match=r"^get_system: give nodes or devices, not both$"):
        get_system("dgx-h100", nodes=1, devices=8)
    with pytest.raises(RooflineError, match=r"^with_devices: devices must be a whole number \(int\) >= 1 and <= "):
        get_system("dgx-h100", devices=10**18)
