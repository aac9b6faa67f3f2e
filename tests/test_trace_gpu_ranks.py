"""The cross-rank view on GPU traces: synthetic ranks in the format PyTorch's Kineto writes, figures by hand.

Each rank's trace is what ``torch.profiler`` (Kineto) exports for a CUDA + NCCL run: ``cpu_op`` events on the
Python thread (``aten::mm`` with its recorded shapes, ``record_param_comms`` inside ``c10d::allreduce_`` with
the collective's message), ``cuda_runtime`` launches carrying ``args.correlation``, and on the GPU rows
(``pid`` the device, ``tid`` the stream) ``kernel`` events (a GEMM, ``ncclDevKernel_AllReduce_...``) and a
``gpu_memcpy``, each with the correlation id of its launch; ``ProfilerStep#N`` as a ``user_annotation`` (and
as Kineto's ``gpu_user_annotation`` copy on the GPU row, which the reader does not keep), ``ac2g`` flow
events, ``distributedInfo`` with the rank and world size.

Per step (1000 us from ``t0``), on every rank: the GEMM kernel runs from t0+100 for G us on stream 7 (G = 200,
or 260 on the straggler: 30% slower), the NCCL all-reduce kernel on stream 20 from 50 us before the GEMM ends
to t0+650 (every rank leaves the all-reduce together: the last to arrive sets its end), then a 20 us
host-to-device memcpy at t0+660.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from roofline.frontends.trace import read_traces  # noqa: E402
from roofline.render.ranks import render_csv, render_json  # noqa: E402

PID, GPU = 4242, 0
MM = {"Input type": ["float", "float"], "Input Dims": [[256, 512], [512, 256]],
      "Input Strides": [[512, 1], [256, 1]], "Concrete Inputs": ["", ""]}
COMMS = {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 65536, "Out msg nelems": 65536,
         "Group size": 4, "Process Group Name": "0", "Process Group Description": "default_pg", "Rank": 0}
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _ev(cat, name, ts, dur, pid=PID, tid=PID, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def gpu_rank(path: Path, rank: int, world: int, gemm_us: float, steps: int = 2, nccl: str = NCCL,
             seq: bool = False) -> Path:
    """One rank's trace (the module docstring); ``nccl``: the NCCL kernel's name; ``seq``: record_param_comms
    carries the collective's sequence number (``Seq``, torch >= 2.5), 1 in the first step."""
    events: list[dict] = [{"name": "process_name", "ph": "M", "ts": 0, "pid": GPU, "tid": 0,
                           "args": {"name": "GPU 0"}}]
    ext = 0
    for n in range(steps):
        t0 = 1000.0 * n
        corr = 100 * n
        end_gemm = t0 + 100 + gemm_us
        events += [
            _ev("user_annotation", f"ProfilerStep#{n + 5}", t0, 990.0, **{"External id": (ext := ext + 1)}),
            _ev("gpu_user_annotation", f"ProfilerStep#{n + 5}", t0 + 100, 580.0, pid=GPU, tid=7),
            _ev("cpu_op", "aten::mm", t0 + 10, 20.0, **{"External id": (ext := ext + 1), **MM}),
            _ev("cuda_runtime", "cudaLaunchKernel", t0 + 15, 5.0, correlation=corr + 1, cbid=211),
            {"ph": "s", "id": corr + 1, "pid": PID, "tid": PID, "ts": t0 + 15, "cat": "ac2g", "name": "ac2g"},
            _ev("kernel", "ampere_sgemm_128x64_nn", t0 + 100, gemm_us, pid=GPU, tid=7, device=0, stream=7,
                correlation=corr + 1, grid=[32, 4, 1], block=[128, 1, 1]),
            {"ph": "f", "id": corr + 1, "pid": GPU, "tid": 7, "ts": t0 + 100, "cat": "ac2g", "name": "ac2g",
             "bp": "e"},
            _ev("cpu_op", "c10d::allreduce_", t0 + 35, 20.0, **{"External id": (ext := ext + 1)}),
            _ev("cpu_op", "record_param_comms", t0 + 40, 10.0, **{"External id": (ext := ext + 1),
                                                                  **COMMS, "Rank": rank,
                                                                  **({"Seq": n + 1} if seq else {})}),
            _ev("cuda_runtime", "cudaLaunchKernelExC", t0 + 42, 3.0, correlation=corr + 2, cbid=430),
            _ev("kernel", nccl, end_gemm - 50, t0 + 650 - (end_gemm - 50), pid=GPU, tid=20, device=0, stream=20,
                correlation=corr + 2),
            _ev("cuda_runtime", "cudaMemcpyAsync", t0 + 60, 4.0, correlation=corr + 3, cbid=41),
            _ev("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", t0 + 660, 20.0, pid=GPU, tid=7, device=0,
                stream=7, correlation=corr + 3, bytes=1 << 20),
        ]
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
           "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world}, "traceEvents": events,
           "traceName": str(path)}
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def view(tmp_path):
    files = [gpu_rank(tmp_path / f"rank{r}.json", r, 4, 260.0 if r == 2 else 200.0) for r in range(4)]
    return read_traces(files)


def test_gpu_step_breakdown_by_hand(view):
    """A normal rank's step: GEMM 100..300, all-reduce 250..650, memcpy 660..680 (us from t0).  The span runs
    from the first kernel to the last one's end: 680 - 100 = 580 us.  compute = 200; comm U compute = 100..650
    = 550, so exposed = 550 - 200 = 350 and overlapped = |comm| - exposed = 400 - 350 = 50; memcpy = 20 (outside
    both); idle = 580 - 570 = 10 (650..660).  The straggler (GEMM 260 us: 100..360, all-reduce 310..650): compute
    260, exposed 550 - 260 = 290, overlapped 340 - 290 = 50, memcpy 20, idle 10."""
    normal, slow = view.ranks[0].steps[0], view.ranks[2].steps[0]
    assert view.ranks[0].device_type == "cuda" and view.steps == (5, 6)
    want = {"seconds": 580, "compute": 200, "comm_exposed": 350, "comm_overlapped": 50, "memcpy": 20, "idle": 10}
    for field, us in want.items():
        assert getattr(normal, field) == pytest.approx(us * 1e-6), field
    want_slow = {**want, "compute": 260, "comm_exposed": 290}
    for field, us in want_slow.items():
        assert getattr(slow, field) == pytest.approx(us * 1e-6), field
    totals = {t.key: t for t in view.totals}
    assert totals[2].compute == pytest.approx(2 * 260e-6) and totals[0].comm_exposed == pytest.approx(2 * 350e-6)


def test_nccl_kernels_are_the_collectives_and_the_last_to_arrive(view):
    """Each step's all-reduce: 400 us on the normal ranks, 340 us on rank 2 (it arrived last, 60 us after the
    others, who waited): waits 60, 60, 0, 60 us."""
    assert [(c.step, c.name) for c in view.collectives] == [(5, "AllReduce"), (6, "AllReduce")]
    for c in view.collectives:
        assert c.last_rank == 2
        assert c.waits == pytest.approx((60e-6, 60e-6, 0.0, 60e-6))


@pytest.mark.parametrize("nccl", [NCCL, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
                                  "ncclAllReduceRingLLKernel_sum_f32(ncclColl)"])
def test_every_nccl_kernel_name_is_a_collective_with_its_group_and_sequence(tmp_path, nccl):
    """NCCL >= 2.19 (ncclDevKernel_*), 2.8..2.18 (ncclKernel_*) and older (ncclAllReduceRingLLKernel_*) kernel
    names: each is the step's all-reduce, its process group ("0") and sequence number (1, 2) taken from the
    record_param_comms its launch ran inside; the same waits as above (60 us on each normal rank, rank 2 last),
    and rank 2 caused 60 us a step."""
    files = [gpu_rank(tmp_path / f"rank{r}.json", r, 4, 260.0 if r == 2 else 200.0, nccl=nccl, seq=True)
             for r in range(4)]
    view = read_traces(files)
    assert [(c.step, c.name, c.group, c.key, c.by_seq) for c in view.collectives] == [
        (5, "AllReduce", "0", 1, True), (6, "AllReduce", "0", 2, True)]
    for c in view.collectives:
        assert c.last_rank == 2 and c.waits == pytest.approx((60e-6, 60e-6, 0.0, 60e-6))
    assert view.delays[2].caused == pytest.approx(2 * 60e-6) and view.stragglers[0].rank == 2
    assert view.totals[0].comm_exposed == pytest.approx(2 * 350e-6)  # the NCCL kernel is communication


def test_gpu_straggler_is_named_with_slower_gemms(view):
    """Own time (span less exposed comm): 580 - 350 = 230 us a step on a normal rank, 580 - 290 = 290 on rank 2;
    60 us over the median rank's, against 5% of its work (compute + memcpy = 220 us: 11 us).  The GEMM's time
    is its kernel's (joined by correlation id): 260 against 200 us per call, 1.30x; 2 steps x 60 us slower."""
    (s,) = view.stragglers
    assert s.rank == 2 and s.cause == "slower ops"
    assert s.slow_ops[0].name == "mm" and s.slow_ops[0].ratio == pytest.approx(1.3)
    assert s.slower_ops_seconds == pytest.approx(2 * 60e-6)
    assert s.own_seconds - s.median_own_seconds == pytest.approx(2 * 60e-6)
    # the all-reduce became a collective op under the interconnect roof, timed by its NCCL kernel: 400 us
    ops = {o.name: o for o in view.ranks[0].ops}
    assert ops["allreduce"].kind == "collective" and ops["allreduce"].seconds == pytest.approx(2 * 400e-6)


def test_saved_json_and_csv_name_steps_and_ranks(view):
    """The saved view (roofline.ranks/2): a step's breakdown keyed "step", a rank's totals keyed "rank"."""
    doc = json.loads(render_json(view))
    assert doc["schema"] == "roofline.ranks/2"
    step = doc["ranks"][2]["steps"][1]
    assert step["step"] == 6 and step["compute"] == pytest.approx(260e-6) and "key" not in step
    assert [t["rank"] for t in doc["totals"]] == [0, 1, 2, 3]
    rows = render_csv(view).splitlines()
    assert rows[0].startswith("rank,file,step,") and len(rows) == 1 + 4 * 2


def test_ranks_image_and_page(view, tmp_path):
    """--ranks out.png: the three charts as one PNG (its signature, a straggler named); the HTML page carries
    the text view, the heat map's values and the three figures."""
    from roofline.render.ranks import render

    png = render(view, str(tmp_path / "r.png"))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    page = render(view, str(tmp_path / "r.html")).decode()
    assert "rank 2 is a straggler" in page and page.count("Plotly.newPlot") == 3 and "texttemplate" in page


def test_gpu_headline_agrees_with_the_table(view):
    """GPU kernels: rank 2 (GEMM 1.30x) caused 60 us a step, 120 us over the 2 steps, the others none; the headline
    names it with that figure, and the slowest is the table's longest step time."""
    assert view.slowest_rank == max(view.totals, key=lambda t: t.seconds).key
    assert max(view.delays, key=lambda d: d.caused).rank == view.stragglers[0].rank == 2
    assert view.delays[2].caused == pytest.approx(2 * 60e-6)
    assert "straggler: rank 2 (slower ops; the others waited 120 µs)" in view.headline()
