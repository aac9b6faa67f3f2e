"""Was the machine ours while we measured?  Contention seen from the OS and from the timings themselves.

A measurement on a shared machine is only a roof if nothing else ran.  This module reads what the OS
says and what the samples say, and names every cause it finds:

- **other work** (``/proc/stat``): CPU time used by everything but this process over a window, in
  cores, against the cores this measurement left free (``cores - threads``); and the tasks
  ``/proc/loadavg`` lists as runnable at a moment this process is idle (between samples);
- **steal and iowait** (``/proc/stat``): the share of CPU time the hypervisor gave to another guest,
  or spent waiting on I/O;
- **CPU time against wall time**: a sample on ``threads`` threads that got less than
  :data:`CPU_SHARE_MIN` x threads x wall of process CPU time had threads waiting for a core;
- **a moving clock**: ``cpu MHz`` of /proc/cpuinfo across the window (on most VMs it is fixed at the
  nominal clock, so this cause can only be seen on bare metal);
- **timings quantised to the scheduler slice**: independent timings that fall on whole multiples of
  a scheduler quantum (:data:`QUANTA`, 4 ms for ``CONFIG_HZ=250``, 8 ms, 10 ms for ``CONFIG_HZ=100``)
  far more often than chance (:func:`quantised`): a thread that waited for a busy core.

Everything here is a pure function of numbers or file text (tested on synthetic samples), except
:func:`snapshot`, which reads the files and tolerates their absence (no cause is then found).

>>> quantised([0.00799, 0.01601, 0.00800, 0.03199])
0.008
>>> quantised([0.00123, 0.00456, 0.0211, 0.0379]) is None
True
>>> sample_disturbed(wall=0.010, cpu=0.008, threads=2)   # 0.8 of a core's CPU time for 2 threads
True
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

#: a sample is disturbed when its process CPU time is under this share of threads x wall time: a thread was
#: off its core for half the sample.  (Not higher: a quiet 2-thread STREAM sample of 64 KiB, many short parallel
#: regions with passively waiting OpenMP threads between them, gets 0.66-0.70 of 2 x wall on a 2-vCPU VM.)
CPU_SHARE_MIN = 0.50
#: other processes may use the cores the measurement left free, plus this many cores, before it is disturbed
OTHERS_MARGIN_CORES = 0.25
STEAL_MAX = 0.05  # share of all CPU time stolen by the hypervisor over a window
IOWAIT_MAX = 0.10  # share of all CPU time in iowait over a window
CLOCK_DRIFT_MAX = 0.10  # max / min - 1 of the clocks /proc/cpuinfo showed over a window
#: candidate scheduler quanta, seconds: the tick at CONFIG_HZ=100 (10 ms), CFS's 8 ms slices, the tick at
#: CONFIG_HZ=250 (4 ms); the largest first (a multiple of 8 ms is one of 4 ms too: the coarser one is named)
QUANTA = (0.010, 0.008, 0.004)
QUANTUM_TOLERANCE = 0.02  # a timing within 2 % of the quantum of a whole multiple of it sits "on" the quantum
QUANTUM_SHARE = 0.5  # flagged when at least half the timings sit on one quantum (chance: about 4 %)
QUANTUM_MIN_TIMINGS = 3
#: extra samples a measurement may take to replace disturbed ones (per call of the sampler: this x repeats)
RESAMPLE_BUDGET = 1.0
#: a run is disturbed when more than this share of its samples stayed disturbed after re-measuring
DISTURBED_SHARE_MAX = 0.2


@dataclass(frozen=True)
class CpuTimes:
    """The machine-wide ``cpu`` line of /proc/stat, in clock ticks."""

    total: float
    idle: float
    iowait: float
    steal: float

    @property
    def busy(self) -> float:
        return self.total - self.idle - self.iowait - self.steal


def parse_stat(text: str) -> tuple[CpuTimes | None, int | None]:
    """(the ``cpu`` line, ``procs_running``) of /proc/stat text; None for what is missing.

    >>> t, running = parse_stat("cpu  100 0 50 800 10 0 0 40 0 0\\nprocs_running 3\\n")
    >>> (t.total, t.idle, t.iowait, t.steal, t.busy, running)
    (1000.0, 800.0, 10.0, 40.0, 150.0, 3)
    """
    cpu: CpuTimes | None = None
    running: int | None = None
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu" and len(parts) >= 5:
            # user nice system idle iowait irq softirq steal guest guest_nice; guest time is inside user
            vals = [float(x) for x in parts[1:11]]
            vals += [0.0] * (10 - len(vals))
            cpu = CpuTimes(sum(vals[:8]), vals[3], vals[4], vals[7])
        elif parts and parts[0] == "procs_running" and len(parts) > 1:
            running = int(parts[1])
    return cpu, running


def parse_loadavg(text: str) -> tuple[float, int] | None:
    """(1-minute load, runnable tasks now) from /proc/loadavg text ('1.09 0.57 0.43 2/96 18069').

    >>> parse_loadavg("1.09 0.57 0.43 2/96 18069")
    (1.09, 2)
    """
    parts = text.split()
    if len(parts) < 4 or "/" not in parts[3]:
        return None
    try:
        return float(parts[0]), int(parts[3].split("/")[0])
    except ValueError:
        return None


def parse_mhz(text: str) -> tuple[float, ...]:
    """Every ``cpu MHz`` of /proc/cpuinfo text."""
    out = []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == "cpu mhz":
            try:
                out.append(float(value))
            except ValueError:
                pass
    return tuple(out)


@dataclass(frozen=True)
class Snapshot:
    """What the OS said at one moment: wall and process CPU seconds, /proc/stat, /proc/loadavg, clocks."""

    wall: float
    process_cpu: float
    cpu: CpuTimes | None = None
    runnable: int | None = None  # /proc/loadavg's runnable tasks, this reader included
    load1: float | None = None
    mhz: tuple[float, ...] = ()
    ticks_per_second: float = 100.0


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def snapshot() -> Snapshot:
    """The OS's view now (fields this platform lacks are None / empty)."""
    cpu, _ = parse_stat(_read("/proc/stat"))
    load = parse_loadavg(_read("/proc/loadavg"))
    try:
        ticks = float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        ticks = 100.0
    return Snapshot(time.perf_counter(), time.process_time(), cpu, load[1] if load else None,
                    load[0] if load else None, parse_mhz(_read("/proc/cpuinfo")), ticks)


def sample_disturbed(wall: float, cpu: float, threads: int) -> bool:
    """True when ``threads`` threads busy for ``wall`` seconds got under :data:`CPU_SHARE_MIN` of that in CPU time."""
    return threads > 0 and wall > 0 and cpu < CPU_SHARE_MIN * threads * wall


def quantised(times: list[float] | tuple[float, ...]) -> float | None:
    """The scheduler quantum (seconds) that at least :data:`QUANTUM_SHARE` of ``times`` sit on, else None.

    A timing sits on quantum q when it is at least q and within :data:`QUANTUM_TOLERANCE` x q of a whole
    multiple of q.  Timings shorter than every quantum cannot show it.
    """
    ts = [t for t in times if t > 0]
    for q in QUANTA:
        long_enough = [t for t in ts if t >= q * (1 - QUANTUM_TOLERANCE)]
        if len(long_enough) < QUANTUM_MIN_TIMINGS:
            continue
        on = sum(1 for t in long_enough if abs(t / q - round(t / q)) <= QUANTUM_TOLERANCE)
        if on >= QUANTUM_MIN_TIMINGS and on / len(long_enough) >= QUANTUM_SHARE:
            return q
    return None


def window_causes(before: Snapshot, after: Snapshot, threads: int, cores: int) -> list[str]:
    """Every cause of contention between two snapshots of a measurement on ``threads`` of ``cores`` cores."""
    out: list[str] = []
    wall = after.wall - before.wall
    if before.cpu is not None and after.cpu is not None and wall > 0:
        d_total = after.cpu.total - before.cpu.total
        if d_total > 0:
            steal = (after.cpu.steal - before.cpu.steal) / d_total
            iowait = (after.cpu.iowait - before.cpu.iowait) / d_total
            if steal > STEAL_MAX:
                out.append(f"steal {steal:.0%} of CPU time (/proc/stat; limit {STEAL_MAX:.0%}): the hypervisor ran "
                           "another guest on these CPUs")
            if iowait > IOWAIT_MAX:
                out.append(f"iowait {iowait:.0%} of CPU time (/proc/stat; limit {IOWAIT_MAX:.0%})")
            busy_cores = (after.cpu.busy - before.cpu.busy) / after.ticks_per_second / wall
            own_cores = (after.process_cpu - before.process_cpu) / wall
            others = busy_cores - own_cores
            allowed = max(0, cores - threads) + OTHERS_MARGIN_CORES
            if others > allowed:
                out.append(f"other processes used {others:.2f} of {cores} cores (/proc/stat, over {wall:.1f} s; "
                           f"{max(0, cores - threads)} left free by {threads} thread(s))")
    runnable = [s.runnable for s in (before, after) if s.runnable is not None]
    if len(runnable) == 2 and min(runnable) - 1 > max(0, cores - threads):
        out.append(f"{min(runnable) - 1} other runnable task(s) at both ends of the window (/proc/loadavg) for "
                   f"{max(0, cores - threads)} free core(s)")
    clocks = [m for s in (before, after) for m in s.mhz if m > 0]
    if clocks and max(clocks) / min(clocks) - 1 > CLOCK_DRIFT_MAX:
        out.append(f"the clock moved from {min(clocks):.0f} to {max(clocks):.0f} MHz (/proc/cpuinfo; limit "
                   f"{CLOCK_DRIFT_MAX:.0%})")
    return out


@dataclass
class Tally:
    """Samples checked for CPU time against wall time in one run (one per process: :data:`TALLY`)."""

    checked: int = 0
    disturbed: int = 0  # samples seen disturbed, re-measured or not
    kept_disturbed: int = 0  # disturbed samples kept because the re-measuring budget ran out
    where: dict[str, int] = field(default_factory=dict)  # what -> disturbed samples kept

    def reset(self) -> None:
        self.checked = self.disturbed = self.kept_disturbed = 0
        self.where = {}

    def causes(self) -> list[str]:
        """The run-level cause, when more than :data:`DISTURBED_SHARE_MAX` of the samples stayed disturbed."""
        if not self.checked or self.kept_disturbed / self.checked <= DISTURBED_SHARE_MAX:
            return []
        worst = ", ".join(f"{k} ({v})" for k, v in sorted(self.where.items(), key=lambda kv: -kv[1])[:3])
        return [f"{self.kept_disturbed} of {self.checked} samples got under {CPU_SHARE_MIN:.0%} of their threads' "
                f"CPU time after re-measuring (budget {RESAMPLE_BUDGET:g} x repeats per figure): threads waited "
                f"for a busy core; most in {worst}"]

    def to_dict(self) -> dict[str, object]:
        return {"checked": self.checked, "disturbed": self.disturbed, "kept_disturbed": self.kept_disturbed,
                "cpu_share_min": CPU_SHARE_MIN, "resample_budget": RESAMPLE_BUDGET}


#: this process's tally (the CPU bench runs in its own child process: one run per process)
TALLY = Tally()
