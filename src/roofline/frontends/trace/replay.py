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

What a trace cannot say: string arguments (gelu's ``approximate`` is taken as
'none') and lists of optional tensors (``aten::index``'s indices); such calls
are listed as not replayed, with their time.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from roofline.core.errors import RooflineError, require
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


class Replayer:
    """Costs recorded calls; results are cached per (op, recorded arguments)."""

    def __init__(self) -> None:
        self.torch = require("torch", "torch")
        from roofline.frontends.torch import Recorder

        self.rec = Recorder(self.torch, set(), {"Global": ("", "")})
        self._cache: dict[tuple[str, int], Costed | str | None | NotReplayed] = {}
        self._kinds: dict[str, tuple[Any, ...]] = {}
        self.unsupported: set[str] = set()  # ops replayed but without a FLOP formula

    def composite(self, op: Any) -> bool:
        """True for an overload that decomposes into other aten ops before dispatch (what a trace shows as its
        children, and what :func:`roofline.from_torch` never sees)."""
        name = op._schema.name + (f".{op._schema.overload_name}" if op._schema.overload_name else "")
        try:
            return bool(self.torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd"))
        except RuntimeError:  # an overload only TorchScript registers (aten::to.prim_Device): not in the dispatcher
            return False

    def cost(self, name: str, call_id: int, call: Mapping[str, Any], fused: bool = False) -> Costed | None | str:
        """The cost of ``name`` called with ``call`` (an event's recorded arguments); ``None`` for a view or a
        metadata op; the string ``"composite"`` for an op whose children carry its work.

        Raises :class:`NotReplayed` when the call cannot be rebuilt.
        """
        key = (name, call_id)
        if key not in self._cache:
            try:
                self._cache[key] = self._cost(name, call, fused)
            except NotReplayed as exc:
                self._cache[key] = exc
        got = self._cache[key]
        if isinstance(got, NotReplayed):
            raise got
        return got

    def _cost(self, name: str, call: Mapping[str, Any], fused: bool) -> Costed | None | str:
        ns, _, short = name.partition("::")
        packet = None
        if ns.isidentifier() and short.isidentifier() and not ns.startswith("__"):
            try:
                packet = getattr(getattr(self.torch.ops, ns), short)
            except Exception:  # torch.ops raises AttributeError or RuntimeError for an op it does not have
                packet = None
        if not isinstance(packet, self.torch._ops.OpOverloadPacket):
            raise NotReplayed("no such op in this torch")
        types = call.get("Input type")
        dims = call.get("Input Dims")
        if not isinstance(types, list) or not isinstance(dims, list) or len(types) != len(dims):
            raise NotReplayed("no shapes recorded")
        strides = call.get("Input Strides")
        strides = strides if isinstance(strides, list) and len(strides) == len(types) else [None] * len(types)
        concrete = call.get("Concrete Inputs")
        concrete = concrete if isinstance(concrete, list) and len(concrete) == len(types) else [""] * len(types)
        why = "no overload matches the recorded argument types"
        for overload in packet.overloads():
            op = getattr(packet, overload)
            schema = op._schema
            if len(schema.arguments) != len(types):
                continue
            try:
                args, kwargs = self._arguments(schema, types, dims, strides, concrete)
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
            if fused:
                from roofline.frontends.torch import attention_dims, fused_call

                fname, formula, ins, outs, attrs = fused_call(short, args, kwargs, out, self.torch.Tensor)
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
        raise NotReplayed(why)

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

    def _arguments(self, schema: Any, types: list[Any], dims: list[Any], strides: list[Any], concrete: list[Any]
                   ) -> tuple[list[Any], dict[str, Any]]:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for a, t, d, s, c in zip(schema.arguments, types, dims, strides, concrete, strict=True):
            v = self._value(a, t, d, s, c)
            if a.kwarg_only:
                kwargs[a.name] = v
            else:
                args.append(v)
        return args, kwargs

    def _value(self, arg: Any, recorded: Any, dims: Any, strides: Any, concrete: Any) -> Any:
        torch = self.torch
        kind = str(arg.type)
        optional = kind.startswith("Optional[")
        inner = kind[9:-1] if optional else kind
        if recorded == "" or recorded is None:
            if optional or inner == "Device" or arg.name == "device":
                return torch.device("meta") if arg.name == "device" or inner == "Device" else None
            if arg.default_value is not None or arg.has_default_value():
                return arg.default_value
            raise NotReplayed(f"argument {arg.name!r} was not recorded")
        if inner == "Tensor":
            if recorded in _NOT_TENSORS:
                raise NotReplayed(f"argument {arg.name!r} was recorded as {recorded}, not a tensor")
            return self._tensor(recorded, dims, strides)
        if inner in ("List[Tensor]", "List[Optional[Tensor]]"):
            if recorded != "TensorList" or not isinstance(dims, list):
                raise NotReplayed(f"argument {arg.name!r} is not a recorded tensor list")
            return [self._tensor("", d, None) for d in dims]
        if inner == "Device" or arg.name == "device":
            return torch.device("meta")
        if inner == "Generator":
            return None
        if recorded in DTYPES:  # a 0-dim tensor given for a number
            raise NotReplayed(f"argument {arg.name!r} is a tensor where the schema has {inner}")
        value = _literal(concrete)
        if value is None:
            if arg.has_default_value():
                return arg.default_value
            raise NotReplayed(f"the value of {arg.name!r} was not recorded")
        if inner.startswith("List[") and recorded != "ScalarList":
            raise NotReplayed(f"argument {arg.name!r} is not a list")
        if inner in _NUMBERS and recorded != "Scalar":
            raise NotReplayed(f"argument {arg.name!r} is not a scalar")
        if arg.name == "dtype" or inner == "ScalarType":
            return getattr(torch, SCALAR_TYPES[value]) if isinstance(value, int) and 0 <= value < len(SCALAR_TYPES) \
                else None
        return value

    def _tensor(self, recorded: Any, dims: Any, strides: Any) -> Any:
        torch = self.torch
        dtype = getattr(torch, DTYPES.get(recorded, "float32"), torch.float32) if recorded else torch.float32
        if not isinstance(dims, list) or not all(isinstance(x, int) and x >= 0 for x in dims):
            raise NotReplayed("a tensor's dims are not a list of sizes")
        if isinstance(strides, list) and len(strides) == len(dims) and all(isinstance(x, int) for x in strides):
            return torch.empty_strided(dims, strides, dtype=dtype, device="meta")
        return torch.empty(dims, dtype=dtype, device="meta")


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
