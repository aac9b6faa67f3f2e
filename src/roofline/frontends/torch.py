"""PyTorch frontend: trace any ``nn.Module`` into a per-op :class:`~roofline.Workload`.

The forward (and, for ``mode="training"``, the backward from a scalar loss)
runs under a ``TorchDispatchMode`` that sees every aten op.  Run it on a model
built on the meta device (or under a ``FakeTensorMode``) and nothing is
allocated: a 70B-parameter model traces in seconds and a few hundred MB.

Per aten op:

* FLOPs: ``torch.utils.flop_counter``'s registry where it covers the op (mm,
  addmm, bmm, baddbmm, convolution and their backwards), else the formula in
  :mod:`roofline.costs` named by :data:`ATEN_KEYS`.  ``F.scaled_dot_product_attention``
  and ``F.rms_norm`` are recorded as one fused op each (``costs.attention`` /
  ``costs.norm``); causal attention counts the lower triangle only, about half
  of what ``FlopCounterMode`` reports for the same call (it ignores the mask).
* Bytes: compulsory traffic (the unfused model, :data:`roofline.workload.UNFUSED`):
  every tensor argument read once, every output written once, dtype-aware.
  An expanded (stride-0) argument counts its distinct elements only.  Views
  and metadata ops (:data:`VIEW_OPS`) move nothing and do not appear; copies
  do.  In-place ops read and write their target; ``copy_``/``fill_`` and
  ``out=`` targets are written only.  Arguments that share storage with a
  parameter or buffer are weight reads (``weight_bytes``).
* Attribution: ``group`` is the dotted module path (``layers.3.self_attn.q_proj``),
  ``module_type`` its class.  Ops run by the backward keep the module path of
  the module they differentiate and get `` (backward)`` appended to their name.
* Ops without a formula are kept as kind ``other`` (0 FLOPs, their bytes) and
  listed in ``workload.unsupported``; nothing is dropped.
* Data-dependent reads on meta/fake tensors (``.item()``, ``bool(t)``) return
  an assumed value (``True`` / ``1``) and ``nonzero`` assumes every element is
  non-zero; each is recorded as a warning on the Workload.

>>> import torch
>>> from roofline.frontends.torch import from_torch
>>> with torch.device("meta"):
...     model = torch.nn.Linear(4096, 4096)
...     x = torch.empty(8, 4096)
>>> w = from_torch(model, x)
>>> w.total_flops == 2 * 8 * 4096 * 4096   # one addmm; the bias add is an epilogue
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from roofline import costs
from roofline.costs import T
from roofline.errors import RooflineError, require
from roofline.workload import UnsupportedOp, Workload

#: aten ops that only make a view or read metadata: no traffic, not recorded.
VIEW_OPS = frozenset("""
view _unsafe_view _reshape_alias reshape transpose transpose_ permute expand expand_as slice select as_strided
as_strided_ detach detach_ t t_ unsqueeze unsqueeze_ squeeze squeeze_ alias unfold split split_with_sizes
unsafe_split unsafe_split_with_sizes chunk unbind narrow diagonal view_as view_as_real view_as_complex _conj
_neg_view lift_fresh movedim numpy_T swapaxes empty empty_like empty_strided new_empty new_empty_strided
resize_ set_ _assert_async _assert_tensor_metadata _functional_assert_async sym_constrain_range_for_size
record_stream _make_dep_token is_same_size _has_compatible_shallow_copy_type _nested_tensor_size _version
""".split())

#: elementwise aten op -> key of costs.ELEMENTWISE_FLOPS (in-place "op_" variants use their op's key).
_ELEMENTWISE = {
    **{n: n for n in ("add", "sub", "mul", "div", "neg", "abs", "maximum", "minimum", "relu", "leaky_relu",
                      "clamp", "hardtanh", "where", "eq", "ne", "lt", "le", "gt", "ge", "sign", "floor", "ceil",
                      "round", "reciprocal", "addcmul", "addcdiv", "lerp", "exp", "log", "sqrt", "rsqrt", "sin",
                      "cos", "tanh", "erf", "pow", "sigmoid", "silu", "gelu", "softplus", "mish", "hardswish",
                      "hardsigmoid", "elu", "celu", "sigmoid_backward", "tanh_backward", "silu_backward",
                      "gelu_backward")},
    "rsub": "sub", "true_divide": "div", "clamp_min": "maximum", "clamp_max": "minimum", "relu6": "hardtanh",
    "log1p": "log", "log2": "log", "log10": "log", "expm1": "exp", "exp2": "exp", "erfc": "erf", "tan": "tanh",
    "trunc": "floor", "frac": "floor", "remainder": "div", "fmod": "div", "floor_divide": "div",
    "logical_and": "eq", "logical_or": "eq", "logical_not": "eq", "logical_xor": "eq", "bitwise_and": "eq",
    "bitwise_or": "eq", "bitwise_not": "eq", "bitwise_xor": "eq", "isnan": "eq", "isinf": "eq",
    "masked_fill": "where", "threshold_backward": "relu_backward", "hardtanh_backward": "relu_backward",
    "leaky_relu_backward": "relu_backward", "_softmax_backward_data": "softmax_backward",
    "_log_softmax_backward_data": "softmax_backward", "native_dropout": "dropout", "native_dropout_backward": "mul",
    "_fused_dropout": "dropout", "_masked_scale": "mul", "atan": "tanh", "asin": "tanh", "acos": "tanh",
    "sinh": "tanh", "cosh": "tanh", "square": "mul", "hardswish_backward": "silu_backward",
    "hardsigmoid_backward": "sigmoid_backward", "elu_backward": "sigmoid_backward", "mish_backward": "silu_backward",
    "softplus_backward": "sigmoid_backward",
}

#: memory ops: 0 FLOPs, compulsory bytes (copies, casts, gathers, scatters, fills, factories).
_MEMORY = frozenset("""
clone _to_copy copy_ contiguous cat stack index_put index_put_ _index_put_impl_
scatter scatter_ scatter_add scatter_add_ scatter_reduce masked_scatter index_add index_add_ index_copy index_copy_
index_fill index_fill_ repeat repeat_interleave tril triu tril_ triu_ flip roll constant_pad_nd reflection_pad1d
reflection_pad2d reflection_pad3d replication_pad1d replication_pad2d replication_pad3d zeros ones full zeros_like
ones_like full_like fill fill_ zero_ arange linspace scalar_tensor new_zeros new_ones new_full lift_fresh_copy
select_scatter slice_scatter diagonal_scatter as_strided_scatter embedding_dense_backward
max_pool2d_with_indices_backward max_pool3d_with_indices_backward _pdist_forward rand randn randint rand_like
randn_like randint_like bernoulli bernoulli_ uniform_ normal_ masked_select nonzero
""".split())
#: gathers: read the indices and only the source elements they pick (costs.gather).
_GATHERS = frozenset({"index", "_unsafe_index", "index_select", "gather", "take", "_unsafe_masked_index"})

#: ops that overwrite their first argument without reading it.
_WRITE_ONLY_SELF = frozenset({"copy_", "fill_", "zero_", "uniform_", "normal_", "bernoulli_", "index_copy_",
                              "index_fill_", "_index_put_impl_", "index_put_", "scatter_"})
#: in-place scatters: only the slots given by their last tensor argument (source/values) are written,
#: e.g. a KV-cache update writes the new tokens, not the whole cache.
_SCATTER_INPLACE = frozenset({"index_copy_", "_index_put_impl_", "index_put_", "scatter_"})

_REDUCTIONS = frozenset("""
sum mean amax amin max min prod var std var_mean std_mean linalg_vector_norm norm argmax argmin cumsum cumprod
logsumexp all any count_nonzero aminmax nansum topk histc bincount
""".split())

_POOLS = {"max_pool1d": 1, "max_pool2d": 1, "max_pool3d": 1, "max_pool2d_with_indices": 1,
          "max_pool3d_with_indices": 1, "avg_pool1d": 1, "avg_pool2d": 1, "avg_pool3d": 1, "avg_pool2d_backward": 2,
          "avg_pool3d_backward": 2}
_ADAPTIVE_POOLS = frozenset({"_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_max_pool2d",
                             "adaptive_max_pool3d", "_adaptive_avg_pool2d_backward", "_adaptive_avg_pool3d_backward"})
_INTERPOLATE = {"upsample_nearest1d": "nearest", "upsample_nearest2d": "nearest", "upsample_nearest3d": "nearest",
                "_upsample_nearest_exact1d": "nearest", "_upsample_nearest_exact2d": "nearest",
                "_upsample_nearest_exact3d": "nearest", "upsample_linear1d": "linear",
                "upsample_bilinear2d": "bilinear", "_upsample_bilinear2d_aa": "bilinear",
                "upsample_bicubic2d": "bicubic", "upsample_trilinear3d": "trilinear"}

#: fused attention aten ops -> (schema position, name) of their causal flag; positions differ per op
#: (e.g. efficient/cudnn have compute_log_sumexp, a bool, before is_causal).  The last two take
#: (batch, seq, heads, dim) tensors; _efficient_attention_forward's custom_mask_type is 0 none,
#: 1 causal top-left, 2 causal bottom-right.
_ATTENTION_OPS = {"_scaled_dot_product_efficient_attention": (6, "is_causal"),
                  "_scaled_dot_product_flash_attention": (4, "is_causal"),
                  "_scaled_dot_product_cudnn_attention": (6, "is_causal"),
                  "_scaled_dot_product_flash_attention_for_cpu": (4, "is_causal"),
                  "_flash_attention_forward": (8, "is_causal"),
                  "_efficient_attention_forward": (9, "custom_mask_type")}
_MATMUL_K = {  # matmul ops our formula handles (flop_registry lacks them): index of the (.., K) operand
    "mv": 0, "addmv": 1, "dot": 0, "vdot": 0, "_int_mm": 0}


def _norm_attrs(name: str, args: Sequence[Any]) -> dict[str, Any]:
    def affine(w: Any, b: Any) -> str:
        return "scale_shift" if (w is not None and b is not None) else "scale" if w is not None else ""

    if name == "native_layer_norm":
        return {"norm": "layer", "affine": affine(args[2] if len(args) > 2 else None, args[3] if len(args) > 3 else None)}
    if name == "native_group_norm":
        return {"norm": "group", "affine": affine(args[1], args[2])}
    if name == "_fused_rms_norm":
        return {"norm": "rms", "affine": affine(args[2] if len(args) > 2 else None, None)}
    if name in ("native_batch_norm", "_native_batch_norm_legit", "cudnn_batch_norm", "miopen_batch_norm"):
        training = bool(args[5]) if len(args) > 5 and isinstance(args[5], bool) else False
        return {"norm": "batch_train" if training else "batch", "affine": affine(args[1], args[2])}
    if name == "_native_batch_norm_legit_no_training":
        return {"norm": "batch", "affine": affine(args[1], args[2])}
    return {"norm": "backward"}


_NORMS = frozenset({"native_layer_norm", "native_group_norm", "native_batch_norm", "_native_batch_norm_legit",
                    "_native_batch_norm_legit_no_training", "cudnn_batch_norm", "miopen_batch_norm", "_fused_rms_norm",
                    "native_layer_norm_backward", "native_group_norm_backward", "native_batch_norm_backward",
                    "cudnn_batch_norm_backward", "_fused_rms_norm_backward"})


def _grouped_mm_k(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
    """K of torch._grouped_mm; 2-D x 2-D (an MoE weight gradient) gives (G, M, N), each group its own K slice."""
    x, w = a[0], a[1]
    if x.dim() == 2 and w.dim() == 2:
        offs = kw.get("offs", a[2] if len(a) > 2 else None)
        return {"k": x.shape[-1] / offs.shape[0]}
    return {"k": x.shape[-1]}


def aten_key(name: str) -> tuple[str, Callable[[Sequence[Any], Mapping[str, Any]], dict[str, Any]] | None] | None:
    """The costs.py formula for an aten op (packet name, e.g. ``"addmm"``) and a function giving its attributes.

    ``None`` means no formula: the op is recorded as kind ``other`` and listed as unsupported.
    """
    if name in _MATMUL_K:
        i = _MATMUL_K[name]
        return "matmul", lambda a, kw: {"k": a[i].shape[-1]}
    if name == "addbmm":  # out (n, p) = sum over the batch of (n, m) @ (m, p): the batch is part of K
        return "matmul", lambda a, kw: {"k": a[1].shape[0] * a[1].shape[-1]}
    if name == "_grouped_mm":
        return "matmul", _grouped_mm_k
    if name in ("mm", "bmm", "matmul", "_scaled_mm"):
        return "matmul", None
    if name in ("addmm", "baddbmm"):
        return "matmul", lambda a, kw: {"k": a[1].shape[-1]}
    if name in ("convolution", "_convolution", "cudnn_convolution", "convolution_overrideable",
                "_slow_conv2d_forward", "mkldnn_convolution"):
        return "conv", lambda a, kw: {"transposed": bool(a[6]) if len(a) > 6 and isinstance(a[6], bool) else False}
    if name == "convolution_backward":
        return "conv", None  # FLOPs from flop_registry; the formula only supplies kind and bytes
    if name in _ATTENTION_OPS:
        pos, arg = _ATTENTION_OPS[name]
        seq_first = name in ("_flash_attention_forward", "_efficient_attention_forward")

        def attrs(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
            flag = kw.get(arg, a[pos] if len(a) > pos else 0)
            offset = a[1].shape[1] - a[0].shape[1] if flag == 2 else 0  # bottom-right: S - L
            return {"causal": bool(flag), "causal_offset": offset, "seq_first": seq_first}
        return "attention", attrs
    if name.endswith("_attention_backward"):
        return "attention", None
    base = name[:-1] if name.endswith("_") and name[:-1] in _ELEMENTWISE else name
    if base in _ELEMENTWISE:
        op = _ELEMENTWISE[base]
        if op == "gelu":
            return "elementwise", lambda a, kw: {"op": "gelu_tanh" if kw.get("approximate", a[1] if len(a) > 1 else "none") == "tanh" else "gelu"}
        if op == "gelu_backward":
            return "elementwise", lambda a, kw: {"op": "gelu_backward"}
        return "elementwise", lambda a, kw, op=op: {"op": op}  # type: ignore[misc]
    if name in _NORMS:
        return "norm", lambda a, kw: _norm_attrs(name, a)
    if name in ("_softmax", "_log_softmax", "_safe_softmax", "softmax", "log_softmax"):
        return "softmax", None
    if name in _REDUCTIONS:
        return "reduction", None
    if name in _POOLS:
        i = _POOLS[name]
        return "pool", lambda a, kw: {"kernel": tuple(a[i]) if isinstance(a[i], (list, tuple)) else (a[i],)}
    if name in _ADAPTIVE_POOLS:
        return "pool", None
    if name in _INTERPOLATE:
        mode = _INTERPOLATE[name]
        return "interpolate", lambda a, kw: {"mode": mode}
    if name in ("embedding", "embedding_bag", "_embedding_bag"):
        return "embedding", None
    if name in _GATHERS:
        return "gather", None
    if name in _MEMORY:
        return "memory", None
    return None


#: dtype names accepted by --input and from_hf_config -> torch dtype attribute.
DTYPE_NAMES = {"fp32": "float32", "float32": "float32", "float": "float32", "bf16": "bfloat16",
               "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16", "half": "float16",
               "fp64": "float64", "float64": "float64", "double": "float64", "int64": "int64", "long": "int64",
               "int32": "int32", "int": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
               "fp8": "float8_e4m3fn", "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}
#: torch dtype name -> precision column.
_PRECISION = {"float64": "fp64", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "int8": "int8",
              "uint8": "int8", "complex64": "fp32", "complex128": "fp64"}
#: data-dependent reads on meta tensors return these.
ASSUMED_ITEM = {"bool": True, "int": 1, "float": 1.0}
ITEM_ASSUMPTION = ("data-dependent scalar reads (.item(), bool(tensor)) on meta/fake tensors return True for bool "
                   "and 1 for numbers; nonzero() assumes every element is non-zero")
FUSED_ASSUMPTION = ("F.scaled_dot_product_attention and F.rms_norm are one fused op each (no L x S score tensor in "
                    "memory); causal attention counts the lower-triangle pairs only; an explicit attn_mask counts every "
                    "pair; in training their backward is traced through the decomposition")
BACKWARD_NAMING = "ops run by the backward keep the forward module's path as group and have ' (backward)' in their name"


def precision_of(dtype: Any) -> str:
    """The precision column for a torch dtype ('float8_e4m3fn' -> 'fp8'); non-float tensors give 'fp32'."""
    name = str(dtype).replace("torch.", "")
    if name.startswith("float8"):
        return "fp8"
    if name.startswith("float4") or name in ("int4", "uint4", "quint4x2"):
        return "int4"
    return _PRECISION.get(name, "")


class _Recorder:
    """Holds the op columns and the state of one trace; the dispatch mode calls :meth:`record`."""

    def __init__(self, torch: Any, weight_storages: set[int], names: dict[str, tuple[str, str]]) -> None:
        self.torch = torch
        self.Tensor = torch.Tensor
        self.weight_storages = weight_storages
        self.names = names  # tracker name -> (group, module_type)
        self.cols: dict[str, list[Any]] = {c: [] for c in ("name", "kind", "flops", "bytes_read", "bytes_written",
                                                           "precision", "unit", "group", "module_type",
                                                           "weight_bytes")}
        self.unsupported: dict[str, list[float]] = {}
        self.item_reads: dict[str, int] = {}
        self.paused = 0
        self.fused = 0  # fused-function ops recorded (SDPA, rms_norm)
        self.training = False
        self.tracker: Any = None
        self.current_op = ""
        self._rules: dict[Any, Any] = {}
        from torch.utils.flop_counter import flop_registry

        self.flop_registry = flop_registry
        self._precision_cache: dict[Any, str] = {}

    # -- where are we -----------------------------------------------------
    def where(self) -> tuple[str, str]:
        parents = self.tracker.parents
        # module names nest ("Root.layer1.0" inside "Root.layer1"): the longest is the innermost
        deepest = max((p for p in parents if p != "Global"), key=len) if len(parents) > 1 else "Global"
        got = self.names.get(deepest)
        if got is None:  # a module outside the traced model's tree
            got = self.names[deepest] = (deepest.split(".", 1)[-1] if "." in deepest else deepest, "")
        return got

    # -- per-op rules (cached per overload) ---------------------------------
    def rule(self, func: Any) -> Any:
        r = self._rules.get(func)
        if r is None:
            packet = func.overloadpacket
            ns = func.namespace
            name = packet.__name__ if ns == "aten" else f"{ns}.{packet.__name__}"
            # prim.device / prim.layout (fake tensors) read metadata only
            if ns == "prim" or ns == "aten" and name in VIEW_OPS or func.is_view and name not in _MEMORY:
                r = False
            else:
                key = aten_key(name) if ns == "aten" else None
                registry = self.flop_registry.get(packet) if key is None or key[0] != "attention" else None
                if key is not None and key[0] == "attention" and name.endswith("_backward"):
                    registry = self.flop_registry.get(packet)
                write_only = name in _WRITE_ONLY_SELF
                out_arg = "out" in func._schema.overload_name or func._schema.overload_name.endswith("_out")
                r = (name, key, registry, write_only, out_arg, str(packet))
            self._rules[func] = r
        return r

    def precision(self, tensors: list[Any]) -> str:
        for t in tensors:
            p = self._precision_cache.get(t.dtype)
            if p is None:
                p = self._precision_cache[t.dtype] = precision_of(t.dtype)
            if p:
                return p
        return "fp32"

    # -- recording --------------------------------------------------------------
    def tensors(self, obj: Any, out: list[Any]) -> None:
        if isinstance(obj, self.Tensor):
            out.append(obj)
        elif isinstance(obj, (list, tuple)):
            for o in obj:
                if isinstance(o, self.Tensor):
                    out.append(o)
                elif isinstance(o, (list, tuple)):
                    self.tensors(o, out)

    def as_T(self, t: Any) -> tuple[T, bool]:
        shape = tuple(t.shape)
        itemsize: float = t.element_size()
        stride = t.stride() if t.layout == self.torch.strided else ()
        if 0 in stride:  # expanded: only the distinct elements are in memory
            n = math.prod(shape)
            if n:
                distinct = math.prod(s for s, st in zip(shape, stride, strict=False) if st != 0)
                itemsize = itemsize * distinct / n
        try:
            is_weight = t.untyped_storage()._cdata in self.weight_storages
        except (RuntimeError, NotImplementedError):
            is_weight = False
        return T(shape, itemsize), is_weight

    def record(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> None:
        r = self.rule(func)
        if r is False:
            return
        name, key, registry, write_only, out_arg, full_name = r
        ins: list[Any] = []
        self.tensors(args, ins)
        if write_only and ins and ins[0] is args[0]:
            ins = ins[1:]
        if kwargs:
            for k, v in kwargs.items():
                if not (out_arg and k == "out"):
                    self.tensors(v, ins)
        outs: list[Any] = []
        self.tensors(out, outs)
        tin: list[T] = []
        weight = 0.0
        src_is_weight = False
        for t in ins:
            tt, is_w = self.as_T(t)
            tin.append(tt)
            if is_w:
                weight += tt.nbytes
                src_is_weight = src_is_weight or len(tin) == 1
        tout = [self.as_T(t)[0] for t in outs]
        if name in _SCATTER_INPLACE and tin:
            tout = [tin[-1]]
        if key is None:
            kind, flops = "other", 0.0
            rd, wr = costs.traffic(tin, tout)
            if registry is not None:
                kind, flops = "matmul", float(registry(*args, out_val=out, **kwargs))
            else:
                u = self.unsupported.setdefault(full_name, [0, 0.0])
                u[0] += 1
                u[1] += rd + wr
        else:
            formula, attrs = key
            if registry is not None:
                flops = float(registry(*args, out_val=out, **kwargs))
                rd, wr = costs.traffic(tin, tout)
                kind = formula if formula in ("matmul", "conv", "attention") else costs.FORMULAS[formula](tin, tout).kind
            else:
                c = costs.FORMULAS[formula](tin, tout, **(attrs(args, kwargs) if attrs else {}))
                kind, flops, rd, wr = c.kind, c.flops, c.bytes_read, c.bytes_written
            if formula in ("embedding", "gather") and src_is_weight:
                # only the source elements gathered are weight reads (plus any index tensor that is a buffer)
                index_bytes = sum(t.nbytes for t in tin[1:])
                weight = weight - tin[0].nbytes + (rd - index_bytes)
        self.add(name, kind, flops, rd, wr, self.precision(ins or outs), min(weight, rd))

    def add(self, name: str, kind: str, flops: float, rd: float, wr: float, precision: str, weight: float) -> None:
        group, mtype = self.where()
        if self.training and self.torch._C._current_graph_task_id() != -1:
            name += " (backward)"
        c = self.cols
        c["name"].append(name)
        c["kind"].append(kind)
        c["flops"].append(flops)
        c["bytes_read"].append(rd)
        c["bytes_written"].append(wr)
        c["precision"].append(precision)
        c["unit"].append(costs.KIND_UNIT.get(kind, "vector"))
        c["group"].append(group)
        c["module_type"].append(mtype)
        c["weight_bytes"].append(weight)

    def record_fused(self, name: str, formula: str, inputs: list[Any], outputs: list[Any], **attrs: Any) -> None:
        tin, weight = [], 0.0
        for t in inputs:
            tt, is_w = self.as_T(t)
            tin.append(tt)
            weight += tt.nbytes if is_w else 0.0
        tout = [self.as_T(t)[0] for t in outputs]
        c = costs.FORMULAS[formula](tin, tout, **attrs)
        self.fused += 1
        self.add(name, c.kind, c.flops, c.bytes_read, c.bytes_written, self.precision(inputs), weight)

    def item(self, t: Any) -> Any:
        """A data-dependent read on a meta/fake tensor: the documented assumed value, counted per module."""
        group, _ = self.where()
        self.item_reads[group] = self.item_reads.get(group, 0) + 1
        if t.dtype == self.torch.bool:
            return ASSUMED_ITEM["bool"]
        return ASSUMED_ITEM["float"] if t.dtype.is_floating_point else ASSUMED_ITEM["int"]


def _is_abstract(t: Any) -> bool:
    """Meta or fake: no data to read."""
    return t.device.type == "meta" or type(t).__name__ in ("FakeTensor", "FunctionalTensor")


def _modes(torch: Any, rec: _Recorder) -> tuple[Any, Any]:
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    local_scalar = aten._local_scalar_dense.default
    nonzero = aten.nonzero.default
    grouped_mm = aten._grouped_mm.default if hasattr(aten, "_grouped_mm") else None
    record = rec.record

    class Dispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            rec.current_op = func
            if func is local_scalar and _is_abstract(args[0]):
                return rec.item(args[0])
            if func is nonzero and _is_abstract(args[0]):
                rec.item_reads["nonzero"] = rec.item_reads.get("nonzero", 0) + 1
                x = args[0]
                out = torch.empty((x.numel(), x.dim()), dtype=torch.long, device=x.device)
            elif func is grouped_mm and _is_abstract(args[0]):
                out = _grouped_mm_meta(torch, func, args, kwargs)
            else:
                out = func(*args, **kwargs)
            if not rec.paused:
                record(func, args, kwargs, out)
            return out

    sdpa = torch.nn.functional.scaled_dot_product_attention
    rms = getattr(torch.nn.functional, "rms_norm", None)

    class Function(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            if rec.paused or (func is not sdpa and func is not rms):
                return func(*args, **kwargs)
            rec.paused += 1
            try:
                out = func(*args, **kwargs)
            finally:
                rec.paused -= 1
            if func is sdpa:
                q, k, v = args[:3]
                mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
                causal = bool(kwargs.get("is_causal", args[5] if len(args) > 5 else False))
                ins = [q, k, v] + ([mask] if isinstance(mask, torch.Tensor) else [])
                rec.record_fused("scaled_dot_product_attention", "attention", ins, [out], causal=causal)
            else:
                x = args[0]
                w = kwargs.get("weight", args[2] if len(args) > 2 else None)
                ins = [x] + ([w] if isinstance(w, torch.Tensor) else [])
                rec.record_fused("rms_norm", "norm", ins, [out], norm="rms", affine="scale" if len(ins) > 1 else "")
            return out

    return Dispatch(), Function()


def _grouped_mm_meta(torch: Any, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """torch._grouped_mm's meta kernel accepts only bf16; its output shape does not depend on the dtype."""
    try:
        return func(*args, **kwargs)
    except RuntimeError:
        a, b = args[0], args[1]
        if a.dim() == 2 and b.dim() == 3:  # tokens sorted by group (offs) x one weight per group: MoE experts
            shape = (a.shape[0], b.shape[-1])
        elif a.dim() == 3 and b.dim() == 3:  # batched
            shape = (a.shape[0], a.shape[1], b.shape[-1])
        else:
            raise
        dtype = kwargs.get("out_dtype") or a.dtype
        return torch.empty(shape, dtype=dtype, device=a.device)


def _leaves(obj: Any, torch: Any, out: list[Any]) -> list[Any]:
    """Every tensor in a nested output (tensors, sequences, mappings, ModelOutput)."""
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, Mapping):
        for v in obj.values():
            _leaves(v, torch, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _leaves(v, torch, out)
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def from_torch(model: Any, *example_inputs: Any, mode: str = "inference", kwargs: Mapping[str, Any] | None = None,
               title: str | None = None, loss: Callable[[Any], Any] | None = None) -> Workload:
    """Trace ``model(*example_inputs, **kwargs)`` into a per-op Workload.

    ``mode``: ``"inference"`` (forward under ``torch.no_grad``, ``model.eval()``) or
    ``"training"`` (``model.train()``, forward, then the backward of ``loss(output)``,
    by default the sum of every floating-point output).  The model's train/eval
    state and gradients are restored afterwards.  Use a meta-device model and
    meta inputs (or fake tensors) to trace without allocating or computing.

    A failure inside the model raises :class:`RooflineError` naming the aten op
    and the module where it happened.

    >>> import torch
    >>> with torch.device("meta"):
    ...     mlp = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64))
    ...     x = torch.empty(32, 64)
    >>> w = from_torch(mlp, x)
    >>> [w.strings("group", i) for i in range(len(w))]
    ['0', '1', '2']
    >>> w.total_flops  # 2*32*64*256 (Linear) + 32*256 (ReLU) + 2*32*256*64 (Linear)
    2105344.0
    """
    torch = require("torch", "torch")
    from torch.utils.module_tracker import ModuleTracker

    if mode not in ("inference", "training"):
        raise RooflineError(f"mode must be 'inference' or 'training', got {mode!r}")
    if not isinstance(model, torch.nn.Module):
        raise RooflineError(f"expected a torch.nn.Module, got {type(model).__name__}")
    kwargs = dict(kwargs or {})
    root = type(model).__name__
    names: dict[str, tuple[str, str]] = {"Global": ("", "")}
    for path, m in model.named_modules():
        names[f"{root}.{path}" if path else root] = (path, type(m).__name__)
    weight_storages: set[int] = set()
    for t in (*model.parameters(), *model.buffers()):
        try:
            weight_storages.add(t.untyped_storage()._cdata)
        except (RuntimeError, NotImplementedError):
            pass
    rec = _Recorder(torch, weight_storages, names)
    training = mode == "training"
    rec.training = training
    dispatch, function = _modes(torch, rec)
    was_training = model.training
    model.train(training)
    grads = {id(p): p.grad for p in model.parameters()}
    try:
        with torch.set_grad_enabled(training), ModuleTracker() as tracker:
            rec.tracker = tracker
            with function, dispatch:
                try:
                    out = model(*example_inputs, **kwargs)
                    if training:
                        value = loss(out) if loss is not None else _sum_loss(torch, out)
                        value.backward()
                except RooflineError:
                    raise
                except Exception as exc:
                    group, mtype = rec.where()
                    where = f"module {group} ({mtype})" if group else f"the top level of {root}"
                    op = str(rec.current_op) if rec.current_op else "(before the first op)"
                    raise RooflineError(f"the model failed at op {op} in {where}: {_first_line(exc)}") from exc
    finally:
        model.train(was_training)
        for p in model.parameters():
            p.grad = grads.get(id(p))
    if not rec.cols["name"]:
        raise RooflineError(f"{root}: the trace recorded no ops (does forward() compute anything?)")
    warnings: list[str] = []
    if rec.item_reads:
        where = ", ".join(f"{k or '(top level)'} x{v}" for k, v in rec.item_reads.items())
        warnings.append(f"data-dependent reads on meta/fake tensors used assumed values ({where}): {ITEM_ASSUMPTION}")
    if rec.unsupported:
        warnings.append(f"{len(rec.unsupported)} op type(s) without a FLOP formula counted as 0 FLOPs (bytes kept): "
                        + ", ".join(sorted(rec.unsupported)))
    unsupported = [UnsupportedOp(n, int(c), float(b)) for n, (c, b) in sorted(rec.unsupported.items())]
    shapes = [list(t.shape) for t in example_inputs if isinstance(t, torch.Tensor)]
    assumptions = ["FLOPs of mm/addmm/bmm/baddbmm/convolution (and convolution backward) from torch.utils.flop_counter; "
                   "all others from roofline.costs"]
    if rec.fused:
        assumptions.append(FUSED_ASSUMPTION)
    if rec.item_reads:
        assumptions.append(ITEM_ASSUMPTION)
    if training:
        assumptions.append(BACKWARD_NAMING + "; loss = sum of the floating-point outputs" if loss is None
                           else BACKWARD_NAMING)
    n_params = sum(p.numel() for p in model.parameters())
    return Workload.from_columns(
        where=root, title=title or f"{root} ({mode})", source=f"torch: {root}",
        assumptions=assumptions, warnings=warnings, unsupported=unsupported,
        info={"frontend": "torch", "model": root, "mode": mode, "input_shapes": shapes, "parameters": n_params},
        **rec.cols)


def _sum_loss(torch: Any, out: Any) -> Any:
    leaves = [t for t in _leaves(out, torch, []) if t.dtype.is_floating_point and t.requires_grad]
    if not leaves:
        raise RooflineError("training mode: the model returned no floating-point tensor that requires grad")
    total = leaves[0].sum()
    for t in leaves[1:]:
        total = total + t.sum()
    return total
