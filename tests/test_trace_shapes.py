"""The closed-form route of the trace replay (roofline.frontends.trace.shapes) against the meta route, and the
limit on meta rebuilds (ROOFLINE_MAX_TRACE_CALLS)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

import trace_shapes_calls as calls  # noqa: E402

from roofline.core.errors import RooflineError  # noqa: E402
from roofline.frontends.trace.placer import FUSED  # noqa: E402
from roofline.frontends.trace.replay import NotReplayed, Replayer  # noqa: E402
from roofline.frontends.trace.shapes import RULES, Unknown, broadcast  # noqa: E402


def _outcome(r: Replayer, i: int, name: str, args: dict[str, Any]) -> Any:
    try:
        return r.cost(name, i, args, fused=name in FUSED)
    except NotReplayed as exc:
        return ("not replayed", str(exc))


def test_closed_form_agrees_with_meta_route_on_2000_random_calls() -> None:
    """2,000 seeded calls over the 17 op groups (1 in 30 made invalid): every outcome (op name, kind, FLOPs,
    bytes read and written, precision, GEMM dims; or not replayed and why) is the same by both routes."""
    drawn = calls.draw(2000, seed=0)
    fast, meta = Replayer(), Replayer(closed_form=False)
    meta.rec.flop_registry = meta.rec.flop_registry._registry  # flop_counter's own wrappers (pytree), untouched
    mismatched = []
    closed_by_group: Counter[str] = Counter()
    for i, (name, args) in enumerate(drawn):
        before = fast.calls["closed form"]
        got, want = _outcome(fast, i, name, args), _outcome(meta, i, name, args)
        if got != want:
            mismatched.append((name, args, got, want))
        closed_by_group[name] += fast.calls["closed form"] - before
    assert mismatched == [], mismatched[:3]
    assert meta.calls["closed form"] == 0 and meta.calls["meta"] == 2000
    # the closed form answers nearly all of them: the invalid ones (about 1 in 30) go to the meta route
    assert fast.calls["closed form"] >= 0.95 * 2000, fast.calls
    placed = [_outcome(fast, i, n, a) for i, (n, a) in enumerate(drawn)]
    assert sum(isinstance(p, tuple) and p and p[0] != "not replayed" for p in placed) > 1000
    assert len({n for n, c in closed_by_group.items() if c}) >= 40  # op names, across every group


def test_mm_by_hand() -> None:
    """aten::mm (64 x 32 fp32) @ (32 x 16 bf16 would be mixed: fp32 here): 2 * 64 * 32 * 16 = 65,536 FLOPs;
    reads 64*32*4 + 32*16*4 = 10,240 bytes, writes 64*16*4 = 4,096."""
    r = Replayer()
    name, c, precision, dims = r.cost("aten::mm", 0, {"Input type": ["float", "float"],
                                                       "Input Dims": [[64, 32], [32, 16]],
                                                       "Concrete Inputs": ["", ""]})
    assert r.calls == {"closed form": 1, "meta": 0, "past the limit": 0}
    assert (name, c.flops, c.bytes_read, c.bytes_written, precision) == ("mm", 65536.0, 10240.0, 4096.0, "fp32")
    assert dims == {"m": 64.0, "n": 16.0, "k": 32.0, "batch": 1.0}


def test_every_rule_names_an_overload_of_this_torch() -> None:
    import torch

    for key in RULES:
        _, packet, overload = key.split(".")
        assert overload in getattr(torch.ops.aten, packet).overloads(), key


def test_broadcast() -> None:
    assert broadcast((8, 1, 4), (3, 1)) == (8, 3, 4)
    with pytest.raises(Unknown):
        broadcast((8, 4), (3,))


def test_meta_rebuilds_past_the_limit_are_left_unplaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """ROOFLINE_MAX_TRACE_CALLS=2: 2 meta rebuilds, and 2 x 9 = 18 closed-form calls apart.  Three group norms
    (meta route): 2 rebuilt, the third past the limit; an mm after them is still costed (closed form)."""
    monkeypatch.setenv("ROOFLINE_MAX_TRACE_CALLS", "2")
    r = Replayer()
    norm = {"Input type": ["float", "float", "float", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"],
            "Input Dims": [[2, 8, 4, 4], [8], [8], [], [], [], [], []],
            "Concrete Inputs": ["", "", "", "2", "8", "16", "4", "1e-05"]}
    assert r.cost("aten::native_group_norm", 0, norm)[1].kind == "norm"
    assert r.cost("aten::native_group_norm", 1, norm)[1].kind == "norm"
    assert r._left == {"meta": 0, "closed form": 18}  # a closed-form attempt that falls through costs a rebuild only
    with pytest.raises(NotReplayed, match="ROOFLINE_MAX_TRACE_CALLS"):
        r.cost("aten::native_group_norm", 2, norm)
    assert r.calls == {"closed form": 0, "meta": 2, "past the limit": 1}
    mm = {"Input type": ["float", "float"], "Input Dims": [[8, 16], [16, 4]], "Concrete Inputs": ["", ""]}
    assert r.cost("aten::mm", 3, mm)[1].flops == 2 * 8 * 16 * 4
    assert "1 distinct recorded call(s) not costed" in r.notes()[0] and "ROOFLINE_MAX_TRACE_CALLS" in r.notes()[0]


def test_trace_past_the_limit_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace of 40 distinct closed-form calls under a limit of 2 meta rebuilds (18 closed-form calls): 18 placed, 22 not,
    and the warning says how many and names the variable."""
    from roofline.frontends.trace import read_trace

    path = tmp_path / "t.json"
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.0 * k, "dur": 5.0,
               "args": {"Input type": ["float", "float"], "Input Dims": [[8 + k, 16], [16, 4]],
                        "Concrete Inputs": ["", ""]}} for k in range(40)]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    monkeypatch.setenv("ROOFLINE_MAX_TRACE_CALLS", "2")
    w = read_trace(path)
    assert len(w) == 18
    assert any("22 distinct recorded call(s) not costed" in x and "ROOFLINE_MAX_TRACE_CALLS" in x
               for x in w.warnings)
    monkeypatch.setenv("ROOFLINE_MAX_TRACE_CALLS", "0")
    with pytest.raises(RooflineError, match="ROOFLINE_MAX_TRACE_CALLS"):
        read_trace(path)


def test_distinct_calls_are_distinct() -> None:
    got = list(calls.distinct(300, seed=3))
    assert len({n + json.dumps(a) for n, a in got}) == 300
