"""The PyTorch frontend's op table: aten op -> the :mod:`roofline.work.costs` formula it uses, what it counts, and
the attributes the formula reads from each call.

:data:`OPS` (``str(packet)`` -> :class:`~roofline.work.costs.OpRule`) is the table as data, what ``roofline ops``
prints (its rows here, and the aten ops a formula declared in :func:`roofline.work.costs.formula`);
:data:`ATTRS` and :data:`FIXED` give each formula its attributes (per call, or the same for every call).
Views and metadata ops (:data:`VIEW_OPS`) move nothing.  The recorder of :mod:`roofline.frontends.torch`
reads these tables; importing this module registers :data:`OPS` with
:func:`roofline.work.costs.register_table`.

>>> OPS["aten.mm"].formula, OPS["aten.relu"].description
('matmul', '1 FLOP per output element (relu)')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from roofline.work import costs

#: aten ops that only make a view or read metadata: no traffic, not recorded.
VIEW_OPS = frozenset("""
view _unsafe_view _reshape_alias reshape transpose transpose_ permute expand expand_as slice select as_strided
as_strided_ detach detach_ t t_ unsqueeze unsqueeze_ squeeze squeeze_ alias unfold split split_with_sizes
unsafe_split unsafe_split_with_sizes chunk unbind narrow diagonal view_as view_as_real view_as_complex _conj
_neg_view lift_fresh movedim numpy_T swapaxes empty empty_like empty_strided new_empty new_empty_strided
resize_ set_ _assert_async _assert_tensor_metadata _functional_assert_async sym_constrain_range_for_size
record_stream _make_dep_token is_same_size _has_compatible_shallow_copy_type _nested_tensor_size _version
""".split())

#: the attributes a formula needs from one call: f(args, kwargs) -> keyword arguments of the formula.
Attrs = Callable[[Sequence[Any], Mapping[str, Any]], dict[str, Any]]


def _ops(formula: str, names: str, counts: str = "") -> dict[str, costs.OpRule]:
    """Rows of :data:`OPS`: each aten op in ``names`` (packet names, space-separated) costed by ``formula``."""
    return {f"aten.{n}": costs.OpRule(f"aten.{n}", formula, counts) for n in names.split()}


#: elementwise aten op -> key of costs.ELEMENTWISE_FLOPS.
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
#: the in-place variants ("add_") aten has, costed as their op.
_ELEMENTWISE.update({f"{n}_": _ELEMENTWISE[n] for n in """
abs acos add addcdiv addcmul asin atan bitwise_and bitwise_not bitwise_or bitwise_xor ceil celu clamp clamp_max
clamp_min cos cosh div elu eq erf erfc exp2 exp expm1 floor floor_divide fmod frac ge gelu gt hardsigmoid hardswish
hardtanh le leaky_relu lerp log10 log1p log2 log logical_and logical_not logical_or logical_xor lt masked_fill mish
mul ne neg pow reciprocal relu6 relu remainder round rsqrt sigmoid sign silu sin sinh sqrt square sub tan tanh
true_divide trunc
""".split()})


def _elementwise_counts(op: str) -> str:
    per = costs.ELEMENTWISE_FLOPS[op]
    if op == "gelu":
        return f"{per:g} FLOPs per output element (gelu; {costs.ELEMENTWISE_FLOPS['gelu_tanh']:g} with approximate='tanh')"
    return f"{per:g} FLOP{'s' if per != 1 else ''} per output element ({op})"


def _arg(a: Sequence[Any], i: int) -> Any:
    return a[i] if len(a) > i else None


def _affine(w: Any, b: Any) -> str:
    return "scale_shift" if (w is not None and b is not None) else "scale" if w is not None else ""


def _layer_norm(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
    return {"norm": "layer", "affine": _affine(_arg(a, 2), _arg(a, 3))}


def _group_norm(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
    return {"norm": "group", "affine": _affine(a[1], a[2])}


def _rms_norm(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
    return {"norm": "rms", "affine": _affine(_arg(a, 2), None)}


def _batch_norm(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
    training = bool(a[5]) if len(a) > 5 and isinstance(a[5], bool) else False
    return {"norm": "batch_train" if training else "batch", "affine": _affine(a[1], a[2])}


def _batch_norm_eval(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
    return {"norm": "batch", "affine": _affine(a[1], a[2])}


def _gelu(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
    return {"op": "gelu_tanh" if kw.get("approximate", a[1] if len(a) > 1 else "none") == "tanh" else "gelu"}


def _k_at(i: int) -> Attrs:
    """K is the last dimension of argument ``i``."""
    return lambda a, kw: {"k": a[i].shape[-1]}


def _addbmm_k(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
    """out (n, p) = sum over the batch of (n, m) @ (m, p): the batch is part of K."""
    return {"k": a[1].shape[0] * a[1].shape[-1]}


def _grouped_mm_k(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
    """K of torch._grouped_mm; 2-D x 2-D (an MoE weight gradient) gives (G, M, N), each group its own K slice."""
    x, w = a[0], a[1]
    if x.dim() == 2 and w.dim() == 2:
        offs = kw.get("offs", a[2] if len(a) > 2 else None)
        return {"k": x.shape[-1] / offs.shape[0]}
    return {"k": x.shape[-1]}


def _conv(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
    return {"transposed": bool(a[6]) if len(a) > 6 and isinstance(a[6], bool) else False}


def _kernel_at(i: int) -> Attrs:
    """The pooling window is argument ``i``."""
    return lambda a, kw: {"kernel": tuple(a[i]) if isinstance(a[i], (list, tuple)) else (a[i],)}


def _attention(pos: int, flag: str, seq_first: bool) -> Attrs:
    """A fused attention op whose causal flag is argument ``pos`` (keyword ``flag``); ``seq_first``: (B, L, H, E).

    ``custom_mask_type`` (_efficient_attention_forward) is 0 none, 1 causal top-left, 2 causal bottom-right.
    """
    def attrs(a: Sequence[Any], kw: Mapping[str, Any]) -> dict[str, Any]:
        value = kw.get(flag, a[pos] if len(a) > pos else 0)
        offset = a[1].shape[1] - a[0].shape[1] if value == 2 else 0  # bottom-right: S - L
        return {"causal": bool(value), "causal_offset": offset, "seq_first": seq_first}
    return attrs


_FROM_FLOP_COUNTER = "FLOPs from torch.utils.flop_counter"
_POOLS = "max_pool1d max_pool2d max_pool3d max_pool2d_with_indices max_pool3d_with_indices avg_pool1d avg_pool2d avg_pool3d"
_INTERPOLATE = {"upsample_nearest1d": "nearest", "upsample_nearest2d": "nearest", "upsample_nearest3d": "nearest",
                "_upsample_nearest_exact1d": "nearest", "_upsample_nearest_exact2d": "nearest",
                "_upsample_nearest_exact3d": "nearest", "upsample_linear1d": "linear",
                "upsample_bilinear2d": "bilinear", "_upsample_bilinear2d_aa": "bilinear",
                "upsample_bicubic2d": "bicubic", "upsample_trilinear3d": "trilinear"}
_ATTENTION_BACKWARD = """_scaled_dot_product_efficient_attention_backward _scaled_dot_product_flash_attention_backward
_scaled_dot_product_cudnn_attention_backward _flash_attention_backward _efficient_attention_backward
_cudnn_attention_backward _scaled_dot_product_flash_attention_for_cpu_backward"""
#: ops whose FLOPs use another op's flop_counter formula: the CPU flash backward takes (grad_out, q, k, v, ...) first,
#: as the efficient-attention backward does (flop_counter's sdpa_backward_flop reads only those four).
FLOP_ALIASES = {"aten._scaled_dot_product_flash_attention_for_cpu_backward":
                 "_scaled_dot_product_efficient_attention_backward"}

#: Every aten op the frontend costs: ``str(packet)`` ('aten.mm') -> formula in :mod:`roofline.work.costs` and what it
#: counts: the rows below, then (added by :func:`roofline.work.costs.register_table`) the ops the formulas declared
#: themselves (``@costs.formula(name, torch=[...])``: applied to the op's tensors, no attribute read).  Ops not
#: here (and not views, :data:`VIEW_OPS`) are kind ``other`` and listed as unsupported, unless a user formula
#: (:func:`roofline.work.costs.register_op`) covers them.  ``roofline ops`` prints this table.
OPS: dict[str, costs.OpRule] = {
    **_ops("matmul", "mm bmm addmm baddbmm _scaled_mm",
           f"2 * M * K * N per product ({_FROM_FLOP_COUNTER}); a bias input adds bytes only"),
    **_ops("matmul", "matmul mv addmv dot vdot _int_mm"),
    **_ops("matmul", "addbmm", "sum over the batch of (n, m) @ (m, p): 2 * n * p * batch * m"),
    **_ops("matmul", "_grouped_mm", "grouped matmul (MoE experts): 2 * numel(out) * K; 2-D x 2-D splits K over groups"),
    **_ops("conv", "convolution _convolution cudnn_convolution convolution_overrideable _slow_conv2d_forward",
           f"2 * N * spatial * prod(weight shape) ({_FROM_FLOP_COUNTER}); transposed: the input's spatial size"),
    **_ops("conv", "mkldnn_convolution"),
    **_ops("conv", "convolution_backward", f"input and weight gradients ({_FROM_FLOP_COUNTER})"),
    **_ops("attention", "_scaled_dot_product_efficient_attention _scaled_dot_product_flash_attention "
                        "_scaled_dot_product_cudnn_attention _scaled_dot_product_flash_attention_for_cpu "
                        "_flash_attention_forward _efficient_attention_forward",
           "QK^T and PV: 2 * heads * pairs * (E + Ev); causal: the unmasked pairs only"),
    **_ops("attention", _ATTENTION_BACKWARD, f"fused attention backward ({_FROM_FLOP_COUNTER})"),
    **{f"aten.{n}": costs.OpRule(f"aten.{n}", "elementwise", _elementwise_counts(op)) for n, op in _ELEMENTWISE.items()},
    **_ops("norm", "native_layer_norm native_group_norm", "5 FLOPs per input element (+1 scale, +1 shift)"),
    **_ops("norm", "_fused_rms_norm", "3 FLOPs per input element (+1 scale)"),
    **_ops("norm", "native_batch_norm _native_batch_norm_legit _native_batch_norm_legit_no_training cudnn_batch_norm "
                   "miopen_batch_norm", "2 FLOPs per input element (5 training) (+1 scale, +1 shift)"),
    **_ops("norm", "native_layer_norm_backward native_group_norm_backward native_batch_norm_backward "
                   "cudnn_batch_norm_backward _fused_rms_norm_backward",
           "normalisation backward with weight/bias gradients: 11 FLOPs per input element"),
    **costs.declared("torch", "softmax"), **costs.declared("torch", "reduction"),  # placed here, declared in costs
    **_ops("pool", _POOLS, "prod(kernel) FLOPs per output element"),
    **_ops("pool", "avg_pool2d_backward avg_pool3d_backward", "prod(kernel) FLOPs per output element (of the gradient)"),
    **_ops("pool", "_adaptive_avg_pool2d _adaptive_avg_pool3d adaptive_max_pool2d adaptive_max_pool3d "
                   "_adaptive_avg_pool2d_backward _adaptive_avg_pool3d_backward", "one FLOP per input element"),
    **{f"aten.{n}": costs.OpRule(f"aten.{n}", "interpolate",
                                 f"{costs.INTERPOLATE_FLOPS[mode]:g} FLOPs per output element ({mode})")
       for n, mode in _INTERPOLATE.items()},
    # embedding, gather and memory: their aten ops are declared with the formulas (roofline.work.costs.formula)
}

#: Per-op attributes of the formula, computed from each call's arguments (ops not here: see :data:`FIXED`).
ATTRS: dict[str, Attrs] = {
    **{f"aten.{n}": _k_at(i) for n, i in (("mv", 0), ("addmv", 1), ("dot", 0), ("vdot", 0), ("_int_mm", 0),
                                          ("addmm", 1), ("baddbmm", 1))},
    "aten.addbmm": _addbmm_k, "aten._grouped_mm": _grouped_mm_k,
    **{f"aten.{n}": _conv for n in ("convolution", "_convolution", "cudnn_convolution", "convolution_overrideable",
                                    "_slow_conv2d_forward", "mkldnn_convolution")},
    **{f"aten.{n}": _attention(pos, flag, n in ("_flash_attention_forward", "_efficient_attention_forward"))
       for n, (pos, flag) in {  # positions differ per op (efficient/cudnn have compute_log_sumexp before is_causal)
           "_scaled_dot_product_efficient_attention": (6, "is_causal"),
           "_scaled_dot_product_flash_attention": (4, "is_causal"),
           "_scaled_dot_product_cudnn_attention": (6, "is_causal"),
           "_scaled_dot_product_flash_attention_for_cpu": (4, "is_causal"),
           "_flash_attention_forward": (8, "is_causal"),
           "_efficient_attention_forward": (9, "custom_mask_type")}.items()},
    "aten.gelu": _gelu, "aten.gelu_": _gelu,
    "aten.native_layer_norm": _layer_norm, "aten.native_group_norm": _group_norm, "aten._fused_rms_norm": _rms_norm,
    **{f"aten.{n}": _batch_norm for n in ("native_batch_norm", "_native_batch_norm_legit", "cudnn_batch_norm",
                                          "miopen_batch_norm")},
    "aten._native_batch_norm_legit_no_training": _batch_norm_eval,
    **{f"aten.{n}": _kernel_at(1) for n in _POOLS.split()},
    "aten.avg_pool2d_backward": _kernel_at(2), "aten.avg_pool3d_backward": _kernel_at(2),
}
#: Attributes that are the same for every call of an op.
FIXED: dict[str, dict[str, Any]] = {
    **{f"aten.{n}": {"op": op} for n, op in _ELEMENTWISE.items() if op != "gelu"},
    **{f"aten.{n}": {"norm": "backward"} for n in ("native_layer_norm_backward", "native_group_norm_backward",
                                                    "native_batch_norm_backward", "cudnn_batch_norm_backward",
                                                    "_fused_rms_norm_backward")},
    **{f"aten.{n}": {"mode": mode} for n, mode in _INTERPOLATE.items()},
}


#: ops that overwrite their first argument without reading it.
WRITE_ONLY_SELF = frozenset({"copy_", "fill_", "zero_", "uniform_", "normal_", "bernoulli_", "index_copy_",
                              "index_fill_", "_index_put_impl_", "index_put_", "scatter_"})
#: in-place scatters: only the slots given by their last tensor argument (source/values) are written,
#: e.g. a KV-cache update writes the new tokens, not the whole cache.
SCATTER_INPLACE = frozenset({"index_copy_", "_index_put_impl_", "index_put_", "scatter_"})


costs.register_table("torch", OPS)  # what `roofline ops` lists and register_op checks against
