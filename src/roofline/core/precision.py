"""The one precision table: every number format the data model knows, its width, and how files spell it.

A *precision* names the compute ceiling an op runs on and, with its width, how
many bytes an element takes.  Every module that turns a user's spelling, a
torch dtype, a numpy dtype or an ONNX element type into a precision (or a
precision into bits) reads this table; nothing else keeps its own.

>>> from roofline.core.precision import BITS, canonical, of_dtype
>>> canonical("BFloat16"), canonical("half"), canonical("8"), BITS["int4"]
('bf16', 'fp16', 'int8', 4)
>>> of_dtype("torch.float8_e4m3fn"), of_dtype("float64"), of_dtype("int64")
('fp8', 'fp64', '')
"""

from __future__ import annotations

from typing import Any

#: Every precision, widest float first, then the sub-byte floats (appended last, so the codes of the older
#: ones are unchanged).  ``tf32`` is fp32 storage computed on TF32 tensor cores.  ``fp6`` (E2M3 / E3M2) and
#: ``fp4`` (E2M1) name the roofs Blackwell and CDNA 4 publish for their 6- and 4-bit tensor-core rates; the
#: block scales of the formats built on them (MXFP6, MXFP4, NVFP4) are the formats' bytes, not the element's.
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "fp6", "fp4")

#: Bits per element as stored (tf32 is stored as fp32; fp6 and fp4 packed, without their block scales).
BITS: dict[str, int] = {"fp64": 64, "fp32": 32, "tf32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4,
                        "fp6": 6, "fp4": 4}

#: Other spellings users and files write for a precision (lower case).
ALIASES: dict[str, str] = {
    "float64": "fp64", "double": "fp64",
    "float32": "fp32", "float": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16", "half": "fp16",
    "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8",
    "float6": "fp6", "e2m3": "fp6", "e3m2": "fp6", "float4": "fp4", "e2m1": "fp4",
}

#: A bare width stands for the precision LLM configs mean by it (16 -> bf16, 8 -> int8).
WIDTHS: dict[int, str] = {32: "fp32", 16: "bf16", 8: "int8", 4: "int4"}

#: torch / numpy dtype name -> precision of the ceiling it computes on ("" = not a compute precision).
#: complex types compute in their component float; fp8 and 4-bit variants fold into fp8 / int4.
DTYPES: dict[str, str] = {
    "float64": "fp64", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "int8": "int8", "uint8": "int8",
    "complex64": "fp32", "complex128": "fp64", "int4": "int4", "uint4": "int4", "quint4x2": "int4",
}

#: Spellings accepted for a tensor's dtype on the command line (``--input 1x3:bf16``) -> torch dtype name.
TORCH_DTYPES: dict[str, str] = {
    "fp32": "float32", "float32": "float32", "float": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16",
    "fp16": "float16", "float16": "float16", "half": "float16", "fp64": "float64", "float64": "float64",
    "double": "float64", "int64": "int64", "long": "int64", "int32": "int32", "int": "int32", "int16": "int16",
    "int8": "int8", "uint8": "uint8", "bool": "bool", "fp8": "float8_e4m3fn", "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
}

#: ONNX TensorProto.DataType code -> (bytes per element, precision of the compute roof).
#: Integer/bool tensors (shape arithmetic, masks, indices) run on the vector ALUs: fp32 is the
#: nearest ceiling the data model has for them.  FLOAT4E2M1 has no fp4 ceiling: int4 (same width).
ONNX_ELEM: dict[int, tuple[float, str]] = {
    1: (4, "fp32"), 2: (1, "int8"), 3: (1, "int8"), 4: (2, "fp32"), 5: (2, "fp32"), 6: (4, "fp32"),
    7: (8, "fp32"), 8: (8, "fp32"), 9: (1, "fp32"), 10: (2, "fp16"), 11: (8, "fp64"), 12: (4, "fp32"),
    13: (8, "fp32"), 14: (8, "fp32"), 15: (16, "fp64"), 16: (2, "bf16"), 17: (1, "fp8"), 18: (1, "fp8"),
    19: (1, "fp8"), 20: (1, "fp8"), 21: (0.5, "int4"), 22: (0.5, "int4"), 23: (0.5, "int4"),
    24: (1, "fp8"), 25: (0.25, "int4"), 26: (0.25, "int4"),
}
#: ONNX element types whose precision names a real compute ceiling (used to pick an op's precision).
ONNX_NUMERIC = frozenset({1, 2, 3, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23, 24})


def canonical(value: Any, widths: bool = True) -> str | None:
    """A precision from a user's spelling ('BF16', 'half', 16, '8'); None when it names none.

    With ``widths`` a bare bit count is accepted (:data:`WIDTHS`).
    """
    if isinstance(value, bool):
        return None
    if widths and isinstance(value, int):
        return WIDTHS.get(value)
    if not isinstance(value, str):
        return None
    key = value.strip().lower()
    if widths and key.isdigit():
        return WIDTHS.get(int(key))
    return key if key in BITS else ALIASES.get(key)


def of_dtype(dtype: Any) -> str:
    """The precision a torch or numpy dtype computes on ('torch.float8_e4m3fn' -> 'fp8'); '' for none."""
    name = str(dtype).replace("torch.", "")
    if name.startswith("float8"):
        return "fp8"
    if name.startswith("float4"):
        return "int4"
    return DTYPES.get(name, "")


def wider(a: str, b: str) -> str:
    """The precision a mixed op computes in: the wider of the two; ties go to ``a``."""
    return a if BITS[a] >= BITS[b] else b
