"""The CPU that ISA-dependent code sees: one record, read once, that tests can force to any family.

Every decision the bench makes from the ISA reads :func:`host_cpu`: which precisions are native
(:func:`roofline.bench.spec.native_precisions`), the FMA kernel's shape
(:func:`roofline.bench.fma.host_shape`), the spec roof (:func:`roofline.bench.spec.this_cpu_spec`),
which GEMMs are measured (:func:`roofline.bench.gemm.gemm_plan`) and the cache fingerprint
(:func:`roofline.bench.machine.fingerprint`).  None of them reads ``/proc/cpuinfo`` itself.

:func:`forced` makes :func:`host_cpu` return another CPU for a block, so those decisions can be
tested for every family on any host.  Kernels are another matter: they run on the silicon, so
:func:`roofline.bench.fma` refuses to compile a kernel for a forced CPU whose vector ISA the real
host lacks (that would be an illegal instruction, not a test).

>>> cpu = HostCpu("x86_64", "AuthenticAMD", 25, 17, flags=frozenset({"avx2", "fma", "avx512f", "avx512_bf16"}))
>>> with forced(cpu):
...     host_cpu().vector_isa()
('avx512f', 'avx2', 'fma')
"""

from __future__ import annotations

import contextlib
import platform
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from roofline.bench import uarch as _uarch

#: the x86 features that decide the FMA kernel's vector width (LLVM and /proc/cpuinfo share these names)
VECTOR_ISA = ("avx512f", "avx2", "fma")
CPUFREQ_MAX = "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"


@dataclass(frozen=True)
class HostCpu:
    """What /proc/cpuinfo says of the first processor, plus the architecture.

    ``vendor_id`` is x86's ``GenuineIntel``/``AuthenticAMD`` or Arm's implementer (``0x41``);
    ``flags`` are /proc/cpuinfo's names (x86 ``flags``, Arm ``Features``).
    """

    arch: str  # "x86_64" or "aarch64"
    vendor_id: str = ""
    family: int = -1
    model: int = -1
    cpu_part: str = ""
    model_name: str = ""
    flags: frozenset[str] = field(default_factory=frozenset)
    mhz: float | None = None  # /proc/cpuinfo's current 'cpu MHz'
    max_mhz: float | None = None  # cpufreq's cpuinfo_max_freq (absent on most VMs)

    @property
    def is_arm(self) -> bool:
        return self.arch in ("aarch64", "arm64")

    def info(self) -> dict[str, Any]:
        """The fields as :func:`roofline.bench.uarch.parse_cpuinfo` returns them."""
        out: dict[str, Any] = {"vendor_id": self.vendor_id, "family": self.family, "model": self.model,
                               "flags": set(self.flags), "cpu_part": self.cpu_part}
        if self.model_name:
            out["model_name"] = self.model_name
        if self.mhz is not None:
            out["mhz"] = self.mhz
        if self.max_mhz is not None:
            out["max_mhz"] = self.max_mhz
        return out

    def vector_isa(self) -> tuple[str, ...]:
        """The x86 features among :data:`VECTOR_ISA` this CPU has (none on Arm: NEON is always there)."""
        return () if self.is_arm else tuple(f for f in VECTOR_ISA if f in self.flags)


def _normal_arch(machine: str) -> str:
    m = machine.lower()
    return "aarch64" if m in ("aarch64", "arm64") else m or "unknown"


def from_cpuinfo(text: str, arch: str, max_mhz: float | None = None) -> HostCpu:
    """A :class:`HostCpu` from /proc/cpuinfo text (x86 or aarch64 format), an architecture name and
    cpufreq's maximum clock (MHz) where there is one."""
    info = _uarch.parse_cpuinfo(text)
    mhz = info.get("mhz")
    return HostCpu(arch=_normal_arch(arch), vendor_id=str(info.get("vendor_id", "")),
                   family=int(info.get("family", -1)), model=int(info.get("model", -1)),
                   cpu_part=str(info.get("cpu_part", "")), model_name=str(info.get("model_name", "")),
                   flags=frozenset(info.get("flags", set())),
                   mhz=float(mhz) if isinstance(mhz, (int, float)) else None, max_mhz=max_mhz)


@cache
def _read_host() -> HostCpu:
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        text = ""
    try:
        max_mhz: float | None = float(Path(CPUFREQ_MAX).read_text()) / 1e3  # the file is in kHz
    except (OSError, ValueError):
        max_mhz = None
    return from_cpuinfo(text, platform.machine(), max_mhz)


_FORCED: list[HostCpu] = []


def host_cpu() -> HostCpu:
    """The CPU this process runs on, or the one :func:`forced` put in its place."""
    return _FORCED[-1] if _FORCED else _read_host()


def is_forced() -> bool:
    """True inside :func:`forced` (kernels then refuse to run on an ISA the host may lack)."""
    return bool(_FORCED)


@contextlib.contextmanager
def forced(cpu: HostCpu) -> Iterator[HostCpu]:
    """Make :func:`host_cpu` return ``cpu`` inside the block (for tests of ISA decisions)."""
    _FORCED.append(cpu)
    try:
        yield cpu
    finally:
        _FORCED.remove(cpu)
