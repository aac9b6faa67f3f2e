"""Number formats as data: element width, block structure and scales, and the matrix roof each runs on.

A *format* is how a tensor is stored and fed to a matrix unit: plain ``bf16``; ``fp8`` with one scale per
tensor; or a block-scaled format in which every block of elements along the reduction axis (K) shares one
scale.  The bytes model counts the scales as traffic; the roof is chosen by the precision key the format
computes on (``fp8``, ``fp6``, ``fp4``), native where the device publishes that roof, else the first roof of
its ``upcast`` chain (a device without FP4 units dequantizes NVFP4 weights to FP8 or BF16 before its GEMM).
No code outside this table branches on a format's name.

Sources:
- OCP Microscaling Formats (MX) Specification v1.0 (Open Compute Project, 2023-09), sections 5.1-5.2:
  MXFP8 (E4M3/E5M2), MXFP6 (E3M2/E2M3), MXFP4 (E2M1) elements; blocks of k = 32 elements; one shared
  E8M0 scale (8 bits) per block.
- NVIDIA, "Pretraining Large Language Models with NVFP4", arXiv:2509.25149 (2025), section 2: NVFP4 is
  E2M1 elements in blocks of 16 with one E4M3 scale per block, plus one FP32 scale per tensor; the training
  recipe (section 4) keeps selected layers in BF16, applies a random Hadamard transform to the inputs of the
  weight-gradient GEMM, and chooses weight scales over 16x16 2D blocks so the transposed copy holds the same
  values; the copy is still written, and a GEMM still reads one scale per 16 elements along K, which is what
  is stored here.
- DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, section 3.3.2: fine-grained FP8 with 1x128
  activation tiles and 128x128 weight blocks, FP32 scales (``fp8-block``).
- Micikevicius et al., "FP8 Formats for Deep Learning", arXiv:2209.05433: per-tensor scaling; Transformer
  Engine's delayed scaling (amax history) and current scaling (amax of this tensor, one extra reduction).

>>> f = get("mxfp8")
>>> f.bits_per_element("weight")   # 8 element bits + one 8-bit scale per 32 elements
8.25
>>> get("nvfp4").bits_per_element("activation")   # 4 + 8/16
4.5
>>> tensor_bytes("nvfp4", 4096 * 4096, "weight")   # 8 MiB of elements + 1 MiB of scales + 4 B tensor scale
9437188.0
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.errors import RooflineError

#: the roles a tensor plays in a GEMM; fp8-block scales activations and weights differently
ROLES = ("activation", "weight", "gradient")


@dataclass(frozen=True)
class Block:
    """One scale shared by ``rows x cols`` elements (cols along K); ``scale_bits`` per scale."""

    rows: int
    cols: int
    scale_type: str
    scale_bits: int

    @property
    def elements(self) -> int:
        return self.rows * self.cols


@dataclass(frozen=True)
class NumberFormat:
    """A storage format: ``element_bits`` per element, per-role blocks, a per-tensor scale, its roof."""

    name: str
    element: str  # the element encoding, e.g. "E4M3", "E2M1"
    element_bits: int
    roof: str  # the precision key of the matrix roof it runs on natively
    upcast: tuple[str, ...]  # roofs tried in order on a device without ``roof``
    blocks: tuple[tuple[str, Block], ...] = ()  # role -> block; a role not listed has no block scales
    tensor_scale_bits: int = 0  # one per tensor (per-tensor fp8, NVFP4's second level)
    scaling: str = ""  # "delayed" or "current" for per-tensor fp8: current adds an amax pass
    source: str = ""
    #: the kernel family its GEMMs run as, the key their cited efficiency curves are looked up by before the roof's
    #: (per-tensor fp8, delayed or current, is one cuBLAS kernel; a block-scaled format is its own)
    kernel: str = ""
    #: elements per random Hadamard transform applied to the weight-gradient GEMM's inputs (0: none)
    wgrad_hadamard: int = 0

    def block(self, role: str) -> Block | None:
        if role not in ROLES:
            raise RooflineError(f"format role {role!r}: give one of {', '.join(ROLES)}")
        return dict(self.blocks).get(role)

    def bits_per_element(self, role: str) -> float:
        """Element bits plus the block scales spread over their elements (the per-tensor scale is not)."""
        b = self.block(role)
        return self.element_bits + (b.scale_bits / b.elements if b else 0.0)

    @property
    def block_scaled(self) -> bool:
        return bool(self.blocks)

    @property
    def low_precision(self) -> bool:
        """Narrower than 16 bits: a training step keeps a cast copy of the GEMM weights and inputs."""
        return self.element_bits < 16

    @property
    def weight_copy_bytes(self) -> float:
        """Bytes per GEMM parameter of a low-precision training step's cached weight copies: the row-wise
        copy and the transposed one the data-gradient GEMM reads (Transformer Engine casts them once per step
        and keeps them over its micro-batches), scales included; 0 for a 16-bit format."""
        return 2 * self.bits_per_element("weight") / 8 if self.low_precision else 0.0


def _k(n: int, scale_type: str, bits: int) -> Block:
    return Block(1, n, scale_type, bits)


_MX = "OCP Microscaling Formats (MX) Specification v1.0 (2023), s5.1-5.2"
_NV = "NVIDIA, Pretraining Large Language Models with NVFP4, arXiv:2509.25149, s2"
_DS = "DeepSeek-V3 Technical Report, arXiv:2412.19437, s3.3.2"
_FP8 = "Micikevicius et al., FP8 Formats for Deep Learning, arXiv:2209.05433"

FORMATS: dict[str, NumberFormat] = {f.name: f for f in (
    NumberFormat("bf16", "E8M7", 16, "bf16", (), source="IEEE-style bfloat16"),
    NumberFormat("fp16", "E5M10", 16, "fp16", (), source="IEEE 754 binary16"),
    NumberFormat("fp8", "E4M3", 8, "fp8", ("bf16",), tensor_scale_bits=32, scaling="delayed", source=_FP8,
                 kernel="fp8-tensor"),
    NumberFormat("fp8-current", "E4M3", 8, "fp8", ("bf16",), tensor_scale_bits=32, scaling="current",
                 source=_FP8, kernel="fp8-tensor"),
    NumberFormat("fp8-block", "E4M3", 8, "fp8", ("bf16",),
                 blocks=(("activation", _k(128, "fp32", 32)), ("gradient", _k(128, "fp32", 32)),
                         ("weight", Block(128, 128, "fp32", 32))), source=_DS, kernel="fp8-block"),
    NumberFormat("mxfp8", "E4M3", 8, "fp8", ("bf16",),
                 blocks=tuple((r, _k(32, "E8M0", 8)) for r in ROLES), source=_MX, kernel="mxfp8"),
    NumberFormat("mxfp6", "E2M3", 6, "fp6", ("fp8", "bf16"),
                 blocks=tuple((r, _k(32, "E8M0", 8)) for r in ROLES), source=_MX, kernel="mxfp6"),
    NumberFormat("mxfp4", "E2M1", 4, "fp4", ("fp8", "bf16"),
                 blocks=tuple((r, _k(32, "E8M0", 8)) for r in ROLES), source=_MX, kernel="mxfp4"),
    NumberFormat("nvfp4", "E2M1", 4, "fp4", ("fp8", "bf16"),
                 blocks=tuple((r, _k(16, "E4M3", 8)) for r in ROLES), tensor_scale_bits=32, source=_NV,
                 kernel="nvfp4", wgrad_hadamard=16),
)}


#: the formats a training step's GEMMs run in (``plan --train --precision``): bf16 and the low-precision recipes,
#: each with its quantize passes in the op table (:func:`roofline.llm.training.cast_ops`)
TRAINING = ("bf16", "fp8", "fp8-current", "fp8-block", "mxfp8", "nvfp4")


def get(name: str) -> NumberFormat:
    """The format named ``name`` (case ignored); one line naming the known ones otherwise."""
    key = name.strip().lower() if isinstance(name, str) else name
    fmt = FORMATS.get(key) if isinstance(key, str) else None
    if fmt is None:
        raise RooflineError(f"unknown number format {name!r}; give one of {', '.join(FORMATS)}")
    return fmt


def tensor_bytes(fmt: str | NumberFormat, elements: float, role: str, tensors: int = 1) -> float:
    """Bytes of ``tensors`` tensors of ``elements`` elements each in ``fmt``: elements, block scales
    (one per started block, so a partial block still pays its scale) and the per-tensor scales."""
    f = get(fmt) if isinstance(fmt, str) else fmt
    b = f.block(role)
    per = elements * f.element_bits / 8
    if b is not None:
        per += -(-elements // b.elements) * b.scale_bits / 8  # ceil, for arrays too
    return tensors * (per + f.tensor_scale_bits / 8)


@dataclass(frozen=True)
class QuantizeCost:
    """A quantize (or requantize) pass over one tensor: vector FLOPs, bytes read, bytes written."""

    flops: float
    bytes_read: float
    bytes_written: float


#: vector FLOPs per element of a quantize pass: |x| and max for the amax, one multiply by the scale
#: (the round-to-format conversion is a conversion instruction, not a FLOP)
QUANTIZE_FLOPS_PER_ELEMENT = 3


def quantize_cost(fmt: str | NumberFormat, elements: float, role: str, source_bits: int = 16,
                  both_axes: bool = False) -> QuantizeCost:
    """Cost of casting one ``source_bits`` tensor of ``elements`` to ``fmt``.

    Read once; written once per copy: ``both_axes`` writes the row-wise and the column-wise (transposed)
    copy a block-scaled training step needs for its transposed GEMMs, scales included.  A per-tensor
    format with current scaling reads the tensor a second time for its amax; with delayed scaling the amax
    is taken in the same pass (Transformer Engine's fused cast-transpose-amax).

    >>> c = quantize_cost("mxfp8", 1024, "activation", both_axes=True)
    >>> c.bytes_read, c.bytes_written    # 2 KiB read; two copies of 1024 B + 32 scale bytes
    (2048.0, 2112.0)
    """
    f = get(fmt) if isinstance(fmt, str) else fmt
    copies = 2 if both_axes else 1
    reads = 2 if f.scaling == "current" else 1
    return QuantizeCost(QUANTIZE_FLOPS_PER_ELEMENT * elements, reads * elements * source_bits / 8,
                        copies * tensor_bytes(f, elements, role))


def matrix_roof(fmt: str | NumberFormat, available: set[str] | frozenset[str]) -> tuple[str, bool]:
    """The roof key ``fmt`` computes on, given the device's matrix roofs ``available``, and whether it
    is native.  One line when neither the native roof nor any of its upcast chain is there."""
    f = get(fmt) if isinstance(fmt, str) else fmt
    if f.roof in available:
        return f.roof, True
    for r in f.upcast:
        if r in available:
            return r, False
    raise RooflineError(f"format {f.name}: the device has no {f.roof} matrix roof and none of "
                        f"{', '.join(f.upcast) or 'no upcast'} to run it on")
