"""The bench's measuring child never outlives its parent (issue 32: SIGTERM left it measuring alone).

The child's program is swapped for one that writes its pid and sleeps, so the tests need no bench run
and take a second or two.  "Gone" is checked through /proc: a process that has exited but is not yet
reaped (a zombie, state Z) has stopped running, which is what matters.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")

PARENT = """
import dataclasses, sys
sys.path.insert(0, {src!r})
from roofline.bench import _worker
_worker.BOOT = "import os, time; open({pidfile!r} + '.tmp', 'w').write(str(os.getpid())); os.replace({pidfile!r} + '.tmp', {pidfile!r}); time.sleep(120)"

@dataclasses.dataclass
class Config:
    tiny: bool = True

_worker.run_in_child(Config())
"""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _start(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    pidfile = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT.format(src=SRC, pidfile=str(pidfile))],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not pidfile.exists():
        assert parent.poll() is None, parent.stderr.read().decode() if parent.stderr else "parent died"
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    return parent, int(pidfile.read_text())


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")


def test_sigterm_to_the_parent_stops_the_child_first(tmp_path: Path) -> None:
    parent, child = _start(tmp_path)
    try:
        assert _running(child)
        parent.send_signal(signal.SIGTERM)
        code = parent.wait(timeout=30)
        # 143 = 128 + SIGTERM (15), the shell's code for a process ended by SIGTERM
        assert code == 143, parent.stderr.read().decode() if parent.stderr else code
        # the parent stopped and reaped the child before it exited: nothing is left running
        assert not _running(child)
    finally:
        if _running(child):
            os.kill(child, signal.SIGKILL)
        if parent.stderr is not None:
            parent.stderr.close()  # the pipe closed here (a ResourceWarning is an error in this suite)


def test_a_parent_killed_outright_takes_the_child_with_it(tmp_path: Path) -> None:
    parent, child = _start(tmp_path)
    try:
        parent.kill()  # SIGKILL: no handler of the parent runs; PR_SET_PDEATHSIG has the kernel end the child
        parent.wait(timeout=30)
        assert _gone_within(child, 10)
    finally:
        if _running(child):
            os.kill(child, signal.SIGKILL)
        if parent.stderr is not None:
            parent.stderr.close()  # the pipe closed here (a ResourceWarning is an error in this suite)
