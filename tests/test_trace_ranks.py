"""roofline trace over many ranks: the parsers agree, the cross-rank view by hand, local processes and Dask."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from roofline.cli import main  # noqa: E402
from roofline.frontends.trace import read_traces  # noqa: E402
from roofline.frontends.trace.crossrank import OUTSIDE  # noqa: E402
from roofline.frontends.trace.events import PARSERS, read_events  # noqa: E402

MM = {"Input type": ["float", "float"], "Input Dims": [[64, 128], [128, 32]], "Input Strides": [[128, 1], [32, 1]],
      "Concrete Inputs": ["", ""]}
AR = {"Input type": ["TensorList"], "Input Dims": [[[1024]]]}
COMMS = {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1024, "Out msg nelems": 1024,
         "Group size": 4}


def _x(cat, name, ts, dur, tid=1, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e


def rank_trace(path: Path, rank: int, world: int, gemm: list[float], idle: list[float], end: list[float],
               extra: list[dict] | None = None, *, tail: float = 0.0, extra_gemm: float = 0.0,
               group: str | None = None) -> Path:
    """A gloo-style CPU trace: per step n (from n * 2000 us, 1000 us long plus ``tail``), an aten::mm at +10 of
    gemm[n] us (and a second of ``extra_gemm`` us right after it, when not 0), then idle[n] us of nothing, then
    the step's collective until end[n] (the same for every rank: the last rank to arrive sets it), then
    ``tail`` us of nothing at the step's end (waiting outside any collective, as a host blocked in a sync does).
    The collective is gloo:all_reduce on the gloo thread, or with ``group`` a record_param_comms with that
    process group and the step's sequence number (``Seq``)."""
    events = []
    for n, (g, i, e) in enumerate(zip(gemm, idle, end, strict=True)):
        t0 = 2000.0 * n
        events.append(_x("user_annotation", f"ProfilerStep#{n + 3}", t0, 1000.0 + tail))
        events.append(_x("cpu_op", "aten::mm", t0 + 10, g, **MM))
        if extra_gemm:
            events.append(_x("cpu_op", "aten::mm", t0 + 10 + g, extra_gemm, **MM))
        start = t0 + 10 + g + extra_gemm + i
        if group is None:
            events.append(_x("user_annotation", "gloo:all_reduce", start, t0 + e - start, tid=2, **AR))
        else:
            events.append(_x("cpu_op", "record_param_comms", start, t0 + e - start, **COMMS, **{
                "Process Group Name": group, "Seq": n + 1}))
    events += extra or []
    doc = {"schemaVersion": 1, "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": world},
           "traceEvents": events}
    path.write_text(json.dumps(doc))
    return path


def ranks(tmp_path: Path, n: int, slow: int | None = None, idle_rank: int | None = None, *,
          tail: dict[int, float] | None = None, extra: dict[int, float] | None = None,
          idle: dict[int, float] | None = None, steps: int = 3, group: str | None = None) -> list[Path]:
    """``n`` ranks of ``steps`` steps: mm 100 us each (130 on ``slow``), 60 us idle on ``idle_rank`` (or
    ``idle[r]`` on rank r) before the collective, ``extra[r]`` us of a second mm on rank r, ``tail[r]`` us of
    waiting at the end of rank r's steps; the collective ends 50 us after the last rank arrives."""
    base, tail, extra = 100.0, tail or {}, extra or {}
    idle = {**({idle_rank: 60.0} if idle_rank is not None else {}), **(idle or {})}
    gemm = {r: [base * (1.3 if r == slow else 1.0)] * steps for r in range(n)}
    idles = {r: [idle.get(r, 0.0)] * steps for r in range(n)}
    end = [10 + max(gemm[r][k] + extra.get(r, 0.0) + idles[r][k] for r in range(n)) + 50.0 for k in range(steps)]
    return [rank_trace(tmp_path / f"rank{r}.json", r, n, gemm[r], idles[r], end, tail=tail.get(r, 0.0),
                       extra_gemm=extra.get(r, 0.0), group=group) for r in range(n)]


# -- the parsers agree ----------------------------------------------------------------------------------------
def _same(a, b):
    assert a.meta == b.meta and a.names == b.names and a.calls == b.calls and a.threads == b.threads
    for k in ("cat", "name", "thread", "ts", "dur", "call", "correlation", "sequence"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    assert (a.events_seen, a.shapes) == (b.events_seen, b.shapes)


ODD = [  # events the reference keeps or skips by its rules; the typed route must hand them to the same rules
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 1, "dur": True, "args": MM},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 1, "ts": 2, "dur": 1},  # noqa: F601
    5, "text", None, [1, 2],
    {"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 7, "tid": 1, "ts": 0, "dur": 9,
     "args": {"Python id": 3}},
    {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1520): _call_impl", "pid": 7,
     "tid": 1, "ts": 0, "dur": 9, "args": {"Python id": 4}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7.0, "tid": 1, "ts": 3, "dur": 1, "args": MM},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 3, "dur": 1, "args": {"correlation": 1.5}},
    {"ph": "X", "cat": 3, "name": "aten::mm", "pid": 7, "tid": 1, "ts": 3, "dur": 1},
]


def _odd_trace(path: Path, pretty: bool) -> Path:
    events = ODD * 3 + json.loads(ranks(path.parent, 1)[0].read_text())["traceEvents"]
    # duplicate keys and a repeated event, as text (a dict cannot hold them)
    dup = '{"ph": "X", "cat": "cpu_op", "name": "aten::relu", "name": "aten::mm", "pid": 7, "tid": 1, ' \
          '"ts": 9, "dur": 1, "args": {"Input Dims": [[1]], "Input Dims": [[64, 128], [128, 32]]}}'
    body = ",\n".join([json.dumps(e, indent=2 if pretty else None) for e in events] + [dup, dup])
    path.write_text('{"schemaVersion": 1, "deviceProperties": [{"id": 0}],\n "traceEvents": [\n' + body +
                    '\n], "traceName": "x", "distributedInfo": {"rank": 0}}')
    return path


@pytest.mark.parametrize("pretty", [False, True])
def test_every_parser_gives_the_reference_events(tmp_path, pretty):
    """msgspec (typed regions), stdlib (prefiltered regions) and the reference scanner: identical columns, tables
    and counts on a trace with odd events, repeated events and duplicate keys; and on its gzip."""
    p = _odd_trace(tmp_path / "odd.json", pretty)
    gz = tmp_path / "odd.json.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    ref = read_events(p, "reference")
    assert ref.events_seen == 3 * len(ODD) + 9 + 2 and len(ref) > 0
    for path in (p, gz):
        for parser in PARSERS:
            _same(read_events(path, parser), ref)


@pytest.mark.parametrize("region", [700, 4096])
def test_small_regions_decoded_in_place_give_the_reference_events(tmp_path, monkeypatch, region):
    """Regions of a few events: hundreds of buffer refills, each region decoded inside the reader's buffer (its
    neighbouring bytes set to brackets and put back), cuts tried inside events (a '}' in a string or in the
    arguments); the chunked route itself (no fallback: _read_chunked is called directly), as the reference."""
    from roofline.frontends.trace import chunked
    from roofline.frontends.trace.events import _read_chunked

    one = _odd_trace(tmp_path / "one.json", pretty=False).read_text()
    head, _, rest = one.partition('"traceEvents": [\n')
    body, _, tail = rest.rpartition("\n]")
    p = tmp_path / "odd.json"
    p.write_text(head + '"traceEvents": [\n' + ",\n".join([body] * 30) + "\n]" + tail)  # 30 copies of the odd events
    text = p.read_text()
    assert text.count("}") > 1000 and len(text) > 20 * region  # many regions, many places to cut
    ref = read_events(p, "reference")
    monkeypatch.setattr(chunked, "REGION", region)
    monkeypatch.setattr(chunked, "MAX_CUTS", 64)  # the args' inner '}' are cut candidates too
    calls = []
    real = chunked._Typed.region_in
    monkeypatch.setattr(chunked._Typed, "region_in", lambda self, *a: calls.append(a[1:]) or real(self, *a))
    for decoder in ("msgspec", "stdlib"):
        _same(_read_chunked(p, "odd.json", decoder), ref)
    assert len(calls) > 20  # the msgspec route decoded most regions where they lie
    assert p.read_text() == text  # the file is only read


def test_recorded_trace_all_parsers(tmp_path):
    from torch.profiler import ProfilerActivity, profile

    net, x = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU()), torch.randn(4, 32)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
        net(x).sum().backward()
    p = tmp_path / "t.json"
    prof.export_chrome_trace(str(p))
    ref = read_events(p, "reference")
    for parser in PARSERS:
        _same(read_events(p, parser), ref)


# -- the cross-rank view, by hand ------------------------------------------------------------------------------
def test_exposed_communication_by_hand(tmp_path):
    """Rank 0: mm 10..110 us, 10 us idle, its all_reduce 120..210 us (90 us) with an aten::add 150..170 us
    inside: 20 us of the communication overlapped by compute, 70 us exposed.  Rank 1: mm 10..130 us, its
    all_reduce 130..210 us (80 us), all exposed."""
    add = _x("cpu_op", "aten::add", 150.0, 20.0, **{"Input type": ["float", "float", "Scalar"],
                                                    "Input Dims": [[64], [64], []], "Concrete Inputs": ["", "", "1"]})
    r0 = rank_trace(tmp_path / "rank0.json", 0, 2, [100.0], [10.0], [210.0], extra=[add])
    r1 = rank_trace(tmp_path / "rank1.json", 1, 2, [120.0], [0.0], [210.0])
    view = read_traces([r0, r1])
    s0, s1 = view.ranks[0].steps[0], view.ranks[1].steps[0]
    assert s0.compute == pytest.approx(120e-6)  # mm 100 + add 20
    assert s0.comm_exposed == pytest.approx(70e-6) and s0.comm_overlapped == pytest.approx(20e-6)  # 90 - 20
    assert s0.idle == pytest.approx((1000 - 120 - 70) * 1e-6)  # the step's 1000 us less everything busy
    assert s1.comm_exposed == pytest.approx(80e-6) and s1.compute == pytest.approx(120e-6)
    (c,) = view.collectives
    assert c.waits == pytest.approx((10e-6, 0.0)) and c.last_rank == 1  # rank 0 in it 90 us, rank 1 80 us


def test_straggler_with_slower_gemms(tmp_path):
    """8 ranks; rank 5's GEMMs take 30% longer (130 us against 100): rank 5 is the straggler, its cause the
    slower ops (mm at 1.30x the median rank's time per call, same FLOPs and bytes), and it arrives last."""
    view = read_traces(ranks(tmp_path, 8, slow=5))
    (s,) = view.stragglers
    assert s.rank == 5 and s.cause == "slower ops"
    assert s.slow_ops[0].name == "mm" and s.slow_ops[0].ratio == pytest.approx(1.3)
    assert s.slower_ops_seconds == pytest.approx(3 * 30e-6)  # 3 steps x 30 us
    assert {c.last_rank for c in view.collectives} == {5}
    assert "rank 5 is a straggler" in s.line() and "mm 1.30x" in s.line()


def test_straggler_idle_before_the_all_reduce(tmp_path):
    view = read_traces(ranks(tmp_path, 4, idle_rank=2))
    (s,) = view.stragglers
    assert s.rank == 2 and s.cause == "idle" and s.extra_idle_seconds == pytest.approx(3 * 60e-6)


def test_slowest_straggler_and_cause_agree_with_the_table(tmp_path):
    """Issue 51, defects 1 and 3.  4 ranks, 3 steps; per step every rank runs mm 10..110 us; rank 2 runs a second
    mm 110..210 (extra work); rank 0 idles 40 us before the all-reduce and waits 80 us after it (a host blocked
    in a sync: its steps last 1080 us, the others' 1000).  Arrivals 150 (rank 0), 110 (1, 3), 210 (rank 2); the
    all-reduce ends at 10 + 200 + 50 = 260 on every rank, so it lasts 110, 150, 50, 150 us: rank 2 came last,
    the others waited 60, 100, 100 us, and rank 2 alone delayed it by the shortest of those, 60 us a step.
    The slowest rank is the table's longest step time, rank 0 (3 x 1080 us); the straggler is rank 2 (it caused
    3 x 60 = 180 us of waiting), its cause the extra work: 3 more mm calls, 300 us, which is its compute column's
    excess over the median rank's.  The old rules named rank 2 slowest (most op time outside collectives) and
    rank 0 a straggler by idle (its own time 970 us a step against the median's 900)."""
    view = read_traces(ranks(tmp_path, 4, extra={2: 100.0}, idle={0: 40.0}, tail={0: 80.0}))
    totals = {t.key: t for t in view.totals}
    assert view.slowest_rank == max(view.totals, key=lambda t: t.seconds).key == 0
    assert totals[0].seconds == pytest.approx(3 * 1080e-6) and totals[1].seconds == pytest.approx(3 * 1000e-6)
    delays = {d.rank: d for d in view.delays}
    assert delays[2].caused == pytest.approx(3 * 60e-6) and delays[2].last == 3
    assert all(delays[r].caused == 0 and delays[r].last == 0 for r in (0, 1, 3))
    assert delays[0].waited == pytest.approx(3 * 60e-6) and delays[1].waited == pytest.approx(3 * 100e-6)
    (s,) = view.stragglers
    assert s.rank == max(view.delays, key=lambda d: d.caused).rank == 2
    assert s.caused_seconds == pytest.approx(3 * 60e-6) and s.cause == "extra work"
    assert s.extra_ops == (("mm", 3, pytest.approx(300e-6)),)
    assert s.extra_work_seconds == pytest.approx(totals[2].compute - totals[s.median_rank].compute)
    for c in view.collectives:
        assert c.last_rank == 2 and c.caused == pytest.approx(60e-6)
        assert c.waits == pytest.approx((60e-6, 100e-6, 0.0, 100e-6))
    assert "slowest: rank 0" in view.headline() and "straggler: rank 2" in view.headline()


def test_no_false_straggler_when_a_rank_only_waits(tmp_path):
    """4 ranks with the same work; rank 0 waits 200 us after each all-reduce (its steps 1200 us, its idle 200 us
    more than any other rank's).  Every rank arrives at 110 us: no one delays anyone (each delay caused is 0), so
    no straggler; rank 0 is the slowest (the longest step time), nothing more."""
    view = read_traces(ranks(tmp_path, 4, tail={0: 200.0}))
    assert view.stragglers == ()
    assert all(d.caused == 0 for d in view.delays)
    assert view.slowest_rank == 0 and view.totals[0].idle - view.totals[1].idle == pytest.approx(3 * 200e-6)


def test_a_straggler_late_before_its_trace_has_no_cause_in_it(tmp_path):
    """2 ranks, the same work (mm 10..110 us a step); rank 0's all-reduce lasts 50 us, rank 1's 150 us: rank 1
    waited 100 us a step for rank 0, which came late with nothing in its trace to show for it (its profile
    started late, or its clock is off).  Rank 0 is the straggler (3 x 100 us caused, against 5% of 300 us of
    work); no slower op, no extra work, and before the all-reduce both idle 10 us a step (0..10): the cause is
    outside the trace.  The 100 us more idle rank 0 has after its all-reduce (step 1000 us, busy 150) is not
    lateness and is not counted."""
    files = ranks(tmp_path, 2)  # the all-reduce 110..160 us on both
    doc = json.loads(files[1].read_text())
    for e in doc["traceEvents"]:
        if e["name"] == "gloo:all_reduce":
            e["dur"] += 100.0  # rank 1's, to 260 us: it waited there
    files[1].write_text(json.dumps(doc))
    view = read_traces(files)
    (s,) = view.stragglers
    assert s.rank == 0 and s.median_rank == 1 and s.caused_seconds == pytest.approx(3 * 100e-6)
    assert s.cause == OUTSIDE and s.extra_idle_seconds == pytest.approx(0.0, abs=1e-12)
    assert view.ranks[0].arrival_idle == pytest.approx((10e-6,) * 3)
    assert view.totals[0].idle - view.totals[1].idle == pytest.approx(3 * 100e-6)


def test_collectives_lined_up_by_group_and_sequence_number(tmp_path):
    """record_param_comms with a process group ("7") and a sequence number (Seq 1, 2, 3, one per step); rank 1's
    trace lacks its first collective (Seq 1).  Lined up by order, rank 1's first (Seq 2, step 4) would meet the
    others' first (Seq 1, step 3); by sequence number, Seq 2 and 3 line up on all three ranks and Seq 1, which
    rank 1's trace does not hold, is not claimed.  Rank 2's GEMMs are 30% slower: it came last to both, 30 us
    after the others."""
    files = ranks(tmp_path, 3, slow=2, group="7")
    doc = json.loads(files[1].read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("args", {}).get("Seq") != 1]
    files[1].write_text(json.dumps(doc))
    view = read_traces(files)
    assert [(c.group, c.key, c.by_seq, c.step) for c in view.collectives] == [("7", 2, True, 4), ("7", 3, True, 5)]
    for c in view.collectives:
        assert c.last_rank == 2 and c.waits == pytest.approx((30e-6, 30e-6, 0.0)) and c.caused == pytest.approx(30e-6)
    assert view.stragglers[0].rank == 2 and view.stragglers[0].cause == "slower ops"


def test_run_time_per_step_is_a_median_with_its_spread(tmp_path):
    """50 steps; rank 1's k-th step lasts 1000 + 2k us (k = 0..49: it waits longer and longer after the
    all-reduce), the other rank's 1000 us: per step the run takes the longest rank's time, 1000 + 2k us.  Over
    the 50 steps (linear interpolation, as numpy.percentile): q1 at position 0.25 x 49 = 12.25, 1024.5 us; the
    median at 24.5, 1049 us; q3 at 36.75, 1073.5 us.  50 steps, not runs."""
    files = ranks(tmp_path, 2, steps=50)
    doc = json.loads(files[1].read_text())
    for e in doc["traceEvents"]:
        if e["name"].startswith("ProfilerStep#"):
            e["dur"] += 2.0 * (int(e["name"].split("#")[1]) - 3)
    files[1].write_text(json.dumps(doc))
    view = read_traces(files)
    t = view.step_time
    assert t.repeats == 50 and len(view.steps) == 50
    assert (t.low, t.median, t.high) == pytest.approx((1024.5e-6, 1049e-6, 1073.5e-6))
    assert view.slowest_rank == 1
    assert "over 50 steps" in view.headline() and "runs" not in view.headline()


# -- bad input: one line, exit 2, nothing written -------------------------------------------------------------
def _cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(["trace", *map(str, argv), "--device", "xeon-8480"])
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line(err: str, *parts: str) -> None:
    assert err.startswith("roofline: error: ") and err.count("\n") == 1, err
    for p in parts:
        assert p in err, err


def test_bad_input_one_line(tmp_path, capsys):
    files = ranks(tmp_path, 2)
    out = tmp_path / "out.json"
    rc, _, err = _cli(capsys, tmp_path / "nothing*.json", "--json", out)
    assert rc == 2 and not out.exists()
    _one_line(err, "no trace file matches")
    rc, _, err = _cli(capsys, tmp_path / "rank*.json", "--jobs", "0")
    _one_line(err, "--jobs 0")
    odd = rank_trace(tmp_path / "other.json", 1, 4, [100.0], [0.0], [200.0])
    rc, _, err = _cli(capsys, files[0], odd, "--json", out)
    assert rc == 2 and not out.exists()
    _one_line(err, "world size", "rank 0", "says 2", "rank 1", "says 4")


def test_corrupt_rank_named_or_skipped(tmp_path, capsys):
    files = ranks(tmp_path, 3)
    files[1].write_text(files[1].read_text()[:200])
    out = tmp_path / "out.json"
    rc, _, err = _cli(capsys, tmp_path / "rank*.json", "--json", out)
    assert rc == 2 and not out.exists()
    _one_line(err, "rank 1", "rank1.json", "truncated", "--skip-bad-ranks")
    rc, text, _ = _cli(capsys, tmp_path / "rank*.json", "--json", out, "--skip-bad-ranks", "--ranks",
                       tmp_path / "r.csv")
    assert rc == 0 and out.exists() and "went on without 1 bad rank" in text
    assert {row.split(",")[0] for row in (tmp_path / "r.csv").read_text().splitlines()[1:]} == {"0", "2"}


def test_jobs_two_equals_jobs_one(tmp_path):
    files = ranks(tmp_path, 4, slow=1)
    assert read_traces(files, jobs=2) == read_traces(files, jobs=1)


def _same_workload(a, b):
    assert a.tables == b.tables and a.trace == b.trace and a.measured == b.measured and len(a) == len(b) > 0
    for k in a.columns:
        assert np.array_equal(a.columns[k], b.columns[k], equal_nan=True), k


def _reads_counted(monkeypatch):
    import roofline.frontends.trace.ranks as rk

    seen: list[str] = []
    real = rk.read_events
    monkeypatch.setattr(rk, "read_events", lambda path, parser="auto": seen.append(str(path)) or real(path, parser))
    return seen


def test_no_rank_is_read_twice(tmp_path, monkeypatch):
    """--jobs 1 with the slowest rank's Workload: 6 ranks, 6 reads (the slowest's Workload is the one kept from
    its read), and that Workload equals the rank's own file read alone (read_trace)."""
    from roofline.frontends.trace import read_trace

    files = ranks(tmp_path, 6, slow=1, tail={4: 40.0})
    seen = _reads_counted(monkeypatch)
    view, work = read_traces(files, with_workload=True)
    assert sorted(seen) == sorted(map(str, files))  # each file once
    assert view.slowest_rank == 4  # its steps 1040 us against 1000: the longest step time
    assert [s.rank for s in view.stragglers] == [1]  # its GEMMs 30% slower: the others wait for it
    _same_workload(work, read_trace(files[4]))


def test_pool_workers_return_the_slowest_workload(monkeypatch):
    """A pool worker (_pool_task) returns a rank's Workload only when it beats every rank that worker read
    before; the slowest of all always comes back.  Two workers' states, ranks dealt to them in turns; step
    seconds made up: ranks 0..5 have 3, 1, 4, 1, 5, 5 (ranks 4 and 5 tie: the first, rank 4, is the slowest)."""
    import roofline.frontends.trace.ranks as rk
    from roofline.frontends.trace.ranksummary import Breakdown, RankSummary

    work = [3.0, 1.0, 4.0, 1.0, 5.0, 5.0]
    summaries = [RankSummary(i, f"r{i}", None, "cpu", 0, 0.0, 0.0, 0.0, 0, (Breakdown(0, w, w, 0, 0, 0, 0),), (),
                             ()) for i, w in enumerate(work)]
    monkeypatch.setattr(rk, "_read_guarded", lambda path, index, parser: (summaries[index], f"workload {index}"))
    workers = [rk._Slowest(), rk._Slowest()]
    driver, returned = rk._Slowest(), []
    for i in range(len(work)):
        monkeypatch.setattr(rk, "_WORKER", workers[i % 2])
        got, w = rk._pool_task(f"r{i}", i, "auto")
        driver.offer(got, w, i)  # what _on_processes does with each result
        returned += [i] if w is not None else []
    # worker 0 reads ranks 0, 2, 4 (3 < 4 < 5: each returned); worker 1 reads 1, 3, 5 (1; then 1 does not beat
    # it; then 5)
    assert returned == [0, 1, 2, 4, 5]
    assert driver.of(4) == "workload 4" and driver.of(5) is None
    assert workers[0].work is None and workers[1].work is None  # a worker keeps no Workload


def test_every_engine_keeps_the_same_slowest_workload(tmp_path):
    files = ranks(tmp_path, 4, tail={2: 30.0})
    view1, work1 = read_traces(files, with_workload=True)
    view2, work2 = read_traces(files, jobs=2, with_workload=True)
    assert view1 == view2 and view1.slowest_rank == 2  # its steps 1030 us against 1000
    _same_workload(work1, work2)


# -- Dask -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (the dask extra)")
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        c = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        yield c
        c.close()


def test_dask_equals_jobs_one_and_the_driver_opens_no_trace(tmp_path, cluster):
    """8 ranks on two worker processes: the same view as --jobs 1.  The driver's audit hook (sys.addaudithook
    sees every open() in this process) records no open of a trace file: the workers read them."""
    files = ranks(tmp_path, 8, slow=3)
    want = read_traces(files, jobs=1)
    opened: list[str] = []
    watched = {str(f) for f in files}
    sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" and args and
                     str(args[0]) in watched else None)
    got, work = read_traces([str(f) for f in files], dask=cluster.scheduler_address, with_workload=True)
    assert got == want and not opened
    assert got.stragglers[0].rank == 3
    _, want_work = read_traces(files, jobs=1, with_workload=True)
    _same_workload(work, want_work)  # the slowest rank's, kept on the worker that read it


@pytest.mark.skipif(not os.environ.get("ROOFLINE_SLOW_TESTS"),
                    reason="kills Dask workers and waits for their restarts (about 100 s here): ROOFLINE_SLOW_TESTS=1")
def test_dask_worker_killed_names_the_rank(tmp_path, cluster, capsys):
    """A worker plugin kills its worker process when rank 2's task starts: Dask retries it on a fresh worker
    (allowed-failures 1), then gives up; the rank is named in one line, exit 2, nothing written."""
    from distributed import Client, WorkerPlugin

    class KillOn(WorkerPlugin):
        name = "kill-rank-2"

        def transition(self, key, start, finish, **kwargs):
            if finish == "executing" and key == "roofline-rank-2":
                os._exit(1)

    ranks(tmp_path, 4)
    out = tmp_path / "out.json"
    with Client(cluster.scheduler_address) as client:
        client.register_plugin(KillOn())
        try:
            rc, _, err = _cli(capsys, tmp_path / "rank*.json", "--dask", cluster.scheduler_address, "--json", out)
        finally:
            client.unregister_worker_plugin("kill-rank-2")
    assert rc == 2 and not out.exists()
    _one_line(err, "rank 2", "rank2.json", "after its retries")


def test_dask_address_that_does_not_answer(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed", reason="dask.distributed is not installed (the dask extra)")
    import socket

    import roofline.frontends.trace.ranks as rk

    monkeypatch.setattr(rk, "CONNECT_TIMEOUT_S", 1.0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: nothing answers there
        ranks(tmp_path, 2)
        rc, _, err = _cli(capsys, tmp_path / "rank*.json", "--dask", f"tcp://127.0.0.1:{port}")
    assert rc == 2
    # the raw probe (issue 53) finds nothing listening at once: one line naming the address
    _one_line(err, f"--dask 'tcp://127.0.0.1:{port}': cannot connect")


def test_parents_at_once_equal_the_stack_walk():
    """nesting.parents (binary lifting over running maxima of ends, all events at once) against the walk it
    replaces (a stack per thread, events popped once a later start is past their end), on random intervals:
    nested, partly overlapping, equal starts, ends within eps of a start, three threads, some events left out;
    taken a few events at a time or all at once."""
    from roofline.frontends.trace.nesting import parents

    def stack_walk(thread, start, end, walk, eps):
        stacks, out = {}, []
        for i in walk.tolist():
            st = stacks.setdefault(thread[i], [])
            while st and end[st[-1]] <= start[i] + eps:
                st.pop()
            out.append(st[-1] if st else -1)
            st.append(i)
        return out

    rng = np.random.default_rng(34)
    for _ in range(200):
        n = int(rng.integers(0, 120))
        ts = np.round(rng.uniform(0, 100, n), int(rng.integers(0, 3)))
        dur = np.round(rng.exponential(10, n), int(rng.integers(0, 3)))
        th = rng.integers(0, 3, n).astype(np.int32)
        walk = np.lexsort((-dur, ts))
        walk = walk[rng.random(n) < 0.8]
        want = stack_walk(th.tolist(), ts.tolist(), (ts + dur).tolist(), walk, 1e-3)
        for chunk in (1, 3, 16, 1 << 16):  # chunks carry the events still open into the next: the same parents
            assert parents(th, ts, ts + dur, walk, 1e-3, chunk=chunk).tolist() == want


def test_straggler_rank_1_at_1_30x_is_charged_the_waits(tmp_path):
    """Issue 51 accept, planted.  4 ranks, 2 steps; rank 1's mm takes 130 us against 100 (1.30x).  Per step every
    rank starts mm at +10: ranks 0, 2, 3 arrive at the all-reduce at 110 us, rank 1 at 140; it ends at
    10 + 130 + 50 = 190 on all.  Ranks 0, 2, 3 wait 30 us a step (60 us over the 2 steps), rank 1 none; the wait
    is charged to the rank waited for: rank 1 caused 30 us a step (the shortest of the others' waits), 60 us in
    all, and no other rank caused any.  Every rank's ProfilerStep lasts 1000 us, so step times tie at 2 ms: the
    slowest (the first of them) is named with the tie; the headline's straggler, its cause and its 60 us agree
    with the table's 'caused' column."""
    from roofline.render.ranks import view_lines

    view = read_traces(ranks(tmp_path, 4, slow=1, steps=2))
    (s,) = view.stragglers
    assert s.rank == 1 and s.cause == "slower ops" and s.slow_ops[0].ratio == pytest.approx(1.3)
    assert s.caused_seconds == pytest.approx(2 * 30e-6) and s.last == 2
    delays = {d.rank: d for d in view.delays}
    assert delays[1].caused == pytest.approx(60e-6) and delays[1].waited == 0
    for r in (0, 2, 3):
        assert delays[r].caused == 0 and delays[r].waited == pytest.approx(60e-6)
    assert max(view.delays, key=lambda d: d.caused).rank == s.rank
    assert view.slowest_rank == max(view.totals, key=lambda t: t.seconds).key == 0
    assert all(t.seconds == pytest.approx(2 * 1000e-6) for t in view.totals)
    head = view.headline()
    assert "slowest: rank 0 (longest step time, 2 ms; tied with 3 other rank(s))" in head
    assert "straggler: rank 1 (slower ops; the others waited 60 µs)" in head
    row = next(x for x in view_lines(view, width=200) if x.lstrip().startswith("1 "))
    assert row.split()[-2:] == ["0.060", "straggler"]  # its 'caused' cell, 0.060 ms


def test_no_straggler_when_every_rank_runs_the_same_work(tmp_path):
    """4 ranks, the same work, no idle: every rank arrives at 110 us, no one waits, no straggler."""
    view = read_traces(ranks(tmp_path, 4))
    assert view.stragglers == () and all(d.caused == 0 and d.waited == 0 for d in view.delays)
    assert "; no straggler" in view.headline()


def test_the_headline_bound_label_matches_the_table_over_ranks(tmp_path):
    """Issue 51, defect 2, over ranks: the shown (slowest) rank's headline names the same bound as its table's
    one row (the group's bound is the binding roof's kind, tests/test_trace.py's single-trace test)."""
    from roofline.frontends.trace import from_trace
    from roofline.render.terminal import summary_lines
    from roofline.words.summary import binding_roof, summarize

    a = from_trace(ranks(tmp_path, 4, extra={2: 100.0}, idle={0: 40.0}, tail={0: 80.0}), "xeon-8480")
    (row,) = a.by("group")
    kind = binding_roof(a).kind
    assert row.bound == kind
    head = next(x for x in summary_lines(summarize(a)) if "(roofline bound)" in x)
    assert f"{kind}-bound on" in head
