"""The program exits without the interpreter's teardown (cli.exit_now), and nothing a normal exit does is lost:
exit handlers run, the standard streams are flushed, the exit status is kept; with another thread running it is
the interpreter's own exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
PROGRAM = """
import atexit, runpy, sys, threading, time
atexit.register(lambda: print("handler ran", flush=False))
if sys.argv[1] == "thread":
    threading.Thread(target=time.sleep, args=(0.3,)).start()
import weakref
class Finalised: pass
keep = Finalised()
weakref.finalize(keep, print, "finalizer ran")  # run at exit through atexit while the object lives
class Teardown:
    def __del__(self):
        sys.stdout.write(" teardown ran")  # only when the interpreter frees this module's globals
noisy = Teardown()
sys.stdout.write("buffered, no newline")  # still in the buffer when the command returns
sys.argv = ["roofline", *sys.argv[2:]]
runpy.run_module("roofline.cli", run_name="__main__")
"""


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", PROGRAM, *argv], capture_output=True, text=True, env=env,
                          timeout=120)


def test_handlers_run_streams_flushed_status_kept(tmp_path):
    out = _run("plain", "plot", "--peak", "100GFLOP/s", "--bandwidth", "10GB/s", "-o", str(tmp_path / "c.svg"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("buffered, no newline")
    assert "handler ran" in out.stdout and "finalizer ran" in out.stdout
    assert (tmp_path / "c.svg").stat().st_size > 0
    assert "teardown ran" not in out.stdout  # the interpreter's teardown skipped
    bad = _run("plain", "plot", "--peak", "nonsense")
    assert bad.returncode == 2 and "roofline: error:" in bad.stderr and "handler ran" in bad.stdout


def test_another_thread_running_is_a_normal_exit(tmp_path):
    out = _run("thread", "plot", "--peak", "100GFLOP/s", "--bandwidth", "10GB/s", "-o", str(tmp_path / "c.svg"))
    assert out.returncode == 0 and "handler ran" in out.stdout and "finalizer ran" in out.stdout


def test_exit_now_returns_while_a_thread_runs():
    import threading

    from roofline.cli import exit_now

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert exit_now(0) is None  # returned: this process (pytest's) goes on
    finally:
        stop.set()
        t.join()


def test_under_a_profiler_the_program_returns(tmp_path):
    """python -m cProfile reports after the program returns: no early exit under it (the profile is written)."""
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    prof = tmp_path / "p.prof"
    out = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "roofline.cli", "plot", "--peak",
                          "100GFLOP/s", "--bandwidth", "10GB/s", "-o", str(tmp_path / "c.svg")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert prof.stat().st_size > 0
