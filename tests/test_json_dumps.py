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
    import builtins

    real = builtins.__import__

    def no_msgspec(name, *a, **k):
        if name == "msgspec":
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_msgspec)
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
