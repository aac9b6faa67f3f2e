"""The CPU bench in a child process, so its OpenMP and numba settings never reach the caller's process.

Measuring needs process-wide settings: ``OMP_WAIT_POLICY``, ``OMP_PROC_BIND``
and ``OMP_PLACES`` before libgomp starts, and numba's threading layer.  Once
started with them, libgomp pins the calling thread to one CPU for the rest of
the process.  So :func:`roofline.bench.run_bench` runs :func:`run_cpu_bench`
in a fresh interpreter (:data:`BOOT`; a subprocess rather than multiprocessing,
so a caller's unguarded script is never re-imported), and only a Device comes back.

The protocol, one JSON object per line (anything else the child prints goes to
its stderr, which is the caller's):

- parent -> child (stdin): the parent's ``sys.path`` (so the child imports this
  same roofline, a source checkout too) and the :class:`~roofline.bench.sampling.BenchConfig` fields;
- child -> parent (stdout): ``{"progress": [fraction, text]}`` as stages complete; then
  ``{"device": {...}}`` (a ``roofline.device/3`` document), or
  ``{"error": "RooflineError" | "MissingExtraError", "message": ...}`` for bad input, or
  ``{"error": "exception", "traceback": ...}`` for anything else.

SIGINT (Ctrl-C reaches both processes) ends the child at once with exit code
130, and the parent raises KeyboardInterrupt; a parent interrupted on its own
stops the child before it re-raises.  SIGTERM to the parent (``kill``, a job
scheduler's timeout) stops the child the same way, then the parent exits with
143 (128 + 15, as the shell reports a process ended by SIGTERM).  A parent that
dies without running any code (SIGKILL, the OOM killer) takes the child with it
on Linux: the child asks the kernel for SIGTERM when its parent goes
(``prctl(PR_SET_PDEATHSIG)``, prctl(2)) before anything else, and ends at once
if the parent is already gone.  Nothing is written by either.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

from roofline.core.errors import MissingExtraError, RooflineError
from roofline.hardware.device import Device

Progress = Callable[[float, str], None]
INTERRUPTED = 130  # the shell's code for a process ended by SIGINT
STOP_SECONDS = 5.0  # how long a child gets to stop on SIGINT before it is killed
TERMINATED = 128 + signal.SIGTERM  # the parent's exit code after SIGTERM: 143, as the shell reports it
#: The child's first line on Linux: SIGTERM when the parent dies (PR_SET_PDEATHSIG = 1, prctl(2)), then
#: exit at once if the parent died before that call (the child was re-parented: its parent id moved off
#: the one the parent passed in the environment).  Anywhere else (or without libc) it does nothing.
DIE_WITH_PARENT = ("import os, signal, sys\n"
                   "if sys.platform.startswith('linux'):\n"
                   "    try:\n"
                   "        import ctypes; ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)\n"
                   "    except (OSError, AttributeError):\n"
                   "        pass\n"
                   "    if os.getppid() != int(os.environ.get('ROOFLINE_BENCH_PARENT', os.getppid())):\n"
                   "        os._exit(1)\n")
#: The child's program: SIGINT ends it at once (from its first line, imports included, no traceback);
#: then the parent's import path (as multiprocessing's spawn passes it), then :func:`main`.
BOOT = (f"import os, signal; signal.signal(signal.SIGINT, lambda signum, frame: os._exit({INTERRUPTED})); "
        "import json, sys; msg = json.loads(sys.stdin.readline()); sys.path[:] = msg['sys_path']; "
        "from roofline.bench._worker import main; sys.exit(main(msg['config']))")


# -- the parent's side ----------------------------------------------------------------------

def run_in_child(config: Any, progress: Progress | None = None) -> Device:
    """:func:`roofline.bench.cpu.run_cpu_bench` (``config``, ``progress``) in a child process.

    Errors come back as they were raised: a :class:`RooflineError` as the same one-line error,
    anything else as a RuntimeError carrying the child's traceback.
    """
    env = {**os.environ, "ROOFLINE_BENCH_PARENT": str(os.getpid())}
    with _sigterm_as_exit():
        proc = subprocess.Popen([sys.executable, "-c", DIE_WITH_PARENT + BOOT], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, encoding="utf-8", env=env)
        return _talk(proc, config, progress)


@contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """While the child runs, SIGTERM raises SystemExit(143) in the parent, so the child is stopped first.

    Python's default for SIGTERM ends the process without running any code, which left the child
    measuring on its own.  Only the main thread can set a handler; elsewhere the default stays.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(TERMINATED)

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _talk(proc: subprocess.Popen[str], config: Any, progress: Progress | None) -> Device:
    """Send the config, pass progress on, and return the child's device; stop the child on any exit."""
    try:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps({"sys_path": [p for p in sys.path if isinstance(p, str)], "config": dataclasses.asdict(config)}) + "\n")
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the child is gone already: its exit code below says so
        result = _read(proc.stdout, progress)
        code = proc.wait()
    except BaseException:  # Ctrl-C or SIGTERM (SystemExit) in the parent, or a progress callback that failed
        _stop(proc)
        raise
    finally:
        if proc.stdout is not None:
            proc.stdout.close()
    if code in (INTERRUPTED, -signal.SIGINT):
        raise KeyboardInterrupt
    return _result(result, code)


def _read(lines: IO[str], progress: Progress | None) -> dict[str, Any]:
    """Pass progress on until the child's last message (its result or error), which is returned."""
    last: dict[str, Any] = {}
    for line in lines:
        try:
            msg = json.loads(line)
        except ValueError:
            sys.stderr.write(line)  # not ours: show it, as the child's stderr is shown
            continue
        if "progress" in msg:
            if progress is not None:
                fraction, text = msg["progress"]
                progress(float(fraction), str(text))
        else:
            last = msg
    return last


def _result(msg: dict[str, Any], code: int) -> Device:
    if "device" in msg:
        return Device.from_dict(msg["device"], where="roofline bench")
    if msg.get("error") in ("RooflineError", "MissingExtraError"):
        cls = MissingExtraError if msg["error"] == "MissingExtraError" else RooflineError
        err = cls.__new__(cls)
        RooflineError.__init__(err, msg["message"])
        raise err
    if "traceback" in msg:
        raise RuntimeError(f"the benchmark failed in its worker process:\n{msg['traceback'].rstrip()}")
    raise RuntimeError(f"the benchmark process ended with exit code {code} and no result (its errors, if any, "
                       "are on stderr above)")


def _stop(proc: subprocess.Popen[str]) -> None:
    """Stop the child as Ctrl-C would (SIGINT), then kill it if it does not end within STOP_SECONDS."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGINT if os.name == "posix" else signal.SIGTERM)
        proc.wait(timeout=STOP_SECONDS)
    except (subprocess.TimeoutExpired, OSError):
        proc.kill()
        proc.wait()


# -- the child's side -------------------------------------------------------------------------

def main(fields: dict[str, Any]) -> int:
    """Measure with these BenchConfig ``fields``, writing the messages above on stdout (run by :data:`BOOT`)."""
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # stray prints (ours, numba's, a BLAS's) go to stderr, never into the channel

    def send(msg: dict[str, Any]) -> None:
        channel.write(json.dumps(msg) + "\n")

    try:
        from roofline.bench.cpu import run_cpu_bench
        from roofline.bench.sampling import BenchConfig

        # JSON has no tuples: the tuple fields (gemm_sizes, ert_flops) arrive as lists
        kwargs: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
        config = BenchConfig(**kwargs)
        device = run_cpu_bench(config, lambda fraction, text: send({"progress": [fraction, text]}))
        send({"device": device.to_dict()})
    except KeyboardInterrupt:
        os._exit(INTERRUPTED)
    except RooflineError as exc:
        send({"error": type(exc).__name__ if isinstance(exc, MissingExtraError) else "RooflineError",
              "message": str(exc)})
        return 2
    except Exception:
        send({"error": "exception", "traceback": traceback.format_exc()})
        return 1
    finally:
        channel.flush()
    return 0

