"""A measured run's quality: ``ok``, ``disturbed`` or ``inconsistent``, with every cause, and the run that made it.

``device.metadata["quality"]`` (written by :func:`assess`, read by :func:`warning`)::

    {"status": "disturbed", "flags": ["disturbed"], "causes": ["disturbed: ...", ...],
     "notes": ["unverified: ..."], "attempts": 2, "budget": 1, "samples": {...}}

- ``disturbed``: contention was seen while measuring (:mod:`roofline.bench.contention`) and stayed
  after measuring again within the budget;
- ``inconsistent``: the roofs break what the ISA fixes (:mod:`roofline.bench.consistency`) or a
  roof is above its spec with no stated clock explaining it (:func:`roofline.bench.spec.judge_spec`).

Roofs set from an *inferred* clock are ``unverified`` (a note, not a flag).  The warning
(:func:`warning`) leads every output that uses the device: the terminal headline, chart captions
and the HTML report's top line all start with it (:func:`roofline.words.summary.headline`).
``device.metadata["run"]`` names the run that made the device (id, start time, pid, host).

>>> q = {"status": "disturbed", "flags": ["disturbed"], "causes": ["disturbed: steal 9% of CPU time"]}
>>> warning({"quality": q, "run": {"id": "ab12"}})
'DISTURBED measurement (run ab12): steal 9% of CPU time'
>>> warning({"quality": {"status": "ok", "flags": [], "causes": []}}) is None
True
"""

from __future__ import annotations

import datetime as _dt
import os
import socket
import uuid
from collections.abc import Mapping
from typing import Any

FLAGS = ("disturbed", "inconsistent")


def new_run() -> dict[str, Any]:
    """A record of this run: a fresh id, the start time (UTC), this process and host."""
    return {"id": uuid.uuid4().hex[:12], "started": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
            "pid": os.getpid(), "host": socket.gethostname()}


def assess(disturbed: list[str], inconsistent: list[str], notes: list[str], *, attempts: int = 1, budget: int = 0,
           samples: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The quality record of a run from its causes (each list: one line per cause)."""
    flags = [f for f, causes in zip(FLAGS, (disturbed, inconsistent), strict=True) if causes]
    return {"status": ", ".join(flags) or "ok", "flags": flags,
            "causes": [f"disturbed: {c}" for c in disturbed] + [f"inconsistent: {c}" for c in inconsistent],
            "notes": list(notes), "attempts": attempts, "budget": budget, **({"samples": dict(samples)} if samples else {})}


def flags(metadata: Mapping[str, Any]) -> list[str]:
    """The flags of a device's metadata ([] for a clean run or a device without a quality record)."""
    q = metadata.get("quality")
    return [str(f) for f in q.get("flags", [])] if isinstance(q, Mapping) else []


def badness(record: Mapping[str, Any]) -> tuple[int, int]:
    """For choosing among attempts: (inconsistent?, number of causes); smaller is better."""
    return (int("inconsistent" in record.get("flags", [])), len(record.get("causes", [])))


def warning(metadata: Mapping[str, Any]) -> str | None:
    """The one line that must lead every output using a flagged device, else None."""
    q = metadata.get("quality")
    if not isinstance(q, Mapping) or not q.get("flags"):
        return None
    run = metadata.get("run")
    used = [f"run {run['id']}"] if isinstance(run, Mapping) and run.get("id") else []
    used += [f"device file {metadata['device_file']}"] if metadata.get("device_file") else []
    rid = f" ({', '.join(used)})" if used else ""
    causes = [str(c).split(": ", 1)[1] if ": " in str(c) else str(c) for c in q.get("causes", [])]
    return f"{' and '.join(str(f) for f in q['flags']).upper()} measurement{rid}: " + "; ".join(causes)


def run_line(metadata: Mapping[str, Any], path: str = "") -> str:
    """'device file PATH, run ID (started T, pid P on HOST)' for reports that name what they used."""
    run = metadata.get("run")
    text = f"device file {path}" if path else ""
    if isinstance(run, Mapping) and run.get("id"):
        text += (", " if text else "") + (f"run {run['id']} (started {run.get('started', '?')}, pid "
                                          f"{run.get('pid', '?')} on {run.get('host', '?')})")
    return text
