"""Every ```python block in the README runs, and its '# ...' output comments are what it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{k}" for k in range(len(BLOCKS))])
def test_readme_python_block_runs_and_prints_what_it_says(code: str, tmp_path: Path) -> None:
    if "import torch" in code:
        pytest.importorskip("torch")
    # each block in its own interpreter (a torch.library op registers once per process), in a scratch folder
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout.splitlines()
    # a print(...) line followed by a comment line, or with a trailing comment, states its output
    stated = [m.group(1).strip() for m in re.finditer(r"^print\(.*?\)\s*#\s*(.+)$", code, flags=re.M)]
    stated += [m.group(1).strip() for m in re.finditer(r"^print\(.*\)\n# (.+)$", code, flags=re.M)]
    for text in stated:
        if text.startswith(("the ", "roofline.")):  # a remark, not an output
            continue
        assert any(text == line.strip() for line in out), (text, out)
