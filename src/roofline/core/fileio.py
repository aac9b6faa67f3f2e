"""Reading user files, checking what was read, and writing outputs all-or-nothing.

Reading: every way a file itself can fail (a missing file or any other OS error, a name too long,
bad UTF-8, bad JSON, nesting too deep, an integer too long for ``int()``) is one
:class:`RooflineError` line naming the (shortened) path.  Checking: ``as_number``, ``as_int``,
``as_str``, ... validate one field at a time (type, finiteness, range, integer size) and name the
field and value in the message ("w.json: ops[3].count must be a number, got 'x'").

Reading goes through :func:`open_input` (regular files only, the size limit counted while streaming,
after decompression for a gzip trace).  Outputs are written to a temporary file beside the target and
renamed into place, so a failure never leaves a half-written file; a character device, a fifo or
/dev/stdout is written in place instead, never replaced; an output path that is a symbolic link is refused
in one line naming the link and its target, never followed (:func:`output_kind`).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import stat
import tempfile
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from roofline.core.errors import RooflineError

#: Largest input file read (bytes); ``ROOFLINE_MAX_INPUT_BYTES`` overrides it.
MAX_INPUT_BYTES = 1 << 30


def max_input_bytes() -> int:
    from roofline.core.errors import env_limit

    return env_limit("ROOFLINE_MAX_INPUT_BYTES", MAX_INPUT_BYTES)


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, for a message."""
    for test, name in ((stat.S_ISFIFO, "a fifo (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


class _Capped(io.RawIOBase):
    """A binary stream that fails with one line once more than ``limit`` bytes came out of it (after
    decompression, when it wraps a gzip stream); read errors of the stream underneath are one line too."""

    def __init__(self, f: Any, limit: int, where: str, what: str, raw: Any = None) -> None:
        super().__init__()
        self.f, self.limit, self.where, self.what, self.count = f, limit, where, what, 0
        self.raw = raw  # the file under a gzip stream (GzipFile does not close a fileobj it was given)

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        try:
            n = self.f.readinto(b)
        except (OSError, EOFError, zlib.error) as exc:  # gzip: BadGzipFile is an OSError, a cut file EOFError
            raise RooflineError(f"cannot read: {getattr(exc, 'strerror', None) or str(exc) or type(exc).__name__}",
                                where=self.where) from None
        self.count += n or 0
        if self.count > self.limit:
            raise RooflineError(f"cannot read: more than the {self.limit}-byte limit{self.what} "
                                "(ROOFLINE_MAX_INPUT_BYTES)", where=self.where)
        return n or 0

    def close(self) -> None:
        try:
            self.f.close()
        finally:
            try:
                if self.raw is not None:
                    self.raw.close()
            finally:
                super().close()


def open_input(path: str | os.PathLike[str], *, decompress: bool = False, limit: int | None = None) -> io.BufferedReader:
    """A user's input file opened for reading, the one way every reader opens one.

    Refused at once, in one line naming the file: a missing file or any OS error, and anything but a
    regular file (a fifo would block, a device never ends, a folder has no bytes); the fifo is opened
    without blocking, so refusing it never waits for a writer.  At most ``limit`` bytes
    (:func:`max_input_bytes`) come out of the stream, counted while streaming; with ``decompress``, a
    gzip file (by its magic bytes) is decompressed and the limit applies to what it decompresses to.
    """
    from roofline.core.text import shown_path

    where = shown_path(path)
    top = max_input_bytes() if limit is None else limit
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise RooflineError("no such file", where=where) from None
    except OSError as exc:
        raise RooflineError(f"cannot read: {exc.strerror or exc.__class__.__name__}", where=where) from None
    except (ValueError, TypeError) as exc:  # an embedded NUL byte in the name
        raise RooflineError(f"cannot read: {exc}", where=where) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise RooflineError(f"cannot read: {_kind(st.st_mode)}, not a regular file", where=where)
    raw = os.fdopen(fd, "rb", buffering=0)
    try:
        if st.st_size > top and not decompress:
            raise RooflineError(f"cannot read: {st.st_size} bytes, more than the {top}-byte limit "
                                "(ROOFLINE_MAX_INPUT_BYTES)", where=where)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        f: Any = raw
        what = ""
        if decompress and raw.read(2) == b"\x1f\x8b":
            raw.seek(0)
            f, what = gzip.GzipFile(fileobj=raw, mode="rb"), " after decompression"
        else:
            raw.seek(0)
        return io.BufferedReader(_Capped(f, top, where, what, raw if f is not raw else None), buffer_size=1 << 16)
    except BaseException:
        raw.close()
        raise


def read_bytes(path: str | os.PathLike[str], *, limit: int | None = None) -> bytes:
    """The bytes of a user file (:func:`open_input`: regular files only, at most :func:`max_input_bytes`);
    any OS error (missing, a folder, a fifo, a device, permissions, a name too long) is one line."""
    from roofline.core.text import shown_path

    with open_input(path, limit=limit) as f:
        try:
            return f.read()
        except OSError as exc:
            raise RooflineError(f"cannot read: {exc.strerror or exc}", where=shown_path(path)) from None


def read_text(path: str | Path) -> str:
    """A user file as UTF-8 text (a leading byte-order mark is dropped); bad bytes name their offset."""
    from roofline.core.text import shown_path

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
    from roofline.core.text import shown_path

    return parse_json(read_text(path), shown_path(path))


#: output paths that name a descriptor this process already has: written to that descriptor, never reopened
#: (reopening /dev/stdout redirected to a file would truncate it) and never replaced
_STD = {"/dev/stdout": 1, "/dev/stderr": 2}
_FD_DIRS = ("/dev/fd/", "/proc/self/fd/")


def std_descriptor(path: str | Path) -> int | None:
    """The descriptor an output path names (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), else None."""
    text = os.fspath(path)
    if text in _STD:
        return _STD[text]
    for d in _FD_DIRS:
        if text.startswith(d) and text[len(d):].isdigit():
            return int(text[len(d):])
    return None


def output_kind(path: str | Path) -> str:
    """How an output path is written: ``"fd"`` (a descriptor by name), ``"direct"`` (a character device or a
    fifo: opened and written in place, never replaced), ``"file"`` (a regular file, new or existing: a
    temporary file renamed over it).  Anything else is one line: a folder, a block device, a socket, and any
    symbolic link (never followed: writing through a link would rewrite the file it points to, so the line
    names the link and its target; give the target itself)."""
    if std_descriptor(path) is not None:
        return "fd"
    p = os.fspath(path)
    try:
        st = os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):  # a new file (a folder above it that is a file: said later)
        return "file"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(p)
        except OSError:
            target = "?"
        raise RooflineError(f"cannot write: a symbolic link to {shown(target)} (links are not followed; give the "
                            "target itself)", where=p)
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return "direct"
    raise RooflineError(f"cannot write: {_kind(st.st_mode)}, expected a file path", where=p)


def check_writable(path: str | Path, *, create_folders: bool = False) -> Path:
    """Fail early (before any work) when ``path`` cannot be written.

    A descriptor by name, a character device or a fifo must be writable; otherwise ``path``'s folder must
    exist, be a folder and be writable: a missing folder is one line naming it, never created behind the
    user's back ("-o /nonexistent/dir/c.png").  ``create_folders`` (the project's own caches): the nearest
    existing folder above must be writable instead, and the missing ones are created when writing.
    """
    try:
        kind = output_kind(path)
        if kind == "fd":
            return Path(path)
        if kind == "direct":
            if not os.access(path, os.W_OK):
                raise RooflineError("cannot write: not writable", where=str(path))
            return Path(path)
        return _check_writable(Path(path), create_folders)
    except OSError as exc:  # ENAMETOOLONG, ELOOP...: the path itself is unusable
        raise RooflineError(f"cannot write: {exc.strerror or exc}", where=str(path)) from None
    except ValueError as exc:  # a NUL byte in the path
        if isinstance(exc, RooflineError):
            raise
        raise RooflineError(f"cannot write: {exc}", where=repr(str(path))) from None


def _check_writable(p: Path, create_folders: bool) -> Path:
    path = str(p)
    if p.is_dir():
        raise RooflineError("is a directory, expected a file path", where=str(path))
    if p.exists() and not os.access(p, os.W_OK):
        raise RooflineError("cannot write: file is not writable", where=str(path))
    parent = p.absolute().parent
    if not create_folders and not parent.exists() and not parent.is_symlink():
        raise RooflineError(f"cannot write: folder {str(p.parent)!r} does not exist (create it first)", where=path)
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
    """Write every (path, bytes) all-or-nothing: each regular file to a temporary file beside its target,
    then renamed into place once every output is written.  On any failure the temporary files go and
    existing files stay untouched.  A character device, a fifo or a descriptor by name (/dev/stdout) is
    written in place instead (:func:`output_kind`), after every temporary file is ready and before any
    rename: it is never replaced, and a failure there (a full device, a fifo nobody reads) renames nothing.
    A symbolic link is refused (one line naming it and its target), never followed."""
    temps: list[tuple[str, Path]] = []
    direct: list[tuple[str | Path, str, bytes]] = []
    try:
        for path, data in files:
            kind = output_kind(path)
            check_writable(path, create_folders=True)  # a user's path was checked strictly before any work
            if kind != "file":
                direct.append((path, kind, data))
                continue
            p = Path(path)
            temps.append(_temp_copy(p, data, path))
        for path, kind, data in direct:
            _write_in_place(path, kind, data)
        for tmp, p in temps:
            os.replace(tmp, p)
    except BaseException:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise


def _temp_copy(p: Path, data: bytes, shown_as: str | Path) -> tuple[str, Path]:
    """``data`` in a new temporary file beside ``p`` (with the usual permissions); (its path, p)."""
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as exc:
        raise RooflineError(f"cannot write: {exc.strerror or exc}", where=str(shown_as)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual permissions
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise RooflineError(f"cannot write: {exc.strerror or exc}", where=str(shown_as)) from None
        raise
    return tmp, p


def _write_in_place(path: str | Path, kind: str, data: bytes) -> None:
    """``data`` written to a descriptor by name, a character device or a fifo: no temporary file, no rename."""
    import sys

    fd = std_descriptor(path) if kind == "fd" else None
    opened = False
    try:
        if fd is not None:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
        else:  # non-blocking open: a fifo that no process reads fails at once (ENXIO) instead of waiting
            fd = os.open(path, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                         | getattr(os, "O_NOFOLLOW", 0))
            opened = True
            os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        import errno

        why = "no process is reading the fifo" if exc.errno == errno.ENXIO else (exc.strerror or str(exc))
        raise RooflineError(f"cannot write: {why}", where=str(path)) from None
    finally:
        if opened and fd is not None:
            os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


# -- checking what was read: one field at a time, each fault one line naming file, field and value ----------


def json_number(value: float) -> float | None:
    """A number as JSON holds it: the float, or None (null) for NaN and infinity (JSON has neither)."""
    return value if math.isfinite(value) else None


def json_ready(doc: Any) -> Any:
    """A JSON document with every float :func:`json_number`'d, through dicts, lists and tuples (tuples as lists).

    >>> json_ready({"a": float("nan"), "b": [1.5, float("inf")], "c": "x"})
    {'a': None, 'b': [1.5, None], 'c': 'x'}
    """
    if isinstance(doc, float):
        return json_number(doc)
    if isinstance(doc, dict):
        return {k: json_ready(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [json_ready(v) for v in doc]
    if type(doc).__module__ == "numpy":  # an array or a numpy scalar: its Python values (numpy imported by the caller)
        return json_ready(doc.tolist())
    return doc


def json_numbers(values: Any) -> list[float | None]:
    """Numbers as a JSON list (:func:`json_number` each); an all-finite array (the common case) converted in one
    C-speed call."""
    import numpy as np

    arr = np.asarray(values, dtype=float)
    if np.isfinite(arr).all():
        return arr.tolist()
    return [json_number(x) for x in arr.tolist()]


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


def as_number(value: Any, field: str, where: str, *, minimum: float | None = None, above: bool = False,
              maximum: float | None = None) -> float:
    """A finite JSON number (not true/false, not a string) >= ``minimum`` (> it when ``above``), <= ``maximum``."""
    rule = "a finite number" if minimum is None else f"a finite number {'>' if above else '>='} {minimum:g}"
    if maximum is not None:
        rule += f" {'and ' if minimum is not None else ''}<= {maximum:g}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong(field, rule, value, where)
    try:
        x = float(value)
    except OverflowError:
        raise wrong(field, rule, value, where, "too large") from None
    if not math.isfinite(x) or (minimum is not None and (x <= minimum if above else x < minimum)) or (
            maximum is not None and x > maximum):
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
