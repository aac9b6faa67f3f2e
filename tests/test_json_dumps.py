"""render.dumps (long numeric lists spliced in by msgspec) against json.dumps: the same JSON values for any input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from roofline.render import dumps


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _no_msgspec(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_msgspec(name, *a, **k):
        if name == "msgspec":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_msgspec)


def test_same_values_as_json():
    rng = np.random.default_rng(34)
    floats = np.concatenate([rng.lognormal(0, 30, 3000), -rng.uniform(0, 1e-6, 1000), [0.0, -0.0, 5e-324, 1e308]])
    value = {
        "floats": floats.tolist(),  # every float read back bit for bit (shortest round-trip form either way)
        "with_none": [None if k % 7 == 0 else float(k) / 3 for k in range(1000)],
        "nan": [1.0] * 500 + [math.nan],  # NaN / inf: json's own spelling kept (msgspec would write null)
        "inf": [math.inf] + [2.0] * 500, "overflowing_sum": [1e308] * 300,  # a sum past the range, each finite
        "big_int": list(range(400)) + [2**70],  # past int64: json writes it
        "bools": [True, False] * 200, "ints": list(range(-300, 300)),
        "strings": ["a, b", "\x00"] * 200, 3: ("tuple", [1.5] * 300),
        "nested": [{"x": [0.1] * 300}, [[0.2] * 300]], "short": [1e-5, 2.5e-7],
    }
    text = dumps(value)
    assert _same(json.loads(text), json.loads(json.dumps(value)))
    assert "NaN" in text and "Infinity" in text and str(2**70) in text


def test_a_string_like_a_placeholder_is_kept():
    s = "\x00deadbeefdeadbeef:0\x00"  # the placeholder's shape: the nonce is random, so no file's string is one
    value = {"s": s, "x": [1.0] * 300}
    assert json.loads(dumps(value)) == {"s": s, "x": [1.0] * 300}


def test_without_msgspec_it_is_json(monkeypatch):
    _no_msgspec(monkeypatch)
    value = {"x": [0.5] * 300}
    assert dumps(value) == json.dumps(value)


@pytest.mark.parametrize("n", [0, 255, 256])
def test_lengths(n):
    value = [0.25] * n
    assert json.loads(dumps(value)) == value


def test_bytes_and_text_agree_and_splice_every_list():
    from roofline.render import dumps_bytes

    # many spliced lists side by side and nested, and one at the very start and end of the text
    value = [[0.5] * 300, {"a": [1] * 300, "b": [[2.5] * 256, [3.0] * 257]}, "x", [4.0] * 400]
    raw = dumps_bytes(value)
    assert isinstance(raw, bytes) and raw.decode("ascii") == dumps(value)
    assert json.loads(raw) == value
    assert b"\\u0000" not in raw  # no placeholder left behind


def test_workload_columns_written_the_same_finite_or_not():
    import roofline

    w = roofline.Workload.from_dict({"schema": "roofline.workload/3", "ops": [
        {"name": "a", "flops": 1.0, "bytes_read": 2.0, "bytes_written": 3.0, "measured_seconds": 0.5},
        {"name": "b", "flops": 4.0, "bytes_read": 5.0, "bytes_written": 6.0}]})
    ops = w.to_dict()["ops"]
    assert ops["flops"] == [1.0, 4.0] and all(type(x) is float for x in ops["flops"])  # the all-finite route
    assert ops["measured_seconds"] == [0.5, None]  # NaN (not measured) written as null


def test_lazy_numbers_across_slices_are_the_list():
    from roofline.render import SLICE, dumps_bytes
    from roofline.work.workload_columns import JsonNumbers, finite_or_null

    # NaN and infinities on both sides of each slice edge and at both ends: the list has null there (finite_or_null)
    v = np.linspace(-3.0, 7.0, 2 * SLICE + 5)
    for i in (0, SLICE - 1, SLICE, 2 * SLICE, len(v) - 1):
        v[i] = (math.nan, math.inf, -math.inf)[i % 3]
    lazy = finite_or_null(v, lazy=True)
    assert isinstance(lazy, JsonNumbers) and isinstance(finite_or_null(v[:255], lazy=True), list)  # LAZY_MIN 256
    listed = finite_or_null(v)
    assert listed[0] is None and listed[SLICE] is None and listed[1] == v[1]
    raw = dumps_bytes({"a": lazy, "b": [lazy, "x"]})
    assert raw == dumps_bytes({"a": listed, "b": [listed, "x"]})  # the same bytes as the list's route
    assert json.loads(raw) == {"a": listed, "b": [listed, "x"]}  # and the list's values, null for non-finite


def test_lazy_numbers_without_msgspec_are_json(monkeypatch):
    from roofline.render import dumps_bytes
    from roofline.work.workload_columns import finite_or_null

    v = np.arange(300, dtype=float)
    v[7] = math.nan
    _no_msgspec(monkeypatch)
    assert dumps_bytes({"x": finite_or_null(v, lazy=True)}) == json.dumps({"x": finite_or_null(v)}).encode()


def test_string_lists_printable_ascii_by_msgspec_others_by_json():
    from roofline.render import dumps_bytes

    plain = ['a "quoted" \\ name', "x/y", "~"] * 100  # printable ASCII: msgspec's compact list
    odd = ["caf\u00e9", "tab\there", "\ud800"] * 100  # non-ASCII, a control character, a lone surrogate: json
    raw = dumps_bytes({"plain": plain, "odd": odd})
    assert json.loads(raw) == {"plain": plain, "odd": odd}
    assert b'"x/y","~"' in raw  # compact: spliced
    assert b'"caf\\u00e9", "tab\\there", "\\ud800"' in raw  # json's own escapes and separators


def test_json_file_of_a_long_analysis_is_its_to_dict():
    import roofline
    from roofline.render import JsonRenderer

    n = 600  # above LAZY_MIN: every numeric column takes the lazy route
    ops = [{"name": f"op{i}", "flops": float(i) * 1e3, "bytes_read": 1e3 + i, "bytes_written": 10.0,
            **({"measured_seconds": 1e-6 * (i + 1)} if i % 3 else {})} for i in range(n)]
    w = roofline.Workload.from_dict({"schema": "roofline.workload/3", "ops": ops})
    a = roofline.analyze(w, "h100-sxm")
    raw = JsonRenderer().render(a)
    assert raw.endswith(b"\n") and json.loads(raw) == json.loads(json.dumps(a.to_dict()))
    back = roofline.Analysis.from_dict(json.loads(raw))
    assert np.array_equal(back.time, a.time) and back.workload.to_dict() == w.to_dict()


def test_the_one_nan_to_null_conversion():
    """JSON has no NaN nor infinity: json_number gives None (null) for them, json_numbers for each of a list, as
    the quartiles, a workload column and the HTML chart's data all write them."""
    import math

    import numpy as np

    from roofline.core.fileio import json_number, json_numbers
    from roofline.core.stats import OpTimings
    from roofline.work.workload_columns import finite_or_null

    assert [json_number(x) for x in (1.5, math.nan, math.inf, -math.inf)] == [1.5, None, None, None]
    assert json_numbers([1.0, math.nan, 2.0, math.inf]) == [1.0, None, 2.0, None]
    assert json_numbers(np.array([1.0, 2.0])) == [1.0, 2.0]
    assert finite_or_null([math.nan, 3.0]) == [None, 3.0]
    q = OpTimings.of(np.array([[1.0, math.nan], [3.0, math.nan]])).to_dict()
    assert q["median"] == [2.0, None] and q["samples"] == [2, 0]  # the median of 1 and 3; no sample: null
