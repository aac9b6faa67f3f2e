"""Reading user files and writing outputs all-or-nothing.

Outputs are written to a temporary file beside the target and renamed into
place, so a failure never leaves a half-written file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from roofline.errors import RooflineError


def read_json(path: str | Path) -> Any:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RooflineError("no such file", where=str(path)) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise RooflineError(f"cannot read: {exc.__class__.__name__}", where=str(path)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RooflineError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", where=str(path)) from None


def check_writable(path: str | Path) -> Path:
    """Fail early (before any work) when ``path`` cannot be written.

    Checks the nearest existing folder above ``path``: it must be a folder and
    writable (missing folders below it are created when writing).
    """
    p = Path(path)
    if p.is_dir():
        raise RooflineError("is a directory, expected a file path", where=str(path))
    if p.exists() and not os.access(p, os.W_OK):
        raise RooflineError("cannot write: file is not writable", where=str(path))
    parent = p.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise RooflineError(f"cannot write: {str(parent)!r} is a file, not a directory", where=str(path))
    if not os.access(parent, os.W_OK):
        raise RooflineError(f"cannot write: directory {str(parent)!r} is not writable", where=str(path))
    return p


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    p = check_writable(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as exc:
        raise RooflineError(f"cannot write: {exc.strerror or exc}", where=str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual permissions
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))
