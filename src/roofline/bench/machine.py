"""What the OS says about this machine: CPU model, caches, memory, library versions.

Everything here reads files (``/proc/cpuinfo``, ``/proc/meminfo``, sysfs) and
tolerates their absence: on a platform without them the fields are missing,
never an error.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
from pathlib import Path
from typing import Any

from roofline.bench import host

SYSFS_CACHE = Path("/sys/devices/system/cpu")


def cpu_model() -> str:
    """'AMD EPYC 9R14 96-Core Processor' from /proc/cpuinfo (:func:`roofline.bench.host.host_cpu`),
    else platform.processor()."""
    name = host.host_cpu().model_name
    return name or platform.processor() or platform.machine() or "unknown CPU"


def clock_mhz() -> float | None:
    """Maximum clock from cpufreq when readable, else the current 'cpu MHz' of /proc/cpuinfo."""
    cpu = host.host_cpu()
    return cpu.max_mhz if cpu.max_mhz is not None else cpu.mhz


def cpu_flags() -> set[str]:
    """The ISA flags of :func:`roofline.bench.host.host_cpu` (the one place that reads them)."""
    return set(host.host_cpu().flags)


def _parse_size(text: str) -> float | None:
    m = re.match(r"^\s*(\d+)\s*([KMG]?)", text)
    if not m:
        return None
    return float(m.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[m.group(2)]


def sysfs_caches(threads: int) -> dict[str, dict[str, Any]]:
    """Data/unified caches per level as the OS reports them, for ``threads`` threads.

    Returns e.g. ``{"L2": {"size": 1048576, "instances": 2, "capacity": 2097152}}``:
    ``size`` per cache, ``instances`` how many separate caches the machine has at
    that level, ``capacity`` what ``threads`` threads spread one per cache can use
    (size x min(threads, instances)).  Empty when sysfs is not readable.
    """
    out: dict[str, dict[str, Any]] = {}
    try:
        cpus = sorted(p for p in SYSFS_CACHE.glob("cpu[0-9]*") if (p / "cache").is_dir())
    except OSError:
        return out
    groups: dict[str, set[str]] = {}
    for cpu in cpus:
        for idx in sorted((cpu / "cache").glob("index*")):
            try:
                kind = (idx / "type").read_text().strip()
                if kind not in ("Data", "Unified"):
                    continue
                level = "L" + (idx / "level").read_text().strip()
                size = _parse_size((idx / "size").read_text())
                shared = (idx / "shared_cpu_list").read_text().strip() if (idx / "shared_cpu_list").exists() else cpu.name
            except OSError:
                continue
            if size is None:
                continue
            out.setdefault(level, {"size": size})
            groups.setdefault(level, set()).add(shared)
    for level, info in out.items():
        info["instances"] = len(groups.get(level, ())) or 1
        info["capacity"] = info["size"] * min(max(threads, 1), info["instances"])
    return out


def meminfo() -> dict[str, float]:
    """/proc/meminfo in bytes (MemTotal, MemAvailable, ...); empty when unreadable."""
    out: dict[str, float] = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts:
                out[key] = float(parts[0]) * (1024 if len(parts) > 1 and parts[1].lower() == "kb" else 1)
    except (OSError, ValueError):
        pass
    return out


def available_memory() -> float | None:
    """Free memory in bytes: psutil when installed, else MemAvailable from /proc/meminfo."""
    try:
        import psutil

        return float(psutil.virtual_memory().available)
    except ImportError:
        pass
    return meminfo().get("MemAvailable")


def blas_info() -> dict[str, Any]:
    """The BLAS numpy uses: threadpoolctl's report when installed, else numpy.show_config."""
    try:
        from threadpoolctl import threadpool_info

        blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        if blas:
            b = blas[0]
            return {"name": b.get("internal_api", ""), "version": b.get("version", ""),
                    "threads": b.get("num_threads"), "via": "threadpoolctl"}
    except ImportError:
        pass
    try:
        import numpy as np

        cfg = np.show_config(mode="dicts")  # numpy >= 1.26
        blas_cfg = cfg.get("Build Dependencies", {}).get("blas", {})
        return {"name": blas_cfg.get("name", ""), "version": blas_cfg.get("version", ""), "via": "numpy.show_config"}
    except Exception:  # older numpy prints instead of returning; the name is then unknown
        return {"name": "unknown", "via": "none"}


def versions() -> dict[str, str]:
    """numpy / numba / torch / python versions (those installed)."""
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("numpy", "numba", "torch"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def machine_metadata() -> dict[str, Any]:
    """Everything a measurement should carry about where it was taken."""
    meta: dict[str, Any] = {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "clock_mhz": clock_mhz(),
        "platform": platform.platform(),
        "versions": versions(),
        "blas": blas_info(),
        # the vector / matrix extensions that set the compute ceilings (AMX and AVX512-BF16 speed up bf16 GEMM)
        "isa": sorted(cpu_flags() & {"fma", "avx2", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni",
                                     "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve"}),
        "date": now(),
    }
    mem = meminfo()
    if "MemTotal" in mem:
        meta["memory_total_bytes"] = mem["MemTotal"]
    return meta


#: ISA flags that change what the bench measures (vector width, FMA, native low precision)
FINGERPRINT_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16",
                     "asimd", "asimdhp", "bf16", "sve")


def fingerprint(extra: str = "") -> str:
    """What a cached measurement must match to be used here: CPU model, logical CPUs, ISA flags.

    >>> "CPUs" in fingerprint()
    True
    """
    isa = ",".join(sorted(cpu_flags() & set(FINGERPRINT_FLAGS))) or "none"
    return f"{cpu_model()}; {os.cpu_count()} CPUs; isa {isa}" + (f"; {extra}" if extra else "")


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
