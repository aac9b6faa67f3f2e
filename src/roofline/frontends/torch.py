"""PyTorch frontend: trace any ``nn.Module`` into a per-op :class:`~roofline.Workload`.

The forward (and, for ``mode="training"``, the backward from a scalar loss)
runs under a ``TorchDispatchMode`` that sees every aten op.  Run it on a model
built on the meta device (or under a ``FakeTensorMode``) and nothing is
allocated: a 70B-parameter model traces in seconds and a few hundred MB.

Per aten op:

* FLOPs: ``torch.utils.flop_counter``'s registry where it covers the op (mm,
  addmm, bmm, baddbmm, convolution and their backwards), else the formula in
  :mod:`roofline.work.costs` that the op table :data:`~roofline.frontends.torch_ops.OPS` names (``roofline ops``
  prints it).  A formula given with :func:`roofline.work.costs.register_op`
  (``"torch"``, ``"aten.mm"`` or a custom op such as ``"mylib.fused_mlp"``)
  comes first.  ``F.scaled_dot_product_attention``
  and ``F.rms_norm`` are recorded as one fused op each (``costs.attention`` /
  ``costs.norm``); causal attention counts the lower triangle only, about half
  of what ``FlopCounterMode`` reports for the same call (it ignores the mask).
* Bytes: compulsory traffic (the unfused model, :data:`roofline.work.workload_columns.UNFUSED`):
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
from typing import Any, NamedTuple

from roofline.core.errors import RooflineError, first_line, require
from roofline.core.precision import of_dtype
from roofline.engine.gemm_shape import dims_from_flops
from roofline.frontends.torch_ops import (
    ATTRS,
    FIXED,
    FLOP_ALIASES,
    OPS,
    SCATTER_INPLACE,
    VIEW_OPS,
    WRITE_ONLY_SELF,
    Attrs,
)
from roofline.work import costs
from roofline.work.costs import T
from roofline.work.workload import UnsupportedOp, Workload, WorkloadBuilder

#: data-dependent reads on meta tensors return these.
ASSUMED_ITEM = {"bool": True, "int": 1, "float": 1.0}
ITEM_ASSUMPTION = ("data-dependent scalar reads (.item(), bool(tensor)) on meta/fake tensors return True for bool "
                   "and 1 for numbers; nonzero() assumes every element is non-zero")
FUSED_ASSUMPTION = ("F.scaled_dot_product_attention and F.rms_norm are one fused op each (no L x S score tensor in "
                    "memory); causal attention counts the lower-triangle pairs only; an explicit attn_mask counts every "
                    "pair; in training their backward is traced through the decomposition")
BACKWARD_NAMING = "ops run by the backward keep the forward module's path as group and have ' (backward)' in their name"


class _Rule(NamedTuple):
    """How one aten overload is recorded (resolved once per overload and trace)."""

    name: str  # op name in the Workload: 'mm', 'mylib.fused_mlp'
    key: str  # str(packet): the key of OPS and of costs.USER_FORMULAS
    user: costs.Formula | None  # a user's formula, used instead of everything below
    formula: str | None  # the OPS formula; None: not in OPS (unsupported, or FLOPs from flop_counter only)
    fn: costs.Formula | None  # costs.FORMULAS[formula]
    attrs: Attrs | None  # per-call attributes of the formula
    fixed: dict[str, Any]  # attributes the same for every call
    registry: Callable[..., Any] | None  # torch.utils.flop_counter's formula, used for the FLOPs when set
    write_only: bool  # overwrites its first argument without reading it
    scatter: bool  # writes only the slots its last tensor argument gives
    out_arg: bool  # an out= overload: the out tensor is written, not read


class Recorder:
    """Holds the op rows and the state of one trace; the dispatch mode calls :meth:`record`."""

    def __init__(self, torch: Any, weight_storages: set[int], names: dict[str, tuple[str, str]]) -> None:
        self.torch = torch
        self.Tensor = torch.Tensor
        self.weight_storages = weight_storages
        self.names = names  # tracker name -> (group, module_type)
        self.ops = WorkloadBuilder()
        self.item_reads: dict[str, int] = {}
        self.paused = 0
        self.fused = 0  # fused-function ops recorded (SDPA, rms_norm)
        self.user_ops: set[str] = set()  # ops costed by a user's formula
        self.training = False
        self.tracker: Any = None
        self.current_op = ""
        self._rules: dict[Any, _Rule | None] = {}  # per overload; None: a view or metadata op, not recorded
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
    def rule(self, func: Any) -> _Rule | None:
        """How ``func`` (an OpOverload) is recorded; ``None``: not recorded (a view or metadata op)."""
        r = self._rules.get(func, _UNSEEN)
        if r is _UNSEEN:
            r = self._rules[func] = self.resolve(func)
        return r

    def resolve(self, func: Any) -> _Rule | None:
        """The rule of ``func``: a user formula (:data:`roofline.work.costs.USER_FORMULAS`), else its :data:`OPS` row."""
        packet = func.overloadpacket
        ns = func.namespace
        name = packet.__name__ if ns == "aten" else f"{ns}.{packet.__name__}"
        key = str(packet)
        user = costs.USER_FORMULAS.get(("torch", key))
        row = OPS.get(key)
        formula = row.formula if row is not None else None
        # prim.device / prim.layout (fake tensors) read metadata only
        if user is None and (ns == "prim" or ns == "aten" and name in VIEW_OPS
                             or func.is_view and formula != "memory"):
            return None
        registry = self.flop_registry.get(packet)
        if registry is None and key in FLOP_ALIASES:
            registry = self.flop_registry.get(getattr(self.torch.ops.aten, FLOP_ALIASES[key]))
        if formula == "attention" and not name.endswith("_backward"):
            registry = None  # forward attention: our formula (causal pairs), not flop_counter's
        overload = func._schema.overload_name
        return _Rule(name, key, user, formula, costs.FORMULAS[formula] if formula else None, ATTRS.get(key),
                     FIXED.get(key, {}), registry, name in WRITE_ONLY_SELF, name in SCATTER_INPLACE,
                     "out" in overload or overload.endswith("_out"))

    def precision(self, tensors: list[Any]) -> str:
        for t in tensors:
            p = self._precision_cache.get(t.dtype)
            if p is None:
                p = self._precision_cache[t.dtype] = of_dtype(t.dtype)
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
        got = self.cost_of(func, args, kwargs, out)
        if got is not None:
            self.add(*got, dims=matmul_dims(got[1], getattr(out, "shape", None)))

    def cost_of(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any
                ) -> tuple[str, costs.Cost, str] | None:
        """(op name, cost, precision) of one call; ``None`` for a view or metadata op (not recorded).

        An op without a formula is added to ``ops.unsupported``; a user formula to ``user_ops``.
        """
        r = self.rule(func)
        if r is None:
            return None
        ins: list[Any] = []
        self.tensors(args, ins)
        if r.write_only and ins and ins[0] is args[0]:
            ins = ins[1:]
        if kwargs:
            for k, v in kwargs.items():
                if not (r.out_arg and k == "out"):
                    self.tensors(v, ins)
        outs: list[Any] = []
        self.tensors(out, outs)
        tin: list[T] = []
        weights: list[bool] = []
        for t in ins:
            tt, is_w = self.as_T(t)
            tin.append(tt)
            weights.append(is_w)
        tout = [self.as_T(t)[0] for t in outs]
        if r.scatter and tin:
            tout = [tin[-1]]
        formula = r.formula
        if r.user is not None:
            c = costs.apply_user("torch", r.key, r.user, tin, tout)
            formula = r.key
            self.user_ops.add(r.key)
        elif r.registry is not None:
            rd, wr = costs.traffic(tin, tout)
            kind = ("matmul" if r.fn is None else formula if formula in ("matmul", "conv", "attention")
                    else r.fn(tin, tout).kind)
            c = costs.Cost(kind, float(r.registry(*args, out_val=out, **kwargs)), rd, wr)
        elif r.fn is not None:
            c = r.fn(tin, tout, **r.attrs(args, kwargs)) if r.attrs is not None else r.fn(tin, tout, **r.fixed)
        else:
            rd, wr = costs.traffic(tin, tout)
            c = costs.Cost("other", 0.0, rd, wr)
            self.ops.add_unsupported(r.key, rd + wr)
        return r.name, costs.with_weights(c, formula or "", tin, tout, weights), self.precision(ins or outs)

    def add(self, name: str, c: costs.Cost, precision: str, dims: dict[str, float] | None = None) -> None:
        group, mtype = self.where()
        if self.training and self.torch._C._current_graph_task_id() != -1:
            name += " (backward)"
        self.ops.row(name, kind=c.kind, flops=c.flops, bytes_read=c.bytes_read, bytes_written=c.bytes_written,
                     precision=precision, unit=c.unit, group=group, module_type=mtype, weight_bytes=c.weight_bytes,
                     **(dims or {}))

    def record_fused(self, name: str, formula: str, inputs: list[Any], outputs: list[Any], **attrs: Any) -> None:
        got = self.fused_cost(name, formula, inputs, outputs, **attrs)
        self.add(*got, dims=attention_dims(inputs) if got[1].kind == "attention" else None)

    def fused_cost(self, name: str, formula: str, inputs: list[Any], outputs: list[Any], **attrs: Any
                   ) -> tuple[str, costs.Cost, str]:
        """(name, cost, precision) of a fused function call (:func:`fused_call`)."""
        tin: list[T] = []
        weights: list[bool] = []
        for t in inputs:
            tt, is_w = self.as_T(t)
            tin.append(tt)
            weights.append(is_w)
        tout = [self.as_T(t)[0] for t in outputs]
        self.fused += 1
        return name, costs.cost(formula, tin, tout, weights=weights, **attrs), self.precision(inputs)

    def item(self, t: Any) -> Any:
        """A data-dependent read on a meta/fake tensor: the documented assumed value, counted per module."""
        group, _ = self.where()
        self.item_reads[group] = self.item_reads.get(group, 0) + 1
        if t.dtype == self.torch.bool:
            return ASSUMED_ITEM["bool"]
        return ASSUMED_ITEM["float"] if t.dtype.is_floating_point else ASSUMED_ITEM["int"]


_UNSEEN = _Rule("", "", None, None, None, None, {}, None, False, False, False)  # Recorder.rule: not resolved yet


def matmul_dims(c: costs.Cost, shape: Any) -> dict[str, float] | None:
    """m, n, k, batch of a matmul call from its output shape (``[..., m, n]``) and FLOPs; None for other ops."""
    if c.kind != "matmul" or shape is None:
        return None
    return dims_from_flops(c.flops, tuple(shape))


def attention_dims(inputs: list[Any]) -> dict[str, float] | None:
    """m (queries), n (keys), k (head dim), batch (everything before: sequences x heads) of a fused attention
    call from its query and key tensors (``[..., s, d]`` and ``[..., S, d]``)."""
    if len(inputs) < 2 or len(inputs[0].shape) < 2 or len(inputs[1].shape) < 2:
        return None
    q, k = tuple(inputs[0].shape), tuple(inputs[1].shape)
    return {"m": float(q[-2]), "n": float(k[-2]), "k": float(q[-1]), "batch": float(math.prod(q[:-2]))}


def _is_abstract(t: Any) -> bool:
    """Meta or fake: no data to read."""
    return t.device.type == "meta" or type(t).__name__ in ("FakeTensor", "FunctionalTensor")


def _modes(torch: Any, rec: Recorder) -> tuple[Any, Any]:
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    local_scalar = aten._local_scalar_dense.default
    nonzero = aten.nonzero.default
    grouped_mm = aten._grouped_mm.default if hasattr(aten, "_grouped_mm") else None
    record = rec.record

    class Dispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                               kwargs: dict[str, Any] | None = None) -> Any:
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
        def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                               kwargs: dict[str, Any] | None = None) -> Any:
            kwargs = kwargs or {}
            if rec.paused or (func is not sdpa and func is not rms):
                return func(*args, **kwargs)
            rec.paused += 1
            try:
                out = func(*args, **kwargs)
            finally:
                rec.paused -= 1
            name, formula, ins, outs, attrs = fused_call("scaled_dot_product_attention" if func is sdpa else "rms_norm",
                                                         args, kwargs, out, torch.Tensor)
            rec.record_fused(name, formula, ins, outs, **attrs)
            return out

    return Dispatch(), Function()


#: Functions recorded as one fused op each (their aten op has the same arguments, so traces use this too).
FUSED_FUNCTIONS = ("scaled_dot_product_attention", "rms_norm")


def fused_call(name: str, args: Sequence[Any], kwargs: Mapping[str, Any], out: Any, tensor: type
               ) -> tuple[str, str, list[Any], list[Any], dict[str, Any]]:
    """(name, formula, inputs, outputs, attributes) of a call of F.scaled_dot_product_attention or F.rms_norm
    (or of aten::scaled_dot_product_attention / aten::rms_norm, which take the same arguments)."""
    if name == "scaled_dot_product_attention":
        q, k, v = args[:3]
        mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
        causal = bool(kwargs.get("is_causal", args[5] if len(args) > 5 else False))
        return name, "attention", [q, k, v] + ([mask] if isinstance(mask, tensor) else []), [out], {"causal": causal}
    x = args[0]
    w = kwargs.get("weight", args[2] if len(args) > 2 else None)
    ins = [x] + ([w] if isinstance(w, tensor) else [])
    return name, "norm", ins, [out], {"norm": "rms", "affine": "scale" if len(ins) > 1 else ""}


def _grouped_mm_meta(torch: Any, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """torch._grouped_mm's meta kernel accepts only bf16; its output shape does not depend on the dtype."""
    try:
        return func(*args, **kwargs)
    except RuntimeError:
        a, b = args[0], args[1]
        shape: tuple[int, ...]
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
    if mode not in ("inference", "training"):
        raise RooflineError(f"mode must be 'inference' or 'training', got {mode!r}")
    if not isinstance(model, torch.nn.Module):
        from roofline.core import arguments as arg

        raise arg.type_error("from_torch", "model", "a torch.nn.Module", model)
    kwargs = dict(kwargs or {})
    root = type(model).__name__
    rec = Recorder(torch, _weight_storages(model), _module_names(model, root))
    training = mode == "training"
    rec.training = training
    _trace(torch, model, example_inputs, kwargs, rec, loss)
    if not len(rec.ops):
        raise RooflineError(f"{root}: the trace recorded no ops (does forward() compute anything?)")
    warnings, unsupported, assumptions = _notes(rec, training, loss)
    shapes = [list(t.shape) for t in example_inputs if isinstance(t, torch.Tensor)]
    n_params = sum(p.numel() for p in model.parameters())
    return rec.ops.build(
        where=root, title=title or f"{root} ({mode})", source=f"torch: {root}",
        assumptions=assumptions, warnings=warnings, unsupported=unsupported,
        info={"frontend": "torch", "model": root, "mode": mode, "input_shapes": shapes, "parameters": n_params})


def _module_names(model: Any, root: str) -> dict[str, tuple[str, str]]:
    """ModuleTracker's name of each module ('Net.layers.0') -> (its path in the model, its class name)."""
    names: dict[str, tuple[str, str]] = {"Global": ("", "")}
    for path, m in model.named_modules():
        names[f"{root}.{path}" if path else root] = (path, type(m).__name__)
    return names


def _weight_storages(model: Any) -> set[int]:
    """The storages of the model's parameters and buffers: an argument sharing one is a weight read."""
    weight_storages: set[int] = set()
    for t in (*model.parameters(), *model.buffers()):
        try:
            weight_storages.add(t.untyped_storage()._cdata)
        except (RuntimeError, NotImplementedError):
            pass
    return weight_storages


def _trace(torch: Any, model: Any, example_inputs: tuple[Any, ...], kwargs: dict[str, Any], rec: Recorder,
           loss: Callable[[Any], Any] | None) -> None:
    """Run the forward (and in training the backward of the loss) under the recorder's modes; the model's
    train/eval state and gradients are restored afterwards.  A failure names the aten op and the module."""
    from torch.utils.module_tracker import ModuleTracker

    training = rec.training
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
                    where = f"module {group} ({mtype})" if group else f"the top level of {type(model).__name__}"
                    op = str(rec.current_op) if rec.current_op else "(before the first op)"
                    raise RooflineError(f"the model failed at op {op} in {where}: {first_line(exc)}") from exc
    finally:
        model.train(was_training)
        for p in model.parameters():
            p.grad = grads.get(id(p))


def _notes(rec: Recorder, training: bool, loss: Callable[[Any], Any] | None
           ) -> tuple[list[str], list[UnsupportedOp], list[str]]:
    """(warnings, unsupported ops, assumptions) of a finished trace."""
    warnings: list[str] = []
    if rec.item_reads:
        where = ", ".join(f"{k or '(top level)'} x{v}" for k, v in rec.item_reads.items())
        warnings.append(f"data-dependent reads on meta/fake tensors used assumed values ({where}): {ITEM_ASSUMPTION}")
    unsupported = sorted(rec.ops.unsupported.values(), key=lambda u: u.name)
    if unsupported:
        warnings.append(f"{len(unsupported)} op type(s) without a FLOP formula counted as 0 FLOPs (bytes kept): "
                        + ", ".join(u.name for u in unsupported))
    assumptions = ["FLOPs of mm/addmm/bmm/baddbmm/convolution (and convolution backward) from torch.utils.flop_counter; "
                   "all others from roofline.work.costs"]
    if rec.user_ops:
        assumptions.append("user cost formulas (roofline.work.costs.register_op) for " + ", ".join(sorted(rec.user_ops)))
    if rec.fused:
        assumptions.append(FUSED_ASSUMPTION)
    if rec.item_reads:
        assumptions.append(ITEM_ASSUMPTION)
    if training:
        assumptions.append(BACKWARD_NAMING + "; loss = sum of the floating-point outputs" if loss is None
                           else BACKWARD_NAMING)
    return warnings, unsupported, assumptions


def _sum_loss(torch: Any, out: Any) -> Any:
    leaves = [t for t in _leaves(out, torch, []) if t.dtype.is_floating_point and t.requires_grad]
    if not leaves:
        raise RooflineError("training mode: the model returned no floating-point tensor that requires grad")
    total = leaves[0].sum()
    for t in leaves[1:]:
        total = total + t.sum()
    return total
