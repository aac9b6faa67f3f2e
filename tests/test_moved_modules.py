"""The package move of 0.x: every old flat module path still imports, as the very module it moved to (one
object, so a patch through either name is seen through both), and ``roofline.device`` stays the function."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import roofline


@pytest.mark.parametrize("old", sorted(roofline.MOVED_MODULES))
def test_old_path_is_the_moved_module(old: str) -> None:
    new = f"roofline.{roofline.MOVED_MODULES[old]}.{old}"
    assert importlib.import_module(f"roofline.{old}") is importlib.import_module(new)


def test_every_flat_module_left_is_a_shim_or_an_entry_point() -> None:
    """The root holds the package face (__init__), the entry points (cli, demo), measurement and the shims."""
    from pathlib import Path

    root = Path(roofline.__file__).parent
    flat = {p.stem for p in root.glob("*.py")} - {"__init__"}
    assert flat - set(roofline.MOVED_MODULES) == {"cli", "demo", "measurement"}


def test_importing_the_old_device_path_keeps_the_device_function() -> None:
    """In a fresh interpreter (sys.modules not yet holding anything): ``import roofline.device`` after
    ``import roofline`` must not rebind the package attribute to the module."""
    code = ("import roofline, roofline.device\n"
            "from roofline.device import Device\n"
            "assert callable(roofline.device) and not isinstance(roofline.device, type(roofline))\n"
            "assert roofline.device('h100').name == 'NVIDIA H100 SXM5 80GB'\n"
            "import roofline.hardware.device as m; assert m.Device is Device\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
