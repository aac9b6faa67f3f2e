"""A fake CUDA GPU for CI: torch.cuda's timing and launches replaced, so roofline's GPU code above them runs.

``install(kind)`` (a context manager) makes ``torch.cuda.is_available()`` true on a CPU-only torch and
stands in for what a GPU and its driver would do, nothing more:

* tensors on ``cuda`` are wrapper tensors (``device.type == "cuda"``) over meta tensors: every aten op on
  them runs on the meta device (shapes, dtypes, strides; no data, no memory) and is one kernel launch;
* a simulated clock: each launch costs the host :attr:`Model.launch` seconds, each kernel runs
  ``max(min_kernel, FLOPs / rate, bytes / bandwidth)`` on the device timeline (FLOPs from
  ``torch.utils.flop_counter``'s registry, bytes = every tensor argument read and every output written,
  L2 bandwidth for working sets within half of L2), scaled by an efficiency that grows with the work;
  ``torch.cuda.Event``, ``synchronize``, ``Stream`` and ``CUDAGraph`` (capture, replay) read and move it;
* device properties, ``mem_get_info`` and the capability of an H200 (or a B200: ``blackwell``);
* the profiler's CUDA side (CUPTI): the CPU profiler runs for real; each launch leaves a marker in it, which
  ``events()`` turns into the op's ``device_time_total`` and ``export_chrome_trace`` into a
  ``cuda_runtime`` launch and a ``kernel`` event joined by ``correlation``, as kineto writes them;
* the Triton FMA kernel's launch, when Triton is not installed;
* the host as the contention checks see it (``roofline.bench.contention.snapshot``): a quiet machine's, since
  the timings are on the simulated clock, which no other work on the host can disturb (a busy CI runner
  would otherwise make ``calibrate`` refuse the honest fake's fit; :attr:`Model.host_runnable` puts tasks
  in the run queue to check that refusal).

``kind`` picks an honest GPU or one that breaks one check (:data:`KINDS`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch

#: The fakes: an honest H200, and one violation per acceptance check.
from gpu_fake_kinds import KINDS  # noqa: E402  (light: gpu_acceptance checks --fake without importing torch)
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

MARK = "fakecuda::launch#"
WRITE_ONLY = frozenset({"copy_", "fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_", "exponential_"})
TB = 1e12


@dataclass
class Model:
    """The simulated GPU: rates at full efficiency (FLOP/s, bytes/s) and fixed costs (seconds).

    The honest figures are fractions of the catalog's H200 (datasheet) figures: bf16/fp16 989.4, fp8
    1978.9, tf32 494.7, fp64 matrix 67, fp32 and fp64 vector 67 and 34 TFLOP/s, HBM 4.8 TB/s.
    """

    matrix: dict[str, float] = field(default_factory=lambda: {
        "bf16": 0.8 * 989.4 * TB, "fp16": 0.8 * 989.4 * TB, "fp8": 0.75 * 1978.9 * TB, "tf32": 0.8 * 494.7 * TB,
        "fp64": 0.85 * 67 * TB, "fp32": 0.8 * 67 * TB})
    vector: dict[str, float] = field(default_factory=lambda: {"fp32": 0.9 * 67 * TB, "fp64": 0.9 * 34 * TB})
    hbm: float = 0.88 * 4.8 * TB
    host_runnable: int | None = None  # runnable tasks /proc/loadavg shows (None: a quiet host, no figure)
    l2: float = 10 * TB
    l2_bytes: int = 50 * 2**20
    memory_bytes: int = 150_754_820_096  # what an H200 reports (140.4 GiB)
    launch: float = 4.5e-6
    graph_launch: float = 8e-6
    graph_node: float = 0.3e-6
    min_kernel: float = 1.2e-6
    profiler_scale: float = 1.0  # device times the profiler reports / true ones
    trace_flops_mismatch: bool = False
    trace_unjoined: bool = False
    jitter: tuple[float, ...] = (1.0, 1.004, 1.011, 1.002, 1.007)  # per launch, cycled: a spread that is not 0
    graph_capture_fails: bool = False
    name: str = "NVIDIA H200"  # what torch.cuda.get_device_name says
    capability: tuple[int, int] = (9, 0)
    sms: int = 132


def blackwell() -> Model:
    """An honest B200 (compute capability 10.0, as torch names it 'NVIDIA B200'): the same fractions of the catalog's
    B200 datasheet figures as the honest H200's of its own -- bf16/fp16 2250, fp8 4500, tf32 1100, fp64 37 and fp32
    vector 75 TFLOP/s, HBM 7.7 TB/s -- and the HBM capacity the catalog records for it; 148 SMs.  The bench
    measures no fp4 or fp6 GEMM: the acceptance script checks those roofs are the catalog's, cited."""
    from roofline.catalog import get_device

    dev = get_device("b200")
    peak = {(c.unit, c.precision): c.flops for c in dev.compute}
    hbm = dev.main_memory
    m = peak[("matrix", "bf16")]
    return Model(matrix={"bf16": 0.8 * m, "fp16": 0.8 * m, "fp8": 0.75 * peak[("matrix", "fp8")],
                         "tf32": 0.8 * peak[("matrix", "tf32")], "fp64": 0.85 * peak[("matrix", "fp64")],
                         "fp32": 0.8 * peak[("vector", "fp32")]},
                 vector={"fp32": 0.9 * peak[("vector", "fp32")], "fp64": 0.9 * peak[("vector", "fp64")]},
                 hbm=0.88 * hbm.bandwidth, memory_bytes=int(hbm.capacity or 192 * 10**9), l2_bytes=126 * 2**20,
                 name="NVIDIA B200", capability=(10, 0), sms=148)


def model_for(kind: str) -> Model:
    m = Model()
    if kind == "blackwell":
        m = blackwell()
    elif kind == "roof-above-datasheet":
        m.matrix = {**m.matrix, "bf16": 1.25 * 989.4 * TB}
    elif kind == "roof-below-datasheet":
        m.matrix = {**m.matrix, "bf16": 0.5 * 989.4 * TB}
    elif kind == "op-faster-than-bound":
        m.profiler_scale = 1e-3  # kernel times in ns read as us
    elif kind == "trace-flops":
        m.trace_flops_mismatch = True
    elif kind == "unjoined-kernels":
        m.trace_unjoined = True
    elif kind != "honest":
        raise ValueError(f"unknown fake {kind!r}; one of {', '.join(KINDS)}")
    return m


def _efficiency(work: float, half: float) -> float:
    """Grows with the work: the bench's large kernels come closest to the rate, smaller ones less close."""
    return 0.98 * work / (work + half) if work > 0 else 1.0


class FakeCudaTensor(torch.Tensor):
    """A tensor that says it is on ``cuda:0``; its data is a meta tensor."""

    inner: torch.Tensor

    @staticmethod
    def __new__(cls, inner: torch.Tensor) -> FakeCudaTensor:
        # as FakeTensor does: the tensor is a meta tensor underneath (so no CUDA device guard is ever
        # needed), and ``device`` answers cuda:0 (prim.device is dispatched here)
        r = torch.Tensor._make_subclass(cls, inner, inner.requires_grad, dispatch_device=True)
        r.inner = inner
        return r

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        if func is torch.ops.prim.device.default:
            return torch.device("cuda", 0)
        assert GPU is not None, "a fake CUDA tensor outlived its fake GPU"
        return GPU.run(func, args, kwargs or {})

    def __repr__(self) -> str:  # type: ignore[override]
        return f"FakeCudaTensor({tuple(self.shape)}, {self.dtype})"


def _is_cuda(x: Any) -> bool:
    return (isinstance(x, torch.device) and x.type == "cuda") or (isinstance(x, str) and x.startswith("cuda"))


class FakeGPU:
    """The simulated device: a host clock, a device timeline, kernels, graphs being captured."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.host = 0.0  # seconds
        self.busy = 0.0  # the device timeline is free from here on
        self.capturing: list[float] | None = None
        self.recording = False  # a fake profiler is on: leave a marker per launch
        self.kernels: dict[int, tuple[str, float]] = {}  # correlation -> (kernel name, seconds)
        self.ids = itertools.count(1)
        self.jitter = itertools.cycle(model.jitter)

    # -- time
    def launch(self, seconds: float, name: str) -> None:
        seconds *= next(self.jitter)
        if self.capturing is not None:
            self.capturing.append(seconds)
            return
        self.host += self.model.launch
        start = max(self.host, self.busy)
        self.busy = start + seconds
        if self.recording:
            n = next(self.ids)
            self.kernels[n] = (name, seconds * self.model.profiler_scale)
            with torch.profiler.record_function(f"{MARK}{n}"):
                pass

    def now(self) -> float:
        return max(self.host, self.busy)

    def synchronize(self, *_: Any) -> None:
        self.host = self.now()

    def host_snapshot(self) -> Any:
        """What the contention checks read of the host: its wall and CPU clocks and nothing of the machine's
        load (no /proc figures: no cause can be found), or :attr:`Model.host_runnable` tasks in the run queue."""
        import time

        from roofline.bench.contention import Snapshot

        return Snapshot(time.perf_counter(), time.process_time(), runnable=self.model.host_runnable)

    # -- ops
    def run(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if func is torch.ops.aten._fused_sdp_choice.default:  # what a Hopper GPU picks: flash for half, else efficient
            from torch.nn.attention import SDPBackend

            half = args[0].dtype in (torch.float16, torch.bfloat16)
            return int(SDPBackend.FLASH_ATTENTION if half else SDPBackend.EFFICIENT_ATTENTION)
        if torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd"):
            with _Mode():  # the parts come back here (factories included), as each op on a real GPU
                got = func.decompose(*args, **kwargs)  # composite ops run as their parts
            if got is not NotImplemented:
                return got
        inners: dict[int, FakeCudaTensor] = {}

        def unwrap(x: Any) -> Any:
            if isinstance(x, FakeCudaTensor):
                inners[id(x.inner)] = x
                return x.inner
            return torch.device("meta") if _is_cuda(x) else x

        ins = tree_map(unwrap, args)
        kw = tree_map(unwrap, kwargs)
        to_cpu = kw.get("device") is not None and torch.device(kw["device"]).type == "cpu"
        if func is torch.ops.aten._local_scalar_dense.default:
            return 1  # a data-dependent read of a GPU value: the data is not here
        out = func(*ins, **kw)
        if to_cpu:  # a device-to-host copy: zeros of the shape (the values are not on this fake)
            return tree_map(lambda t: torch.zeros(t.shape, dtype=t.dtype) if isinstance(t, torch.Tensor) else t, out)
        self._account(func, ins, kw, out)

        def wrap(x: Any) -> Any:
            if isinstance(x, torch.Tensor) and x.device.type == "meta":
                same = inners.get(id(x))  # an in-place op returns its input
                return same if same is not None else FakeCudaTensor(x)
            return x

        return tree_map(wrap, out)

    def _account(self, func: Any, ins: Any, kw: Any, out: Any) -> None:
        schema = func._schema
        if any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns):
            return  # a view: no kernel
        name = func.overloadpacket.__name__
        if name in ("empty", "empty_strided", "empty_like", "detach", "lift_fresh", "set_", "resize_", "_unsafe_view"):
            return
        tensors: list[torch.Tensor] = []  # read: every tensor argument but the ones only written
        written_only = name in WRITE_ONLY
        for arg, value in zip(schema.arguments, [*ins, *[kw.get(a.name) for a in schema.arguments[len(ins):]]],
                              strict=False):
            if arg.alias_info is not None and arg.alias_info.is_write and (written_only or arg.kwarg_only):
                continue
            tree_map(lambda t: tensors.append(t) if isinstance(t, torch.Tensor) else None, value)
        outs: list[torch.Tensor] = []
        tree_map(lambda t: outs.append(t) if isinstance(t, torch.Tensor) else None, out)
        nbytes = float(sum(t.numel() * t.element_size() for t in {id(t): t for t in tensors}.values())
                       + sum(t.numel() * t.element_size() for t in outs))
        flops = self._flops(func, ins, kw, out)
        m = self.model
        bw = m.l2 if nbytes <= m.l2_bytes / 2 else m.hbm
        secs = nbytes / (bw * _efficiency(nbytes, 1e7))
        if flops:
            secs = max(secs, flops / (self._rate(func, tensors) * _efficiency(flops, 1e9)))
        self.launch(max(m.min_kernel, secs), name)

    def _flops(self, func: Any, ins: Any, kw: Any, out: Any) -> float:
        from torch.utils.flop_counter import flop_registry

        f = flop_registry.get(func.overloadpacket)
        if f is None:
            return 0.0
        try:
            return float(f(*ins, **kw, out_val=out))
        except Exception:
            return 0.0

    def _rate(self, func: Any, tensors: list[torch.Tensor]) -> float:
        dt = next((t.dtype for t in tensors if t.dtype.is_floating_point), torch.float32)
        m = self.model
        if dt in (torch.float8_e4m3fn, torch.float8_e5m2):
            return m.matrix["fp8"]
        if dt == torch.float64:
            return m.matrix["fp64"]
        if dt == torch.float32:
            tf32 = torch.backends.cuda.matmul.allow_tf32 or "scaled_dot_product" in str(func)
            return m.matrix["tf32" if tf32 else "fp32"]
        return m.matrix["bf16" if dt == torch.bfloat16 else "fp16"]


GPU: FakeGPU | None = None


class _Mode(TorchDispatchMode):
    """Sends every op that touches ``cuda`` (a device argument or a fake CUDA tensor) to the fake GPU."""

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        leaves: list[Any] = []
        tree_map(leaves.append, (args, kwargs))
        if func is torch.ops.prim.device.default and isinstance(args[0], FakeCudaTensor):
            return torch.device("cuda", 0)
        if GPU is not None and any(isinstance(x, FakeCudaTensor) or _is_cuda(x) for x in leaves):
            return GPU.run(func, args, kwargs)
        return func(*args, **kwargs)


class _Functions(TorchFunctionMode):
    """The Tensor methods whose Python bindings take a CUDA device guard (which a CPU-only torch refuses) go
    straight to their aten ops, which the dispatch mode above sends to the fake GPU."""

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is torch.Tensor.copy_ and isinstance(args[0], FakeCudaTensor):
            return torch.ops.aten.copy_.default(*args, **kwargs)
        if func is torch.tensor and _is_cuda(kwargs.get("device")):
            return _to(torch.tensor(*args, **{**kwargs, "device": "cpu"}), torch.device("cuda", 0),
                       kwargs.get("dtype") or torch.tensor(*args).dtype)
        if func is torch.Tensor.__getitem__ and isinstance(args[0], FakeCudaTensor):
            return _getitem(args[0], args[1])
        if func is torch.Tensor.cuda:
            return _to(args[0], torch.device("cuda", 0), args[0].dtype)
        if func is torch.Tensor.to:
            rest = [*args[1:], *kwargs.values()]
            dev = next((x for x in rest if _is_cuda(x)), None)
            dtype = next((x for x in rest if isinstance(x, torch.dtype)), args[0].dtype)
            if dev is not None:
                return _to(args[0], torch.device("cuda", 0), dtype)
        return func(*args, **kwargs)


def _getitem(t: FakeCudaTensor, index: Any) -> torch.Tensor:
    """Indexing (its binding takes a device guard too), done on the meta data: a view, or one gather kernel."""
    out = t.inner[tree_map(lambda x: x.inner if isinstance(x, FakeCudaTensor) else x, index)]
    if out.untyped_storage()._cdata != t.inner.untyped_storage()._cdata:  # (inference tensors say no view)
        assert GPU is not None
        GPU.launch(max(GPU.model.min_kernel, 2 * out.numel() * out.element_size() / GPU.model.hbm), "index")
    return FakeCudaTensor(out)


def _to(t: torch.Tensor, dev: torch.device, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(t, FakeCudaTensor) and t.dtype == dtype:
        return t
    return torch.ops.aten._to_copy.default(t, dtype=dtype, device=dev)


# -- torch.cuda's timing and launch ------------------------------------------------------------------------------
class _Event:
    def __init__(self, enable_timing: bool = False, **_: Any) -> None:
        self.t: float | None = None

    def record(self, stream: Any = None) -> None:
        assert GPU is not None
        self.t = GPU.now()

    def synchronize(self) -> None:
        assert GPU is not None
        GPU.synchronize()

    def elapsed_time(self, end: _Event) -> float:
        assert self.t is not None and end.t is not None, "elapsed_time of an event never recorded"
        return (end.t - self.t) * 1e3  # milliseconds, as CUDA events report


class _Stream:
    def __init__(self, *_: Any, **__: Any) -> None:
        pass

    def wait_stream(self, other: Any) -> None:
        pass

    def synchronize(self) -> None:
        assert GPU is not None
        GPU.synchronize()


class _Graph:
    def __init__(self, *_: Any, **__: Any) -> None:
        self.kernels: list[float] = []

    def replay(self) -> None:
        assert GPU is not None
        m = GPU.model
        GPU.host += m.graph_launch
        start = max(GPU.host, GPU.busy)
        GPU.busy = start + sum(k + m.graph_node for k in self.kernels)


@contextlib.contextmanager
def _capture(g: _Graph, *_: Any, **__: Any) -> Iterator[None]:
    assert GPU is not None
    if GPU.model.graph_capture_fails:
        raise RuntimeError("CUDA graph capture is not supported here (fake)")
    GPU.capturing = []
    try:
        yield
    finally:
        g.kernels, GPU.capturing = GPU.capturing, None


def _props() -> Any:
    assert GPU is not None
    m = GPU.model
    return types.SimpleNamespace(name=m.name, major=m.capability[0], minor=m.capability[1],
                                 multi_processor_count=m.sms, total_memory=m.memory_bytes, L2_cache_size=m.l2_bytes)


class _Profile:
    """torch.profiler.profile with CUPTI replaced: the CPU side is the real profiler."""

    def __init__(self, *args: Any, activities: Any = None, **kwargs: Any) -> None:
        acts = [a for a in (activities or [torch.profiler.ProfilerActivity.CPU])
                if a == torch.profiler.ProfilerActivity.CPU]
        self.real = _REAL["profile"](*args, activities=acts, **kwargs)

    def start(self) -> None:
        assert GPU is not None
        GPU.recording = True
        self.real.start()

    def stop(self) -> None:
        assert GPU is not None
        self.real.stop()
        GPU.recording = False

    def __enter__(self) -> _Profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def events(self) -> list[Any]:
        """The real events; each with the device time of the kernels launched inside it."""
        assert GPU is not None
        evs = list(self.real.events())
        marks = [(e.time_range.start, e.time_range.end, int(e.name[len(MARK):]))
                 for e in evs if e.name.startswith(MARK)]
        out = []
        for e in evs:
            lo, hi = e.time_range.start, e.time_range.end
            dev = sum(GPU.kernels.get(n, ("", 0.0))[1] for s, t, n in marks if lo <= s and t <= hi)
            out.append(types.SimpleNamespace(name=e.name, time_range=e.time_range, cpu_time_total=e.cpu_time_total,
                                             device_time_total=dev * 1e6, cuda_time_total=dev * 1e6))
        return out

    def export_chrome_trace(self, path: str) -> None:
        """The real CPU trace, each launch marker turned into cudaLaunchKernel + its kernel, as kineto writes."""
        assert GPU is not None
        self.real.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        kept, kernels, busy = [], [], 0.0
        for e in trace["traceEvents"]:
            name = e.get("name", "")
            if e.get("ph") == "X" and name.startswith(MARK):
                n = int(name[len(MARK):])
                kname, secs = GPU.kernels.get(n, ("?", 0.0))
                corr = n + 10**6 if GPU.model.trace_unjoined else n
                e = {**e, "cat": "cuda_runtime", "name": "cudaLaunchKernel", "args": {"correlation": n, "cbid": 211}}
                start = max(float(e["ts"]) + 1.0, busy)
                busy = start + secs * 1e6
                kernels.append({"ph": "X", "cat": "kernel", "name": f"fake_kernel<{kname}>", "pid": 0, "tid": 7,
                                "ts": start, "dur": secs * 1e6,
                                "args": {"correlation": corr, "stream": 7, "device": 0}})
            elif GPU.model.trace_flops_mismatch and e.get("cat") == "cpu_op" and name in ("aten::mm", "aten::addmm"):
                dims = e["args"]["Input Dims"]
                i = 0 if name == "aten::mm" else 1
                dims[i] = [2 * dims[i][0], *dims[i][1:]]  # twice the rows: twice the FLOPs of the op recorded
            kept.append(e)
        trace["traceEvents"] = kept + kernels
        with open(path, "w") as f:
            json.dump(trace, f)


def _record_function(name: str, *a: Any, **kw: Any) -> Any:
    return _REAL["record_function"](name, *a, **kw)


_REAL: dict[str, Any] = {}


def _fake_triton() -> types.ModuleType:
    """``roofline.bench._triton_fma`` without Triton: the launch of its FMA kernel on the fake clock."""
    mod = types.ModuleType("roofline.bench._triton_fma")
    mod.CHAINS = 4  # type: ignore[attr-defined]

    class _Kernel:
        def __getitem__(self, grid: tuple[int, ...]) -> Any:
            def launch(x: Any, iters: int, BLOCK: int) -> None:
                assert GPU is not None
                prec = "fp32" if x.dtype == torch.float32 else "fp64"
                flops = 2.0 * 4 * iters * grid[0] * BLOCK
                GPU.launch(flops / (GPU.model.vector[prec] * _efficiency(flops, 1e9)), "fma_kernel")
            return launch

    mod.fma_kernel = _Kernel()  # type: ignore[attr-defined]
    return mod


@contextlib.contextmanager
def install(kind: str = "honest", model: Model | None = None) -> Iterator[FakeGPU]:
    """The fake GPU of ``kind`` (or ``model``) for the block; torch as it was afterwards."""
    global GPU
    from roofline.bench import contention

    gpu = FakeGPU(model or model_for(kind))
    cuda = torch.cuda
    patches: list[tuple[Any, str, Any]] = [
        (cuda, "is_available", lambda: True), (cuda, "device_count", lambda: 1), (cuda, "_lazy_init", lambda: None),
        (cuda, "is_initialized", lambda: True), (cuda, "current_device", lambda: 0),
        (cuda, "set_device", lambda d: None), (cuda, "device", lambda d=None: contextlib.nullcontext()),
        (cuda, "synchronize", gpu.synchronize), (cuda, "Event", _Event), (cuda, "Stream", _Stream),
        (cuda, "current_stream", lambda d=None: _Stream()), (cuda, "stream", lambda s: contextlib.nullcontext()),
        (cuda, "CUDAGraph", _Graph), (cuda, "graph", _capture),
        (cuda, "get_device_properties", lambda d=None: _props()), (cuda, "get_device_name", lambda d=None: gpu.model.name),
        (cuda, "get_device_capability", lambda d=None: gpu.model.capability),
        (cuda, "mem_get_info", lambda d=None: (gpu.model.memory_bytes - 2**30, gpu.model.memory_bytes)),
        (torch.version, "cuda", "12.8"), (torch.profiler, "profile", _Profile),
        (contention, "snapshot", gpu.host_snapshot)]
    _REAL.update(profile=torch.profiler.profile, record_function=torch.profiler.record_function)
    saved = [(obj, name, getattr(obj, name, None)) for obj, name, _ in patches]
    triton = None
    try:
        import triton  # noqa: F401
    except ImportError:
        triton = sys.modules.get("roofline.bench._triton_fma")
        sys.modules["roofline.bench._triton_fma"] = _fake_triton()
    for obj, name, value in patches:
        setattr(obj, name, value)
    GPU = gpu
    try:
        with _Mode(), _Functions():
            yield gpu
    finally:
        for obj, name, value in saved:
            setattr(obj, name, value)
        if triton is not None or "roofline.bench._triton_fma" in sys.modules:
            if triton is None:
                sys.modules.pop("roofline.bench._triton_fma", None)
            else:
                sys.modules["roofline.bench._triton_fma"] = triton
        GPU = None


__all__ = ["KINDS", "FakeCudaTensor", "FakeGPU", "Model", "install", "model_for", "replace"]
