"""Cited kernel-level tables (``roofline.kernels/1``), one JSON file per published source: grouped-GEMM,
expert-parallel dispatch/combine, MLA decode and other kernels' measured throughput, each row as its source prints
it, pinned to a commit.  These are what MoE and collective efficiencies come from; nothing in them is a whole-model
step time or throughput.

A file is ``{"schema": "roofline.kernels/1", "name": ..., "source": {"title", "url", "commit"}, "device": <catalog
device name or "">, "measures": <what one row is>, "columns": [...], "units": {column: unit}, "rows": [[...], ...],
"notes": ...}``; every row has one value per column.

>>> sorted(t.name for t in tables()) == sorted(t.name for t in tables())
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

KERNELS_SCHEMA = "roofline.kernels/1"


@dataclass(frozen=True)
class KernelTable:
    """One cited table of kernel measurements (module docs)."""

    name: str
    source: dict[str, str]
    device: str
    measures: str
    columns: tuple[str, ...]
    units: dict[str, str]
    rows: tuple[tuple[Any, ...], ...]
    notes: str = ""

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts keyed by column."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    @property
    def citation(self) -> str:
        """'title (url @ commit)'."""
        commit = self.source.get("commit", "")
        return f"{self.source['title']} ({self.source['url']}{' @ ' + commit[:12] if commit else ''})"


def _parse(data: dict[str, Any], where: str) -> KernelTable:
    if data.get("schema") != KERNELS_SCHEMA:
        raise RuntimeError(f"{where}: bad schema {data.get('schema')!r}")
    columns = tuple(data["columns"])
    rows = tuple(tuple(r) for r in data["rows"])
    for r in rows:
        if len(r) != len(columns):
            raise RuntimeError(f"{where}: row {list(r)} has {len(r)} values for {len(columns)} columns")
    src = data["source"]
    if not src.get("title") or not src.get("url"):
        raise RuntimeError(f"{where}: a kernel table needs its source's title and url")
    return KernelTable(data["name"], dict(src), data.get("device", ""), data["measures"], columns,
                       dict(data.get("units", {})), rows, data.get("notes", ""))


@lru_cache(maxsize=1)
def _tables() -> dict[str, KernelTable]:
    out: dict[str, KernelTable] = {}
    for entry in sorted(resources.files(__name__).iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".json"):
            t = _parse(json.loads(entry.read_text(encoding="utf-8")), f"catalog/kernels/{entry.name}")
            if t.name in out:
                raise RuntimeError(f"catalog/kernels: two tables named {t.name!r}")
            out[t.name] = t
    return out


def tables() -> tuple[KernelTable, ...]:
    """Every shipped kernel table, in file-name order."""
    return tuple(_tables().values())


def kernel_table(name: str) -> KernelTable:
    """The shipped kernel table named ``name`` (a packaging bug if missing)."""
    try:
        return _tables()[name]
    except KeyError:
        raise RuntimeError(f"catalog/kernels: no table named {name!r} (have {sorted(_tables())})") from None
