"""Issue 31, the smaller ones: one rule for names (devices, models, systems, options), one wording for a bad
--batch, small ratios that keep their digits, the vendor placeholder, an output folder that does not exist.
Expectations are derived by hand in the comments (catalog aliases, difflib ratios, arithmetic)."""

from __future__ import annotations

import warnings

import pytest

from roofline import RooflineError
from roofline.catalog import get_device, get_system
from roofline.cli import main
from roofline.core.names import NameResolved, resolve


def resolved(call, *args, **kw):
    """``call(*args, **kw)`` and the NameResolved messages it warned."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = call(*args, **kw)
    return out, [str(w.message) for w in seen if w.category is NameResolved]


def one_line_error(capsys, argv: list[str]) -> str:
    """The one stderr line of a refused command line, exit code 2 (argparse's usage errors exit through
    SystemExit; the others return 2)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("roofline: error: "), err
    return err


# -- one rule for names -------------------------------------------------------------------------------------

def test_a_unique_device_prefix_resolves_and_says_so():
    # 'mi300' starts only the alias 'mi300x' (MI325X's aliases start 'mi325', MI250X's 'mi250'): MI300X
    dev, notes = resolved(get_device, "mi300")
    assert dev.name == "AMD Instinct MI300X"
    assert notes == ["'mi300' taken as AMD Instinct MI300X (the one device it starts)"]
    # an exact alias is silent, whatever its case and punctuation
    dev, notes = resolved(get_device, "H100-SXM")
    assert dev.name == "NVIDIA H100 SXM5 80GB" and notes == []


def test_an_ambiguous_device_prefix_lists_its_matches():
    # 'h1' starts h100* (the SXM5) and h100-pcie* (the PCIe card); H200's aliases start 'h2'
    with pytest.raises(RooflineError) as info:
        get_device("h1")
    assert str(info.value) == ("ambiguous device 'h1': it starts 2 names (NVIDIA H100 PCIe 80GB, NVIDIA H100 SXM5 80GB); "
                               "give more of it (see 'roofline devices')")


def test_a_device_typo_gets_close_names_only():
    # 'mi30x' is no prefix of anything; difflib ratio against 'mi300x' 2*5/11 = 0.91, 'mi250x' 2*4/11 = 0.73:
    # MI300X first.  RTX 3090 ('3090', 'rtx3090'): 'mi30x' vs '3090' 2*2/9 = 0.44, under the 0.6 cutoff: not named
    with pytest.raises(RooflineError) as info:
        get_device("mi30x")
    message = str(info.value)
    assert message.startswith("unknown device 'mi30x'; closest: AMD Instinct MI300X")
    assert "3090" not in message


def test_systems_follow_the_same_rule():
    # 'dgx-h1' starts only the alias 'dgxh100'; 'dgx-h' starts 'dgxh100' and 'dgxh200' (the DGX H200 of issue 49)
    system, notes = resolved(get_system, "dgx-h1")
    assert system.name == "NVIDIA DGX H100" and notes == ["'dgx-h1' taken as NVIDIA DGX H100 (the one system it starts)"]
    with pytest.raises(RooflineError, match=r"ambiguous system 'dgx-h': it starts 2 names \(NVIDIA DGX H100, NVIDIA DGX H200\)"):
        get_system("dgx-h")


def test_resolve_by_hand():
    index = {"alpha": "Alpha", "alphabig": "Alpha", "beta": "Beta", "betamax": "Beta Max"}
    assert resolved(resolve, "ALPHA", index, "thing") == ("Alpha", [])  # exact, case ignored
    assert resolved(resolve, "alp", index, "thing") == ("Alpha", ["'alp' taken as Alpha (the one thing it starts)"])
    with pytest.raises(RooflineError, match=r"ambiguous thing 'bet': it starts 2 names \(Beta, Beta Max\)"):
        resolve("bet", index, "thing")
    with pytest.raises(RooflineError, match=r"unknown thing 'gamma'; closest: "):
        resolve("gamma", index, "thing")


def test_the_command_line_notes_a_resolved_name_on_stderr(capsys, tmp_path):
    assert main(["device", "mi300"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["roofline: note: 'mi300' taken as AMD Instinct MI300X (the one device it starts)"]
    assert "AMD Instinct MI300X (AMD gpu)" in captured.out  # vendor and kind, no placeholder
    # an option by a unique prefix: '--out' starts only '--output' among 'device' 's options
    path = tmp_path / "c.png"
    assert main(["device", "h100", "--out", str(path)]) == 0
    assert "roofline: note: '--out' taken as '--output' (the one option it starts)" in capsys.readouterr().err
    assert path.stat().st_size > 1000


def test_an_option_typo_gets_did_you_mean(capsys):
    # '--quik' vs '--quick': normalised 'quik' / 'quick', difflib ratio 2*4/9 = 0.89
    err = one_line_error(capsys, ["bench", "--quik"])
    assert err == ("roofline: error: bench: unrecognized arguments: --quik; did you mean '--quick'? "
                   "(see 'roofline bench --help')")
    # nothing close: no guess ('--zzz' shares no letter with any option)
    err = one_line_error(capsys, ["device", "h100", "--zzz"])
    assert "did you mean" not in err and "unrecognized arguments: --zzz" in err


# -- one wording for --batch --------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "-3", "x", "2.5"])
def test_batch_errors_have_one_wording(capsys, value):
    llm = one_line_error(capsys, ["llm", "llama-3-8b", "--device", "h100", "--batch", value])
    assert f"argument --batch: must be a whole number >= 1 or 'max', got '{value}'" in llm
    compare = one_line_error(capsys, ["compare", "llama-3-8b", "--devices", "h100", "--batch", value])
    assert f"argument --batch: must be a whole number >= 1, got '{value}'" in compare


# -- numbers and placeholders -------------------------------------------------------------------------------

def test_a_small_ratio_keeps_its_significant_digits():
    from roofline.words.summary import Ratio

    # 0.0012 with two decimals was '0.00': two significant digits below 0.1
    assert Ratio(0.0012, 0.00105, 0.00131).describe() == "0.0012 (0.001..0.0013)"
    assert Ratio(0.4213, 0.4, 0.44).describe() == "0.42 (0.40..0.44)"  # from 0.1 up: two decimals, as before


def test_a_device_without_vendor_shows_its_kind_alone():
    from roofline import Device

    d = Device.simple("seed", "100 GFLOP/s", "10 GB/s", kind="cpu")
    assert d.vendor == "" and d.vendor_kind() == "cpu"
    assert "(cpu, dense figures)" in d._repr_html_()
    assert get_device("h100").vendor_kind() == "NVIDIA gpu"


# -- outputs ------------------------------------------------------------------------------------------------

def test_an_output_into_a_missing_folder_is_one_line_and_creates_nothing(capsys, tmp_path):
    missing = tmp_path / "nonexistent" / "dir"
    err = one_line_error(capsys, ["device", "h100", "-o", str(missing / "c.png")])
    assert f"cannot write: folder '{missing}' does not exist (create it first)" in err
    assert not (tmp_path / "nonexistent").exists()


def test_plan_says_what_the_layouts_left_out_are(capsys):
    """'N past memory' read as a size; the line now says what N counts."""
    assert main(["plan", "llama-3-70b", "--system", "dgx-h100", "--nodes", "4", "--train", "--global-batch", "64"]) == 0
    # the first sentence, which the terminal's width may wrap onto several lines (render.fit.wrap)
    first = " ".join(capsys.readouterr().out.split("\n\n")[0].split())
    assert "of them left out as they do not fit in device memory" in first and "past memory" not in first
