"""Planted GPU traces for the trace analyses (tests/test_trace_analyses.py): Kineto's format, every time chosen
so that each analysis has an answer worked out by hand.

Per step (``t0`` = 1000 us x step, two steps ``ProfilerStep#1`` and ``#2`` of 990 us on the CPU thread):

======  =========================  ===========  ==============  ==================================
kernel  stream, start..end (us)    launch call  its cpu_op      why it is there
======  =========================  ===========  ==============  ==================================
A       7, t0+100 .. t0+300        t0+15, 5 us  aten::mm        the GEMM (the top kernel)
B       7, t0+300.02 .. t0+400.02  t0+25, 3 us  aten::mm (2)    a 0.02 us gap: kernel wait
C       7, t0+460 .. t0+500        t0+450, 5    aten::mm (3)    launched after B ended: host wait 59.98
D       7, t0+520 .. t0+550        t0+40, 3     aten::mm (4)    launched early, waits 20 us: other
M       7, t0+600 .. t0+620        t0+590, 4    (memcpy)        host wait 50 us; a memory kernel
N       20, t0+250 .. t0+450       t0+32, 3     c10d allreduce  the NCCL all-reduce (communication)
======  =========================  ===========  ==============  ==================================

and a ``cudaDeviceSynchronize`` on the CPU thread from t0+505 to t0+552 (it returns once D has ended).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PID, GPU = 4242, 0
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32"


def mm(m: int, k: int, n: int) -> dict[str, Any]:
    return {"Input type": ["float", "float"], "Input Dims": [[m, k], [k, n]], "Input Strides": [[k, 1], [n, 1]],
            "Concrete Inputs": ["", ""]}


COMMS = {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 65536, "Out msg nelems": 65536,
         "Group size": 1, "Process Group Name": "0"}


def ev(cat: str, name: str, ts: float, dur: float, pid: int = PID, tid: int = PID, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def kernel(name: str, ts: float, dur: float, corr: int, stream: int = 7, cat: str = "kernel") -> dict[str, Any]:
    return ev(cat, name, ts, dur, pid=GPU, tid=stream, device=0, stream=stream, correlation=corr)


def launch(ts: float, dur: float, corr: int, name: str = "cudaLaunchKernel") -> dict[str, Any]:
    return ev("cuda_runtime", name, ts, dur, correlation=corr)


def memory(ts: float, nbytes: int, total: int, device_type: int = 1) -> dict[str, Any]:
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID, "tid": PID, "ts": ts,
            "args": {"Total Reserved": 1 << 21, "Total Allocated": total, "Bytes": nbytes, "Addr": 94000,
                     "Device Type": device_type, "Device Id": 0 if device_type == 1 else -1}}


def step_events(n: int, gemm_us: float = 200.0, nccl: str = NCCL, gemm_m: int = 256) -> list[dict[str, Any]]:
    """Step ``n`` (1-based) of the module docstring's table; ``gemm_us``: kernel A's duration."""
    t0, c = 1000.0 * (n - 1), 100 * n
    return [
        ev("user_annotation", f"ProfilerStep#{n}", t0, 990.0),
        ev("cpu_op", "aten::mm", t0 + 10, 11.0, **mm(gemm_m, 512, 256)),
        launch(t0 + 15, 5.0, c + 1),
        kernel(GEMM, t0 + 100, gemm_us, c + 1),
        ev("cpu_op", "aten::mm", t0 + 22, 8.0, **mm(128, 128, 128)),
        launch(t0 + 25, 3.0, c + 2),
        kernel("elementwise_kernel_b", t0 + 300.02, 100.0, c + 2),
        ev("cpu_op", "c10d::allreduce_", t0 + 31, 6.0),
        ev("cpu_op", "record_param_comms", t0 + 31.5, 5.0, **COMMS),
        launch(t0 + 32, 3.0, c + 6, "cudaLaunchKernelExC"),
        kernel(nccl, t0 + 250, 200.0, c + 6, stream=20),
        ev("cpu_op", "aten::mm", t0 + 39, 5.0, **mm(64, 64, 64)),
        launch(t0 + 40, 3.0, c + 4),
        kernel("elementwise_kernel_d", t0 + 520, 30.0, c + 4),
        ev("cpu_op", "aten::mm", t0 + 445, 20.0, **mm(32, 32, 32)),
        launch(t0 + 450, 5.0, c + 3),
        kernel("elementwise_kernel_c", t0 + 460, 40.0, c + 3),
        ev("cuda_runtime", "cudaDeviceSynchronize", t0 + 505, 47.0),
        launch(t0 + 590, 4.0, c + 5, "cudaMemcpyAsync"),
        kernel("Memcpy HtoD (Pageable -> Device)", t0 + 600, 20.0, c + 5, cat="gpu_memcpy"),
    ]


def planted(path: Path, gemm_us: tuple[float, float] = (200.0, 200.0), memory_events: bool = True,
            links: bool = True, nccl: str = NCCL, gemm_m: int = 256) -> Path:
    """The two-step trace of the module docstring (kernel A of ``gemm_us`` per step), with the memory events
    of tests/test_trace_analyses.py's memory test; ``links=False`` drops every correlation id; ``nccl``: the
    all-reduce kernel's name; ``gemm_m``: the rows of A's mm (256 x 512 times 512 x 256 by default)."""
    events: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "ts": 0, "pid": GPU, "tid": 0,
                                     "args": {"name": "GPU 0"}}]
    for n, g in enumerate(gemm_us, start=1):
        events += step_events(n, g, nccl, gemm_m)
    if memory_events:
        events += [memory(5, 64, 64, device_type=0), memory(10, 1000, 1000), memory(20, 3000, 4000),
                   memory(300, -1000, 3000), memory(1010, 2000, 5000), memory(1500, -5000, 0)]
    if not links:
        for e in events:
            e.get("args", {}).pop("correlation", None)
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
           "traceEvents": events, "traceName": str(path)}
    path.write_text(json.dumps(doc))
    return path


def launch_bound(path: Path, kernels: int = 5) -> Path:
    """A trace whose stream drains before every launch: kernel i (10 us) runs at 100 + 30 i, launched at
    95 + 30 i (3 us): after the previous kernel ended at 80 + 30 i (host wait 20 us before each but the first)."""
    events = [ev("cpu_op", "aten::mm", 90.0, 30.0 * kernels, **mm(8, 8, 8))]
    for i in range(kernels):
        events += [launch(95 + 30 * i, 3.0, i + 1), kernel(f"tiny_{i}", 100 + 30 * i, 10.0, i + 1)]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path
