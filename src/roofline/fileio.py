"""Reading user files, checking what was read, and writing outputs all-or-nothing.

Reading: every way a file itself can fail (a missing file or any other OS error, a name too long,
bad UTF-8, bad JSON, nesting too deep, an integer too long for ``int()``) is one
:class:`RooflineError` line naming the (shortened) path.  Checking: ``as_number``, ``as_int``,
``as_str``, ... validate one field at a time (type, finiteness, range, integer size) and name the
field and value in the message ("w.json: ops[3].count must be a number, got 'x'").

Outputs are written to a temporary file beside the target and renamed into
place, so a failure never leaves a half-written file.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from roofline.errors import RooflineError

#: Largest input file read (bytes); ``ROOFLINE_MAX_INPUT_BYTES`` overrides it.
MAX_INPUT_BYTES = 1 << 30


def max_input_bytes() -> int:
    from roofline.errors import env_limit

    return env_limit("ROOFLINE_MAX_INPUT_BYTES", MAX_INPUT_BYTES)


def read_bytes(path: str | Path) -> bytes:
    """The bytes of a user file; any OS error (missing, a folder, permissions, a name too long) is one line.

    Only regular files and pipes are read (a device such as /dev/zero never ends), and at most
    :func:`max_input_bytes` of them.
    """
    from roofline.text import shown_path

    limit = max_input_bytes()
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
                raise RooflineError("cannot read: not a regular file", where=shown_path(path))
            if st.st_size > limit:
                raise RooflineError(f"cannot read: {st.st_size} bytes, more than the {limit}-byte limit "
                                    "(ROOFLINE_MAX_INPUT_BYTES)", where=shown_path(path))
            data = f.read() if stat.S_ISREG(st.st_mode) else _read_pipe(f, limit)
    except FileNotFoundError:
        raise RooflineError("no such file", where=shown_path(path)) from None
    except OSError as exc:
        raise RooflineError(f"cannot read: {exc.strerror or exc.__class__.__name__}", where=shown_path(path)) from None
    except ValueError as exc:  # e.g. an embedded NUL byte in the name
        if isinstance(exc, RooflineError):
            raise
        raise RooflineError(f"cannot read: {exc}", where=shown_path(path)) from None
    if len(data) > limit:
        raise RooflineError(f"cannot read: more than the {limit}-byte limit (ROOFLINE_MAX_INPUT_BYTES)",
                            where=shown_path(path))
    return data


def _read_pipe(f: Any, limit: int) -> bytes:
    """A pipe's bytes up to ``limit`` + 1, in chunks (a read of ``limit`` would reserve it all at once)."""
    chunks, size = [], 0
    while size <= limit:
        chunk = f.read(min(1 << 20, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_text(path: str | Path) -> str:
    """A user file as UTF-8 text (a leading byte-order mark is dropped); bad bytes name their offset."""
    from roofline.text import shown_path

    data = read_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise RooflineError(f"not valid UTF-8: byte {data[exc.start:exc.start + 1]!r} at offset {exc.start} "
                            f"(line {line})", where=shown_path(path)) from None


def parse_json(text: str, where: str) -> Any:
    """``json.loads`` with every way the text itself can fail as one line naming ``where``.

    Beyond syntax errors: nesting deeper than the parser's recursion (RecursionError) and
    integers longer than Python's digit limit for int() (ValueError) are input faults too.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = exc.msg.removesuffix(" at")  # "Invalid control character at"
        raise RooflineError(f"not valid JSON: {msg} at line {exc.lineno} column {exc.colno}", where=where) from None
    except RecursionError:
        raise RooflineError("not valid JSON: nested too deeply", where=where) from None
    except ValueError as exc:  # int max-str-digits: "Exceeds the limit (4300 digits) for integer string conversion"
        raise RooflineError(f"not valid JSON: a number is too long ({str(exc).split(';')[0]})", where=where) from None


def read_json(path: str | Path) -> Any:
    """A user JSON file, parsed; every input fault is a :class:`RooflineError` naming the file."""
    from roofline.text import shown_path

    return parse_json(read_text(path), shown_path(path))


def check_writable(path: str | Path) -> Path:
    """Fail early (before any work) when ``path`` cannot be written.

    Checks the nearest existing folder above ``path``: it must be a folder and
    writable (missing folders below it are created when writing).
    """
    try:
        return _check_writable(Path(path))
    except OSError as exc:  # ENAMETOOLONG, ELOOP...: the path itself is unusable
        raise RooflineError(f"cannot write: {exc.strerror or exc}", where=str(path)) from None
    except ValueError as exc:  # a NUL byte in the path
        raise RooflineError(f"cannot write: {exc}", where=repr(str(path))) from None


def _check_writable(p: Path) -> Path:
    path = str(p)
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
    write_files_atomic([(path, data)])


def write_files_atomic(files: Sequence[tuple[str | Path, bytes]]) -> None:
    """Write every (path, bytes) all-or-nothing: each to a temporary file beside its target, then rename
    them all into place.  On any failure the temporary files go and existing files stay untouched."""
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in files:
            p = check_writable(path)
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
            except OSError as exc:
                raise RooflineError(f"cannot write: {exc.strerror or exc}", where=str(path)) from None
            temps.append((tmp, p))
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual permissions
            except OSError as exc:
                raise RooflineError(f"cannot write: {exc.strerror or exc}", where=str(path)) from None
        for tmp, p in temps:
            os.replace(tmp, p)
    except BaseException:
        for tmp, _ in temps:
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


# -- checking what was read: one field at a time, each fault one line naming file, field and value ----------


def shown(value: Any, limit: int = 60) -> str:
    """A value from a file, as a message shows it (control characters escaped, clipped to ``limit``).

    Strings as Python writes them ('x'); everything else as JSON does (true, null, [1, 2]).
    """
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**limit:
        return f"an integer of {len(str(abs(value)))} digits" if abs(value) < 10**4000 else "an integer of >4000 digits"
    if isinstance(value, str):
        text = ascii(value) if not value.isprintable() else repr(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=True, allow_nan=True)
        except (TypeError, ValueError, RecursionError):
            text = ascii(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def json_type(value: Any) -> str:
    """The JSON name of a value's type, with its article: 'a string', 'a list', 'true/false', ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def wrong(field: str, rule: str, value: Any, where: str, why: str = "") -> RooflineError:
    """'<where>: <field> must be <rule>, got <value>' (``why``: a note in parentheses)."""
    got = shown(value) if value is not None else "null"
    if isinstance(value, (list, dict)):
        got = f"{json_type(value)} {got}"
    return RooflineError(f"{field} must be {rule}, got {got}" + (f" ({why})" if why else ""), where=where)


def as_number(value: Any, field: str, where: str, *, minimum: float | None = None, above: bool = False) -> float:
    """A finite JSON number (not true/false, not a string) >= ``minimum`` (> it when ``above``)."""
    rule = "a finite number" if minimum is None else f"a finite number {'>' if above else '>='} {minimum:g}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong(field, rule, value, where)
    try:
        x = float(value)
    except OverflowError:
        raise wrong(field, rule, value, where, "too large") from None
    if not math.isfinite(x) or (minimum is not None and (x <= minimum if above else x < minimum)):
        raise wrong(field, rule, value, where)
    return x


def as_int(value: Any, field: str, where: str, *, minimum: int = 0, maximum: int = 2**53) -> int:
    """A whole JSON number in [minimum, maximum] (1.0 counts as 1)."""
    rule = f"a whole number from {minimum} to {maximum}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong(field, rule, value, where)
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise wrong(field, rule, value, where)
    if not minimum <= value <= maximum:
        raise wrong(field, rule, value, where)
    return int(value)


def as_str(value: Any, field: str, where: str, *, empty: bool = True) -> str:
    """A JSON string (``empty=False``: with something other than blanks in it)."""
    if not isinstance(value, str):
        raise wrong(field, "a string", value, where)
    if not empty and not value.strip():
        raise wrong(field, "a non-empty string", value, where)
    return value


def as_bool(value: Any, field: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise wrong(field, "true or false", value, where)
    return value


def as_list(value: Any, field: str, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise wrong(field, "a list", value, where)
    return value


def as_object(value: Any, field: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise wrong(field, "an object", value, where)
    return value


def as_str_list(value: Any, field: str, where: str) -> list[str]:
    """A list of strings (assumptions, warnings, aliases, ...)."""
    items = as_list(value, field, where)
    for i, v in enumerate(items):
        as_str(v, f"{field}[{i}]", where)
    return list(items)


def optional(d: Mapping[str, Any], key: str, default: Any) -> Any:
    """``d[key]``; absent or null -> ``default`` (an optional field)."""
    v = d.get(key)
    return default if v is None else v


def as_numbers(raw: Any, field: str, where: str, n: int | None = None) -> list[float]:
    """A list of finite numbers (of length ``n`` when given)."""
    values = as_list(raw, field, where)
    if n is not None and len(values) != n:
        raise RooflineError(f"{field} has {len(values)} values, expected {n}", where=where)
    return [as_number(v, f"{field}[{i}]", where) for i, v in enumerate(values)]


def as_pair(raw: Any, field: str, where: str) -> tuple[float, float] | None:
    """None, or [low, high] as two finite numbers."""
    if raw is None:
        return None
    if not (isinstance(raw, (list, tuple)) and len(raw) == 2):
        raise RooflineError(f"{field} must be [low, high], got {shown(raw)}", where=where)
    return (as_number(raw[0], field, where), as_number(raw[1], field, where))


def as_objects(raw: Any, field: str, where: str) -> list[Mapping[str, Any]]:
    """A list of JSON objects."""
    if not isinstance(raw, list):
        raise RooflineError(f"{field} must be a list of objects, got {json_type(raw)} {shown(raw)}", where=where)
    for i, x in enumerate(raw):
        if not isinstance(x, Mapping):
            raise RooflineError(f"{field}[{i}] must be an object, got {json_type(x)} {shown(x)}", where=where)
    return raw


def need_fields(d: Mapping[str, Any], keys: Iterable[str], field: str, where: str) -> None:
    """Every one of ``keys`` is in the object ``d`` (named ``field``)."""
    for k in keys:
        if k not in d:
            raise RooflineError(f"{field}: missing field {k!r}", where=where)
