"""The hostile-input harness: run one case, guarded, and judge what came out.

A :class:`Case` is data: a CLI command line (``argv``) or a snippet of Python
API code (``code``), the files it needs (written into a fresh folder first;
``{tmp}`` in argv/code/file contents is that folder), and what must happen:
``expect="error"`` (exit 2, exactly one ``roofline: error:`` line on stderr that
contains ``names``, no traceback, no new file) or ``expect="ok"`` (exit 0).
Every case, either way: no raw control character from the input on stdout or
stderr.

Hangs and blow-ups are guarded, not timed: each case runs in a forked child
under an address-space limit (``MEMORY_HEADROOM`` above what the test process
already maps) and a ``TIMEOUT``; a case that trips either fails.  ``run_case``
forks (fast: roofline and its imports are already loaded); ``run_case_in``
runs a case in a fresh interpreter against any source tree (for the before /
after report in benchmarks/hostile_report.py).
"""

from __future__ import annotations

import io
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

#: the budget of one case: ``BUDGET_SECONDS`` of CPU time (RLIMIT_CPU: killed past it) and ``MEMORY_HEADROOM``
#: bytes of address space above the process it forks from (RLIMIT_AS).  A case that waits without computing
#: (a hang: a fifo, a lock) is killed after ``TIMEOUT`` wall-clock seconds, a multiple of the budget because
#: these machines are shared (six engineers on two cores: a case's wall time is not its cost).
#: ``ROOFLINE_HOSTILE_SECONDS``, ``ROOFLINE_HOSTILE_WALL_FACTOR`` and ``ROOFLINE_HOSTILE_MEMORY`` (bytes) override.
BUDGET_SECONDS = float(os.environ.get("ROOFLINE_HOSTILE_SECONDS", "4"))
TIMEOUT = BUDGET_SECONDS * float(os.environ.get("ROOFLINE_HOSTILE_WALL_FACTOR", "3"))
MEMORY_HEADROOM = int(os.environ.get("ROOFLINE_HOSTILE_MEMORY", str(512 << 20)))
#: heavy optional modules imported once in the process that forks the cases (when installed), so a case's
#: budget is its own work: the address space torch maps at import (about 1 GB of VmSize) and its ~2 s import
#: are the same for every case and are not what a hostile input costs
PRELOAD = ("torch", "onnx", "msgspec", "matplotlib.figure", "matplotlib.backends.backend_agg")
#: control characters that must never reach a terminal raw (C0 but \t \n, DEL, C1)
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


@dataclass(frozen=True)
class Special:
    """A file that is not a regular file, made in the case's folder: ``fifo``, ``dir``, ``chr`` (a character
    device node with ``major``/``minor``: 1/3 is a null device, 1/5 zero, 1/7 full; needs root, see
    :func:`needs_root`), or ``symlink`` to ``target`` ({tmp} expanded)."""

    kind: str
    major: int = 0
    minor: int = 0
    target: str = ""


def needs_root(case: Case) -> bool:
    """Whether the case makes a device node (os.mknod: root only; the test skips it otherwise)."""
    return any(isinstance(c, Special) and c.kind == "chr" for c in case.files.values())


@dataclass(frozen=True)
class Case:
    name: str  # unique, e.g. "names/markup-op-name-analyze"
    cls: str  # the class of attack (the table): names-markup, names-mathtext, control-chars, ...
    command: str  # the CLI command (analyze, llm, ...) or "api"
    argv: tuple[str, ...] = ()  # CLI arguments after "roofline"
    code: str = ""  # or Python API code (run with roofline imported)
    files: dict[str, str | bytes | Special] = field(default_factory=dict)  # relative path -> content ({tmp} expanded)
    expect: str = "error"  # "error" or "ok"
    names: str = ""  # what the error line must contain (the file, field or option at fault)
    outputs: tuple[str, ...] = ()  # output paths (relative) that must not exist after an error
    check: str = ""  # optional Python expression over `out` (stdout), `err`, `tmp` (Path) that must be true
    cpu: float = 0.0  # this case's CPU budget in seconds where its stated work needs more than BUDGET_SECONDS


@dataclass
class Result:
    code: int | None  # exit status; None: killed (timeout or memory)
    out: str
    err: str
    seconds: float
    peak_rss: int  # bytes (ru_maxrss of the child)
    timed_out: bool
    new_files: list[str]
    check_ok: bool | None = None
    cpu_seconds: float = 0.0  # user + system CPU time of the child  # the case's `check` expression, evaluated before the folder goes


def _expand(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp))


def _prepare(case: Case, tmp: Path) -> set[str]:
    for rel, content in case.files.items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Special):
            _make_special(p, content, tmp)
        elif isinstance(content, str):
            p.write_text(_expand(content, tmp), encoding="utf-8", errors="surrogateescape")
        else:
            p.write_bytes(content)
    return {str(p.relative_to(tmp)) for p in tmp.rglob("*")}


def _make_special(p: Path, s: Special, tmp: Path) -> None:
    if s.kind == "fifo":
        os.mkfifo(p)
    elif s.kind == "dir":
        p.mkdir()
    elif s.kind == "chr":
        import stat

        os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(s.major, s.minor))
    elif s.kind == "symlink":
        p.symlink_to(_expand(s.target, tmp))
    else:
        raise ValueError(f"unknown special file kind {s.kind!r}")


def _vm_size() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _child_main(case: Case, tmp: Path) -> int:
    """What runs in the child: the CLI or the API snippet, with errors as the CLI reports them."""
    import warnings

    warnings.simplefilter("error", ResourceWarning)  # a file left open is a failure (issue 53), as in a subprocess
    if case.argv:
        from roofline import cli

        return cli.main([_expand(a, tmp) for a in case.argv])
    from roofline.core.errors import RooflineError

    try:
        exec(compile(_expand(case.code, tmp), f"<case {case.name}>", "exec"), {"__name__": "__case__"})
    except RooflineError as exc:
        print(f"roofline: error: {exc}", file=sys.stderr)
        return 2
    return 0


def preload() -> None:
    """Import :data:`PRELOAD` (each when installed) before the first fork."""
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # not installed (or broken): the case imports it itself, inside its budget
            pass


def run_case(case: Case) -> Result:
    """Fork, limit the child's address space and time, run the case, collect what it printed."""
    preload()
    with tempfile.TemporaryDirectory(prefix="hostile-") as d:
        tmp = Path(d)
        before = _prepare(case, tmp)
        out_f, err_f = tmp / ".stdout", tmp / ".stderr"
        before |= {".stdout", ".stderr"}
        limit = _vm_size() + MEMORY_HEADROOM
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 70
            try:
                fd_out = os.open(out_f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                fd_err = os.open(err_f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(fd_out, 1)
                os.dup2(fd_err, 2)
                sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8", errors="replace")
                sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), encoding="utf-8", errors="replace")
                os.environ["COLUMNS"] = "120"
                os.chdir(tmp)
                if limit > MEMORY_HEADROOM:
                    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
                cpu = max(1, int(max(BUDGET_SECONDS, case.cpu) + 0.999))
                resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU past the budget: killed
                code = _child_main(case, tmp)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:  # a traceback: printed as Python would, then exit 1
                traceback.print_exc()
                code = 1
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        timed_out = False
        status = 0
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if time.perf_counter() - t0 > TIMEOUT * max(1.0, case.cpu / BUDGET_SECONDS):
                os.kill(pid, signal.SIGKILL)
                _, status, usage = os.wait4(pid, 0)
                timed_out = True
                break
            time.sleep(0.01)
        seconds = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status) if not timed_out else None
        if code is not None and code < 0:
            code = None  # killed by a signal (memory: SIGKILL/SIGSEGV/SIGABRT)
        out = out_f.read_text(encoding="utf-8", errors="replace")
        err = err_f.read_text(encoding="utf-8", errors="replace")
        after = {str(p.relative_to(tmp)) for p in tmp.rglob("*")}
        new = sorted(p for p in after - before if not Path(p).name.startswith(".hostile"))
        result = Result(code, out, err, seconds, usage.ru_maxrss * 1024, timed_out, new,
                        cpu_seconds=usage.ru_utime + usage.ru_stime)
        if case.check and code in (0, 2):
            try:
                result.check_ok = bool(eval(case.check, {"out": out, "err": err, "tmp": tmp, "Path": Path}))
            except Exception:  # the output cannot even be read back (e.g. an SVG that is not XML): unsafe
                result.check_ok = False
        return result


def problems(case: Case, r: Result) -> list[str]:
    """What is wrong with ``r`` for ``case`` (empty: the case passes)."""
    bad = []
    if r.timed_out:
        bad.append(f"hang: still running after {TIMEOUT:g} s")
    elif r.code is None:
        bad.append(f"blow-up: killed (past {MEMORY_HEADROOM >> 20} MiB of address space, {BUDGET_SECONDS:g} s of "
                   "CPU, or a signal)")
    if "Traceback (most recent call last)" in r.err or "Traceback (most recent call last)" in r.out:
        bad.append("traceback: " + r.err.strip().splitlines()[-1][:200] if r.err.strip() else "traceback")
    raw = RAW_CONTROL.search(r.out + r.err)
    if raw:
        bad.append(f"raw control character {raw.group()!r} on the terminal")
    if case.expect == "error":
        lines = [ln for ln in r.err.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("roofline: error:")]
        if r.code != 2:
            bad.append(f"exit {r.code}, expected 2")
        if len(errors) != 1 or len(lines) != 1:
            bad.append(f"stderr is not one 'roofline: error:' line: {r.err[:300]!r}")
        elif case.names and case.names not in errors[0]:
            bad.append(f"the error does not name {case.names!r}: {errors[0][:300]!r}")
        written = [p for p in r.new_files if not p.startswith((".", "__pycache__"))]
        if written:
            bad.append(f"wrote {written} although it failed")
    elif r.code != 0:
        bad.append(f"exit {r.code}, expected success: {r.err[-300:]!r}")
    if r.check_ok is False:
        bad.append(f"check failed: {case.check}")
    return bad


def run_case_in(case: Case, src: Path, python: str = sys.executable) -> Result:
    """The same case in a fresh interpreter importing roofline from ``src`` (no fork; for reports)."""
    runner = (
        "import sys, runpy\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import harness, pickle\n"
        "case = pickle.loads(bytes.fromhex(sys.argv[1]))\n"
        "from pathlib import Path\n"
        "sys.exit(harness._child_main(case, Path.cwd()))\n"
    )
    import pickle

    with tempfile.TemporaryDirectory(prefix="hostile-") as d:
        tmp = Path(d)
        before = _prepare(case, tmp)
        env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "120", "PYTHONWARNINGS": "error::ResourceWarning"}
        t0 = time.perf_counter()

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

        try:
            p = subprocess.run([python, "-c", runner, pickle.dumps(case).hex()], cwd=tmp, env=env,
                               capture_output=True, timeout=TIMEOUT, preexec_fn=limit)
            code: int | None = p.returncode if p.returncode >= 0 else None
            out, err, timed_out = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"), False
        except subprocess.TimeoutExpired as exc:
            code, timed_out = None, True
            out = (exc.stdout or b"").decode(errors="replace")
            err = (exc.stderr or b"").decode(errors="replace")
        after = {str(p.relative_to(tmp)) for p in tmp.rglob("*")}
        return Result(code, out, err, time.perf_counter() - t0, 0, timed_out, sorted(after - before))
