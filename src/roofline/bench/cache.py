"""Where the latest ``roofline bench`` result lives, so ``--device local`` needs no re-measuring.

``$ROOFLINE_CACHE_DIR`` if set (tests point it at a temporary directory), else
``$XDG_CACHE_HOME/roofline``, else ``~/.cache/roofline``; the file is
``local-device.json`` (a ``roofline.device/3`` document).

One writer at a time: ``roofline bench`` and ``roofline calibrate`` hold :func:`writer_lock` (an
``fcntl.flock`` on ``local-device.lock`` beside the cache) from before they measure until the cache
is written, so two runs never measure side by side nor write over each other.  A second writer
waits up to its ``wait`` seconds, then fails with one line naming the holder.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from roofline.core.errors import RooflineError
from roofline.hardware.bench_facts import BENCH_VERSION
from roofline.hardware.device import ComputeCeiling, Device, MemoryCeiling

CACHE_FILE = "local-device.json"
LOCK_FILE = "local-device.lock"
LOCK_POLL_SECONDS = 0.1


def cache_dir() -> Path:
    """The cache directory (not created)."""
    override = os.environ.get("ROOFLINE_CACHE_DIR")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "roofline"


def local_device_path() -> Path:
    """Path of the cached measurement: ``<cache_dir>/local-device.json``."""
    return cache_dir() / CACHE_FILE


def load_local_device() -> Device:
    """The last measured device, or a one-line error saying how to make one.

    A cache written by ``roofline bench`` must come from this machine (its fingerprint:
    CPU model, CPU count, ISA flags) and from this version of the bench; otherwise it is
    refused with the command to re-measure.  (A device a user saved there by hand, not
    measured by the bench, is taken as it is.)

    >>> from roofline.bench import load_local_device   # doctest: +SKIP
    >>> load_local_device().kind                        # doctest: +SKIP
    'cpu'
    """
    path = local_device_path()
    if not path.is_file():
        raise RooflineError(f"no measured device cached at {path}; run 'roofline bench' first (it takes about a minute)")
    from dataclasses import replace

    device = Device.load(path)
    check_cached(device, str(path))
    # which file (and, in its metadata, which run) a report used: named in the warning of a flagged one
    return replace(device, metadata={**device.metadata, "device_file": str(path)})


def check_cached(device: Device, where: str) -> None:
    """Refuse a bench measurement from another machine or from an older bench (one line, the fix in it)."""
    from roofline.bench.machine import fingerprint

    ceilings: list[ComputeCeiling | MemoryCeiling] = [*device.compute, *device.memory]
    measured = any(c.provenance.source == "roofline bench" for c in ceilings)
    if not measured and device.bench is None:
        return
    facts = device.bench
    if facts is None or facts.version < BENCH_VERSION:
        got = "no version" if facts is None else f"version {facts.version}"
        raise RooflineError(f"the cached measurement comes from an older roofline bench ({got}, this is version "
                            f"{BENCH_VERSION}: its roofs may not be true bounds); re-measure with 'roofline bench'",
                            where=where)
    here = fingerprint()  # a GPU measurement adds "; gpu NAME" to the host's fingerprint
    if facts.machine != here and not facts.machine.startswith(here + "; gpu "):
        raise RooflineError(f"the cached measurement was taken on another machine ({facts.machine!r}; this is "
                            f"{here!r}); re-measure here with 'roofline bench'", where=where)


def save_local_device(device: Device) -> Path:
    """Write ``device`` as the cached local measurement (atomically) and return the path."""
    from dataclasses import replace

    path = local_device_path()
    meta = {k: v for k, v in device.metadata.items() if k != "device_file"}  # where it was read from: not data
    replace(device, metadata=meta).save(path)
    return path


def lock_path() -> Path:
    """The writers' lock file beside the cache: ``<cache_dir>/local-device.lock``."""
    return cache_dir() / LOCK_FILE


@contextlib.contextmanager
def writer_lock(what: str, wait: float = 0.0, run: dict[str, Any] | None = None) -> Iterator[Path]:
    """Hold the cache's writer lock for the block (``what``: the command holding it, shown to a second one).

    Waits up to ``wait`` seconds for another holder, then raises a one-line RooflineError naming it
    (its command, pid, host, run and start, as it wrote them into the lock file).  On a platform
    without ``fcntl`` the block runs unlocked.
    """
    try:
        import fcntl
    except ImportError:  # Windows: no flock; one writer at a time is then the user's to keep
        yield lock_path()
        return
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as fh:
        deadline = time.monotonic() + max(0.0, wait)
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RooflineError(f"the bench cache is being written by another run ({_holder(fh)}); "
                                        f"{what} waited {wait:g} s: try again when it ends, or pass --wait SECONDS",
                                        where=str(path)) from None
                time.sleep(LOCK_POLL_SECONDS)
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(json.dumps({"command": what, "pid": os.getpid(), "since": time.time(), **(run or {})}))
            fh.flush()
            yield path
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _holder(fh: IO[str]) -> str:
    """'roofline bench, pid 123 on host, run ab12' from the lock file's record, or 'holder unknown'."""
    try:
        fh.seek(0)
        d = json.loads(fh.read() or "{}")
    except (OSError, ValueError):
        d = {}
    if not isinstance(d, dict) or not d:
        return "holder unknown"
    parts = [str(d.get("command", "?")), f"pid {d.get('pid', '?')}" + (f" on {d['host']}" if d.get("host") else "")]
    if d.get("id"):
        parts.append(f"run {d['id']}")
    return ", ".join(parts)
