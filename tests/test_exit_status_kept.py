"""The test command's exit status is the suite's: nothing imported during collection may end the process with
its own status (the forkserver warm-up module once registered ``os._exit(0)`` at import, so pytest's exit 1 on a
failed test became 0 and CI read a red suite as green)."""

import subprocess
import sys
from pathlib import Path

import roofline


def test_importing_the_forkserver_warm_up_keeps_a_scripts_exit_status(tmp_path):
    # a script (not ``-c``: the forkserver is the only ``-c`` process that imports it) that imports the module the
    # forkserver preloads, then exits 3: the status must stay 3, not the warm-up's 0
    script = tmp_path / "exit3.py"
    script.write_text("import roofline.frontends.trace.warm\nraise SystemExit(3)\n")
    rc = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=300).returncode
    assert rc == 3


def test_a_failing_test_fails_the_run_with_doctest_collection_on(tmp_path):
    # pytest with the project's own options (--doctest-modules over src/roofline collects every module) on a
    # failing test must exit 1; --collect-only of src/roofline would not run the failure, so run both together
    bad = tmp_path / "test_bad.py"
    bad.write_text("def test_bad():\n    assert 1 == 2\n")
    src = Path(roofline.__file__).parent
    rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--doctest-modules",
                         str(bad), str(src / "frontends" / "trace")], capture_output=True, timeout=600).returncode
    assert rc == 1
