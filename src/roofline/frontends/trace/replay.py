"""Replay one recorded aten call on meta tensors and cost it with the PyTorch frontend's own tables.

A trace recorded with ``record_shapes=True`` gives, per call, each argument's
type (a dtype name, ``Scalar``, ``ScalarList``, ``TensorList`` or ``''`` for
None / not recorded), its dims and strides, and the values of scalar arguments
(``Concrete Inputs``).  That is enough to rebuild the call on the meta device:
the overload whose schema matches those types is called with empty tensors of
the recorded shapes, strides and dtypes, and the outputs it returns are costed
by :meth:`roofline.frontends.torch.Recorder.cost_of`, the same code
:func:`roofline.from_torch` uses, so a trace and a traced model get the same
FLOPs and bytes.  Nothing is computed and nothing is allocated.

Most calls need no meta tensors: for the common overloads (matmuls, convolutions, elementwise ops,
reductions, norms, softmax, copies, cat, gathers, fused attention) :mod:`.shapes` gives the outputs in closed
form on recorded tensors (shape, strides, dtype), and the same recorder costs them.  The meta route takes the
rest, at most ``ROOFLINE_MAX_TRACE_CALLS`` calls a trace (:func:`roofline.core.limits.max_trace_calls`; a
closed-form call has nine times the allowance); past it the calls left are not placed and :meth:`Replayer.notes`
says how many.

What a trace cannot say: string arguments (gelu's ``approximate`` is taken as
'none') and lists of optional tensors (``aten::index``'s indices); such calls
are listed as not replayed, with their time.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any, NamedTuple

from roofline.core.errors import RooflineError, require
from roofline.core.limits import CLOSED_FORM_CALLS, max_trace_calls
from roofline.frontends.trace.shapes import ClosedForm, Recorded, Unknown, schema_type
from roofline.work import costs

#: c10 type names the profiler writes -> torch dtype attribute names.
DTYPES = {"float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16",
          "long int": "int64", "int": "int32", "short int": "int16", "signed char": "int8", "unsigned char": "uint8",
          "bool": "bool", "c10::complex<float>": "complex64", "c10::complex<double>": "complex128",
          "c10::complex<c10::Half>": "complex32", "c10::Float8_e4m3fn": "float8_e4m3fn",
          "c10::Float8_e5m2": "float8_e5m2", "c10::Float8_e4m3fnuz": "float8_e4m3fnuz",
          "c10::Float8_e5m2fnuz": "float8_e5m2fnuz", "unsigned short": "uint16", "unsigned int": "uint32",
          "unsigned long": "uint64"}
#: c10::ScalarType codes the profiler writes for dtype arguments ('6' is float32).
SCALAR_TYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex32", "complex64",
                "complex128", "bool", "qint8", "quint8", "qint32", "bfloat16", "quint4x2", "quint2x4", "bits1x8",
                "bits2x4", "bits4x2", "bits8", "bits16", "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz",
                "float8_e4m3fnuz", "uint16", "uint32", "uint64")
_NOT_TENSORS = frozenset({"Scalar", "ScalarList", "TensorList", "GenericList"})
_NUMBERS = frozenset({"int", "float", "bool", "number", "complex", "SymInt", "SymFloat", "SymBool", "Scalar"})


class NotReplayed(Exception):
    """A recorded call that cannot be rebuilt: the message says why (one short phrase)."""


#: (op name, cost, precision, GEMM dimensions {m, n, k, batch} or None where not known)
Costed = tuple[str, costs.Cost, str, dict[str, float] | None]


_MISSING = object()


class _Failed(NamedTuple):
    """A call not rebuilt, and why (what :class:`NotReplayed` says)."""

    why: str

#: a call's recorded columns: Input type, Input Dims, Input Strides, Concrete Inputs (one entry per argument)
_Columns = tuple[list[Any], list[Any], list[Any], list[Any]]


class _Arg(NamedTuple):
    """What the replay reads of one schema argument (``str(argument.type)`` is slow: read once per overload)."""

    name: str
    inner: str  # the type less Optional[...]
    optional: bool
    kwarg_only: bool
    device: bool  # a device: the meta device is given
    dtype: bool  # a ScalarType: a recorded code is mapped to a dtype
    has_default: bool  # a default is given for an argument not recorded
    has_value: bool  # a default is given for a value that does not parse
    default: Any

    @classmethod
    def of(cls, arg: Any) -> _Arg:
        inner, optional = schema_type(arg)
        return cls(arg.name, inner, optional, bool(arg.kwarg_only), inner == "Device" or arg.name == "device",
                   arg.name == "dtype" or inner == "ScalarType", arg.default_value is not None or arg.has_default_value(),
                   bool(arg.has_default_value()), arg.default_value)


class _Shapes:
    """``torch.utils.flop_counter``'s registry, each formula wrapped as its ``shape_wrapper`` wraps it (every
    tensor in the arguments and the output given as its shape) but without pytree: a third of a closed-form
    call's time went to ``tree_map``.  Formulas registered raw (``get_raw=True``) are returned as they are."""

    def __init__(self, registry: Mapping[Any, Any], tensor: Any) -> None:
        from torch.utils.flop_counter import shape_wrapper

        self._registry = registry
        self._tensor = tensor
        self._wrapper = shape_wrapper(lambda: 0).__code__
        self._made: dict[Any, Any] = {}

    def get(self, packet: Any) -> Any:
        got = self._made.get(packet, _MISSING)
        if got is _MISSING:
            got = self._made[packet] = self._fast(self._registry.get(packet))
        return got

    def _fast(self, f: Any) -> Any:
        if f is None or getattr(f, "__code__", None) is not self._wrapper or not hasattr(f, "__wrapped__"):
            return f
        raw, tensor = f.__wrapped__, self._tensor

        def shape(x: Any) -> Any:
            if isinstance(x, tensor):
                return x.shape
            if isinstance(x, (list, tuple)):
                return type(x)(shape(y) for y in x)
            return x

        def formula(*args: Any, out_val: Any = None, **kwargs: Any) -> Any:
            return raw(*(shape(a) for a in args), out_shape=shape(out_val), **{k: shape(v) for k, v in kwargs.items()})
        return formula


class Replayer:
    """Costs recorded calls; results are cached per (op, recorded arguments).

    ``closed_form=False`` rebuilds every call on meta tensors (what the closed form is checked against).
    """

    def __init__(self, closed_form: bool = True) -> None:
        self.torch = require("torch", "torch")
        from roofline.frontends.torch import Recorder

        self.rec = Recorder(self.torch, set(), {"Global": ("", "")})
        self.rec.Tensor = (self.torch.Tensor, Recorded)  # it costs recorded tensors as it costs meta ones
        self.rec.flop_registry = _Shapes(self.rec.flop_registry, self.rec.Tensor)  # type: ignore[assignment]  # .get only
        self.closed = ClosedForm(self.torch) if closed_form else None
        self._cache: dict[tuple[str, int], Costed | str | None | _Failed] = {}
        self._overloads: dict[str, list[tuple[Any, int]]] = {}  # op name -> its overloads and their arities
        self._composite: dict[Any, bool] = {}
        self._schemas: dict[Any, list[_Arg]] = {}
        self._literals: dict[str, Any] = {}
        self.meta = self.torch.device("meta")
        self.unsupported: set[str] = set()  # ops replayed but without a FLOP formula
        self.calls = {"closed form": 0, "meta": 0, "past the limit": 0}  # distinct calls by route
        self._limit = max_trace_calls()
        # allowances: meta rebuilds, and CLOSED_FORM_CALLS times as many closed-form calls (each about that
        # share of a rebuild's time), apart, so that rebuilds early in a trace never starve the cheap calls after
        self._left = {"meta": self._limit, "closed form": self._limit * CLOSED_FORM_CALLS}

    def composite(self, op: Any) -> bool:
        """True for an overload that decomposes into other aten ops before dispatch (what a trace shows as its
        children, and what :func:`roofline.from_torch` never sees)."""
        got = self._composite.get(op)
        if got is None:
            name = op._schema.name + (f".{op._schema.overload_name}" if op._schema.overload_name else "")
            try:
                got = bool(self.torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd"))
            except RuntimeError:  # an overload only TorchScript registers (aten::to.prim_Device): not in the dispatcher
                got = False
            self._composite[op] = got
        return got

    def notes(self) -> list[str]:
        """A warning when calls were left unplaced past ``ROOFLINE_MAX_TRACE_CALLS``."""
        past = self.calls["past the limit"]
        if not past:
            return []
        return [f"{past:,} distinct recorded call(s) not costed: past the limit of {self._limit:,} rebuilt on meta "
                f"tensors ({self.calls['meta']:,} were; and of {self._limit * CLOSED_FORM_CALLS:,} costed in closed "
                f"form, {self.calls['closed form']:,} were); set ROOFLINE_MAX_TRACE_CALLS to raise it"]

    def cost(self, name: str, call_id: int, call: Mapping[str, Any], fused: bool = False) -> Costed | None | str:
        """The cost of ``name`` called with ``call`` (an event's recorded arguments); ``None`` for a view or a
        metadata op; the string ``"composite"`` for an op whose children carry its work.

        Raises :class:`NotReplayed` when the call cannot be rebuilt.
        """
        key = (name, call_id)
        if key not in self._cache:
            try:
                self._cache[key] = self._cost(name, call, fused)
            except NotReplayed as exc:  # kept as its message: an exception keeps its traceback's frames alive
                self._cache[key] = _Failed(str(exc))
        got = self._cache[key]
        if isinstance(got, _Failed):
            raise NotReplayed(got.why)
        return got

    def _spend(self, route: str) -> None:
        """One call of ``route``'s allowance; past it the call is not rebuilt."""
        if not self._left[route]:
            self.calls["past the limit"] += 1
            raise NotReplayed(f"past the limit of {self._limit:,} calls rebuilt per trace "
                              "(set ROOFLINE_MAX_TRACE_CALLS to raise it)")
        self._left[route] -= 1

    def _cost(self, name: str, call: Mapping[str, Any], fused: bool) -> Costed | None | str:
        overloads = self._packet(name)
        types = call.get("Input type")
        dims = call.get("Input Dims")
        if not isinstance(types, list) or not isinstance(dims, list) or len(types) != len(dims):
            raise NotReplayed("no shapes recorded")
        strides = call.get("Input Strides")
        strides = strides if isinstance(strides, list) and len(strides) == len(types) else [None] * len(types)
        concrete = call.get("Concrete Inputs")
        concrete = concrete if isinstance(concrete, list) and len(concrete) == len(types) else [""] * len(types)
        recorded: _Columns = (types, dims, strides, concrete)
        short = name.partition("::")[2]
        if self.closed is not None:
            self._spend("closed form")
            try:
                got = self._closed(overloads, short, recorded, fused)
                self.calls["closed form"] += 1
                return got
            except RooflineError:  # a user's cost formula failed: the meta route would say the same
                raise
            except Exception:  # noqa: BLE001 -- Unknown, or a rule that met arguments it did not expect
                self._left["closed form"] += 1  # the meta route decides, at the price of a rebuild
        self._spend("meta")
        self.calls["meta"] += 1
        return self._meta(overloads, short, recorded, fused)

    def _packet(self, name: str) -> list[tuple[Any, int]]:
        """The overloads of op ``name`` ('aten::mm'), in torch's order (cached); :class:`NotReplayed` for an op this
        torch does not have."""
        got = self._overloads.get(name)
        if got is None:
            ns, _, short = name.partition("::")
            packet = None
            if ns.isidentifier() and short.isidentifier() and not ns.startswith("__"):
                try:
                    packet = getattr(getattr(self.torch.ops, ns), short)
                except Exception:  # torch.ops raises AttributeError or RuntimeError for an op it does not have
                    packet = None
            if not isinstance(packet, self.torch._ops.OpOverloadPacket):
                raise NotReplayed("no such op in this torch")
            got = self._overloads[name] = [(op, len(op._schema.arguments)) for op in
                                           (getattr(packet, o) for o in packet.overloads())]
        return got

    def _closed(self, overloads: list[tuple[Any, int]], short: str, recorded: _Columns, fused: bool
                ) -> Costed | None | str:
        """The meta route's first overload, its outputs in closed form (:mod:`.shapes`); :class:`Unknown` where
        the closed form cannot say (the meta route then decides, from the same first overload on)."""
        assert self.closed is not None
        n = len(recorded[0])
        for op, arity in overloads:
            if arity != n:
                continue
            try:
                args, kwargs = self._arguments(op, *recorded, tensor=self._recorded)
            except NotReplayed:
                continue
            if not fused and self.composite(op):
                return "composite"
            out = self.closed.outputs(op, args, kwargs)
            return self._finish(op, short, args, kwargs, out, fused)
        raise Unknown("no overload takes the recorded arguments")

    def _meta(self, overloads: list[tuple[Any, int]], short: str, recorded: _Columns, fused: bool
              ) -> Costed | None | str:
        """The first overload whose schema takes the recorded arguments and which runs on meta tensors, costed."""
        why = "no overload matches the recorded argument types"
        n = len(recorded[0])
        for op, arity in overloads:
            if arity != n:
                continue
            try:
                args, kwargs = self._arguments(op, *recorded, tensor=self._tensor)
            except NotReplayed as exc:
                why = str(exc)
                continue
            except Exception as exc:  # recorded values torch refuses (too many dims, sizes past int64, ...)
                why = f"its recorded arguments are not valid ({type(exc).__name__})"
                continue
            if not fused and self.composite(op):
                return "composite"
            try:
                out = op(*args, **kwargs)
            except Exception as exc:  # the recorded call does not run on meta tensors: try the next overload
                why = f"it does not run on meta tensors ({type(exc).__name__})"
                continue
            return self._finish(op, short, args, kwargs, out, fused)
        raise NotReplayed(why)

    def _finish(self, op: Any, short: str, args: list[Any], kwargs: dict[str, Any], out: Any, fused: bool
                ) -> Costed | None:
        """One call's cost from its arguments and outputs (meta tensors or recorded ones): a fused function's
        (:func:`~roofline.frontends.torch.fused_call`), else the recorder's."""
        if fused:
            from roofline.frontends.torch import attention_dims, fused_call

            fname, formula, ins, outs, attrs = fused_call(short, args, kwargs, out, self.rec.Tensor)
            fc = self.rec.fused_cost(fname, formula, ins, outs, **attrs)
            return (*fc, attention_dims(ins) if fc[1].kind == "attention" else None)
        before = len(self.rec.ops.unsupported)
        got = self._costed(op, args, kwargs, out)
        if len(self.rec.ops.unsupported) != before:
            self.unsupported.add(str(op.overloadpacket))
        if got is None:
            return None
        from roofline.frontends.torch import matmul_dims

        return (*got, matmul_dims(got[1], getattr(out, "shape", None)))

    def _costed(self, op: Any, args: list[Any], kwargs: dict[str, Any], out: Any) -> Any:
        """The recorder's cost of one replayed call; a user's cost formula that raises is one line naming the op
        (as ``from_torch`` names it), never a traceback."""
        from roofline.core.errors import first_line

        try:
            return self.rec.cost_of(op, tuple(args), kwargs, out)
        except RooflineError:
            raise
        except Exception as exc:
            raise RooflineError(f"the cost of op {op.overloadpacket} failed: {type(exc).__name__}: "
                                f"{first_line(exc)} (a cost formula given with roofline.work.costs.register_op?)") from exc

    def _arguments(self, op: Any, types: list[Any], dims: list[Any], strides: list[Any], concrete: list[Any],
                   tensor: Any) -> tuple[list[Any], dict[str, Any]]:
        """The call's arguments for ``op``'s schema, each tensor made by ``tensor(recorded type, dims, strides)``
        (a meta tensor, or a :class:`~.shapes.Recorded` one)."""
        schema = self._schemas.get(op)
        if schema is None:
            schema = self._schemas[op] = [_Arg.of(a) for a in op._schema.arguments]
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for a, t, d, s, c in zip(schema, types, dims, strides, concrete, strict=True):
            v = self._value(a, t, d, s, c, tensor)
            if a.kwarg_only:
                kwargs[a.name] = v
            else:
                args.append(v)
        return args, kwargs

    def _value(self, arg: _Arg, recorded: Any, dims: Any, strides: Any, concrete: Any, tensor: Any) -> Any:
        inner = arg.inner
        if recorded == "" or recorded is None:
            if arg.optional or arg.device:
                return self.meta if arg.device else None
            if arg.has_default:
                return arg.default
            raise NotReplayed(f"argument {arg.name!r} was not recorded")
        if inner == "Tensor":
            if recorded in _NOT_TENSORS:
                raise NotReplayed(f"argument {arg.name!r} was recorded as {recorded}, not a tensor")
            return tensor(recorded, dims, strides)
        if inner in ("List[Tensor]", "List[Optional[Tensor]]"):
            if recorded != "TensorList" or not isinstance(dims, list):
                raise NotReplayed(f"argument {arg.name!r} is not a recorded tensor list")
            return [tensor("", d, None) for d in dims]
        if recorded in DTYPES or recorded == "TensorList":  # a tensor (a 0-dim one given for a number), or a list
            raise NotReplayed(f"argument {arg.name!r} is a tensor where the schema has {inner}")
        if arg.device:
            return self.meta
        if inner == "Generator":
            return None
        value = self._literal(concrete)
        if value is None:
            if arg.has_value:
                return arg.default
            raise NotReplayed(f"the value of {arg.name!r} was not recorded")
        if inner.startswith("List[") and recorded != "ScalarList":
            raise NotReplayed(f"argument {arg.name!r} is not a list")
        if inner in _NUMBERS and recorded != "Scalar":
            raise NotReplayed(f"argument {arg.name!r} is not a scalar")
        if arg.dtype:
            return getattr(self.torch, SCALAR_TYPES[value]) \
                if isinstance(value, int) and 0 <= value < len(SCALAR_TYPES) else None
        return list(value) if isinstance(value, list) else value  # a copy: the op may keep the list

    def _literal(self, text: Any) -> Any:
        """:func:`_literal`, remembered for short texts (the same '1', 'False', '[16]' recur)."""
        if not isinstance(text, str) or len(text) > 64:
            return _literal(text)
        got = self._literals.get(text, _MISSING)
        if got is _MISSING:
            got = _literal(text)
            if len(self._literals) < 100_000:
                self._literals[text] = got
        return got

    def _dtype(self, recorded: Any) -> Any:
        torch = self.torch
        return getattr(torch, DTYPES.get(recorded, "float32"), torch.float32) if recorded else torch.float32

    @staticmethod
    def _sizes(dims: Any, strides: Any) -> Any:
        """The strides to use (None: contiguous); :class:`NotReplayed` when dims are not a list of sizes."""
        if not isinstance(dims, list) or not all(isinstance(x, int) and x >= 0 for x in dims):
            raise NotReplayed("a tensor's dims are not a list of sizes")
        if isinstance(strides, list) and len(strides) == len(dims) and all(isinstance(x, int) for x in strides):
            return strides
        return None

    def _tensor(self, recorded: Any, dims: Any, strides: Any) -> Any:
        """A meta tensor of the recorded dtype, dims and strides."""
        dtype = self._dtype(recorded)
        strides = self._sizes(dims, strides)
        if strides is not None:
            return self.torch.empty_strided(dims, strides, dtype=dtype, device="meta")
        return self.torch.empty(dims, dtype=dtype, device="meta")

    def _recorded(self, recorded: Any, dims: Any, strides: Any) -> Recorded:
        """A :class:`~.shapes.Recorded` tensor as :meth:`_tensor` would make it (:class:`Unknown` where torch
        might refuse it)."""
        assert self.closed is not None
        if type(dims) is not list or not all(type(x) is int and x >= 0 for x in dims):
            raise Unknown("not a list of sizes")  # the meta route says why
        given = type(strides) is list and len(strides) == len(dims) and all(type(x) is int for x in strides)
        return self.closed.tensor(tuple(dims), self._dtype(recorded), tuple(strides) if given else None)


def _literal(text: Any) -> Any:
    """A recorded scalar or scalar list ('1', '0.', 'False', '[1, 1]', '[False, True]'); None when not recorded."""
    if not isinstance(text, str) or not text or len(text) > 10_000:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        try:
            return float(text)  # 'inf', 'nan'
        except ValueError:
            return None
