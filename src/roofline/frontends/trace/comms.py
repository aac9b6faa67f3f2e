"""What a collective looks like in a trace: one matcher for every place a collective is detected.

* GPU: NCCL's kernels, by name.  NCCL >= 2.19 names them ``ncclDevKernel_<Collective>_...``
  (``ncclDevKernel_AllReduce_Sum_f32_RING_LL``), NCCL 2.8 to 2.18 ``ncclKernel_<Collective>_...``
  (``ncclKernel_AllReduce_RING_LL_Sum_float``), NCCL 2.7 and older ``nccl<Collective><Algo>...Kernel_...``
  (``ncclAllReduceRingLLKernel_sum_f32``).  Any other kernel whose name holds ``nccl`` is still
  communication (its name is its kind).
* CPU: gloo's ``gloo:<collective>`` scopes (on gloo's worker thread), ``record_param_comms`` (what
  torch.distributed records per collective, with its message, process group and sequence number:
  :data:`GROUP_KEY`, :data:`SEQ_KEY`), and the ``c10d::`` / ``nccl:`` wrappers around them.

Names are tested once per distinct name (:func:`name_mask`), never once per event.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

COMMS_EVENT = "record_param_comms"  # a cpu_op with the collective's message sizes (NCCL, gloo and others)
#: cpu_op / annotation names that are communication, not compute (their time is waiting and moving data)
CPU_PREFIXES = ("c10d::", "record_param_comms", "gloo:", "nccl:")
#: ``record_param_comms`` arguments (torch.profiler): the process group's name and the collective's sequence
#: number within it (torch >= 2.5; the same on every member of the group for the same collective)
GROUP_KEY, SEQ_KEY = "Process Group Name", "Seq"
_COLLECTIVES = "AllReduce|AllGather|ReduceScatter|Broadcast|Reduce|SendRecv|Send|Recv|AllToAll"
_NCCL = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)|nccl(" + _COLLECTIVES + r")[A-Za-z0-9]*Kernel")


def nccl_kind(name: str) -> str | None:
    """The collective an NCCL kernel runs (``AllReduce``), the whole name for another kernel naming NCCL, or
    None for a kernel that is not communication."""
    m = _NCCL.match(name)
    if m:
        return m.group(1) or m.group(2)
    return name if "nccl" in name.lower() else None


def is_nccl_kernel(name: str) -> bool:
    return nccl_kind(name) is not None


def is_cpu_comm(name: str) -> bool:
    return name.startswith(CPU_PREFIXES)


def collective_kind(name: str) -> str:
    """A short collective name the ranks agree on: an NCCL kernel's collective (its name carries dtype and
    algorithm, which may differ), a gloo scope's without ``gloo:``, else the name."""
    kind = nccl_kind(name)
    if kind is not None and kind != name:
        return kind
    return name.removeprefix("gloo:")


def name_mask(names: Sequence[str], codes: np.ndarray, test: Callable[[str], bool]) -> np.ndarray:
    """``test`` of each event's name (``codes`` into ``names``), evaluated once per distinct name."""
    per_name = np.fromiter((test(n) for n in names), dtype=bool, count=len(names))
    return per_name[codes] if len(codes) else np.zeros(0, dtype=bool)
