"""roofline in Jupyter: a real notebook on the python3 kernel (nbclient), the compact reprs, the notebook
table's sorter, and docs/python-api.md run as a doctest.

Under CI=true a missing nbclient/nbformat/ipykernel or python3 kernel fails the notebook tests; elsewhere
they are skipped with the reason.
"""

from __future__ import annotations

import doctest
import html
import importlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import roofline
from roofline import Device, Op, Workload, analyze

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 2048  # bytes: every text repr, however large the model
CI = os.environ.get("CI") == "true"


def _missing(reason: str) -> None:
    """Fail under CI (the suite must run there), skip elsewhere."""
    if CI:
        pytest.fail(f"CI=true: {reason}")
    pytest.skip(reason)


def _require(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        _missing(f"{module} is not installed ({exc}); pip install -e '.[test]'")
        raise  # unreachable: _missing raised


def big_workload(n: int = 10_000) -> Workload:
    """A 10^4-op model: a matmul and two fusible ops per 'layer' of three, 30 ops per module."""
    kinds = ("matmul", "elementwise", "norm")
    return Workload.from_ops(
        [Op(f"op{i}", kind=kinds[i % 3], flops=2e9 if i % 3 == 0 else 1e6, bytes_read=4e6, bytes_written=2e6,
            precision="bf16", unit="matrix" if i % 3 == 0 else "vector", group=f"model.layers.{i // 30}")
         for i in range(n)], title="synthetic 10^4-op model")


# ----------------------------------------------------------------------------- the notebook
SETUP = """\
%matplotlib inline
import json
import matplotlib
import matplotlib.pyplot as plt
import roofline
before = matplotlib.get_backend()
a = roofline.analyze(roofline.from_llm("llama-2-7b", phase="decode", batch=1), roofline.device("h100"))"""

BIG = """\
from roofline import Op, Workload
kinds = ("matmul", "elementwise", "norm")
big_w = Workload.from_ops(
    [Op(f"op{i}", kind=kinds[i % 3], flops=2e9 if i % 3 == 0 else 1e6, bytes_read=4e6, bytes_written=2e6,
        precision="bf16", unit="matrix" if i % 3 == 0 else "vector", group=f"model.layers.{i // 30}")
     for i in range(10_000)], title="synthetic 10^4-op model")
big = roofline.analyze(big_w, roofline.device("h100"))
adv = roofline.advise(big)"""

CELLS = {
    "setup": SETUP,
    "plot": "roofline.plot(a)",
    "after_plot": "after_plot = matplotlib.get_backend()\na",
    "backends": 'print(json.dumps({"before": before, "after_plot": after_plot, "after_display": matplotlib.get_backend()}))',
    "user_plot": "plt.plot([1, 2, 3], [3, 1, 2])\nplt.show()",
    "big": BIG,
    "workload": "big_w",
    "device": "roofline.device('h100')",
    "analysis": "display(big, include=['text/plain'])  # its HTML draws 10^4 points: the text repr is what is checked",
    "advice": "adv",
    "print": "print(big)",
}


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Run the notebook once on the python3 kernel; the outputs of each cell, by cell name."""
    nbformat = _require("nbformat")
    nbclient = _require("nbclient")
    _require("ipykernel")
    kernelspec = _require("jupyter_client.kernelspec")
    try:
        kernelspec.KernelSpecManager().get_kernel_spec("python3")
    except kernelspec.NoSuchKernel as exc:
        _missing(f"no python3 Jupyter kernel ({exc}); pip install ipykernel")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS.values()]
    path = tmp_path_factory.mktemp("notebook")
    env_backend = os.environ.pop("MPLBACKEND", None)  # the kernel picks its own (inline), as in Jupyter
    try:
        client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=300,
                                         resources={"metadata": {"path": str(path)}})
        client.execute()
    finally:
        if env_backend is not None:
            os.environ["MPLBACKEND"] = env_backend
    return {name: [dict(o) for o in cell.outputs] for name, cell in zip(CELLS, nb.cells, strict=True)}


def _data(outputs: list[dict[str, Any]], mime: str) -> list[str]:
    return [o["data"][mime] for o in outputs if mime in o.get("data", {})]


def _backends(notebook: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    text = "".join(o.get("text", "") for o in notebook["backends"] if o.get("output_type") == "stream")
    return json.loads(text)


def test_plot_leaves_the_notebook_backend_alone(notebook: dict[str, list[dict[str, Any]]]) -> None:
    b = _backends(notebook)
    assert "inline" in b["before"].lower()  # the check is not vacuous: the notebook's own backend
    assert b["after_plot"] == b["before"]  # roofline.plot(a)
    assert b["after_display"] == b["before"]  # displaying an Analysis draws its chart too


def test_plot_displays_the_chart(notebook: dict[str, list[dict[str, Any]]]) -> None:
    out = notebook["plot"]
    assert _data(out, "image/png") or _data(out, "image/svg+xml"), out


def test_users_own_plot_still_shows(notebook: dict[str, list[dict[str, Any]]]) -> None:
    out = notebook["user_plot"]
    assert _data(out, "image/png") or _data(out, "image/svg+xml"), out


def test_analysis_displays_summary_chart_and_sortable_table(notebook: dict[str, list[dict[str, Any]]]) -> None:
    (page,) = _data(notebook["after_plot"], "text/html")
    assert "<svg" in page and '<table class="sortable ops">' in page and "<script>" in page
    (text,) = _data(notebook["after_plot"], "text/plain")
    assert text.startswith("<Analysis of 'llama-2-7b decode batch 1' on 'NVIDIA H100 SXM5 80GB'")


@pytest.mark.parametrize("cell, starts", [("workload", "<Workload 'synthetic 10^4-op model': 10,000 ops"),
                                          ("device", "<Device 'NVIDIA H100 SXM5 80GB'"),
                                          ("analysis", "<Analysis of 'synthetic 10^4-op model'"),
                                          ("advice", "<Advice for 'synthetic 10^4-op model'")])
def test_reprs_in_the_notebook_are_small(notebook: dict[str, list[dict[str, Any]]], cell: str, starts: str) -> None:
    (text,) = _data(notebook[cell], "text/plain")
    assert text.startswith(starts) and "\n" not in text and len(text.encode()) < LIMIT, text
    for page in _data(notebook[cell], "text/html"):  # Workload, Device, Advice: small tables and lists
        assert len(page.encode()) < 2 * LIMIT, page[:300]


def test_print_of_a_large_analysis_is_short(notebook: dict[str, list[dict[str, Any]]]) -> None:
    text = "".join(o.get("text", "") for o in notebook["print"])
    assert "top 5 of 10,000 ops by roofline time:" in text and len(text.encode()) < LIMIT, text


# ----------------------------------------------------------------------------- the reprs, in process
def test_reprs_of_a_large_model_are_one_short_line() -> None:
    w = big_workload()
    a = analyze(w, roofline.device("h100"))
    adv = roofline.advise(a)
    for x in (w, a.device, a, adv, *adv.levers, *adv.ops):
        r = repr(x)
        assert "\n" not in r and len(r.encode()) < LIMIT and "array(" not in r, r[:300]
    for x in (w, a.device, adv):
        assert len(x._repr_html_().encode()) < 2 * LIMIT
    assert len(str(a).encode()) < LIMIT and "array(" not in str(a)


def test_repr_texts() -> None:
    dev = Device.simple("seed", "100 GFLOP/s", "10 GB/s")
    w = Workload.from_ops([Op("app", flops=8e8, bytes_read=4e9)], title="seed app")
    a = analyze(w, dev)
    assert repr(w) == "<Workload 'seed app': 1 op, 800 MFLOP, 4 GB>"
    assert repr(dev) == "<Device 'seed': 100 GFLOP/s fp32 vector, DRAM 10 GB/s>"
    assert repr(roofline.device("h100")) == "<Device 'NVIDIA H100 SXM5 80GB': 989.4 TFLOP/s bf16 matrix, HBM 3.35 TB/s>"
    # the bound is the summary layer's binding roof, word for word
    from roofline.words.summary import binding_roof

    b = binding_roof(a)
    assert repr(a) == (f"<Analysis of 'seed app' on 'seed': 400 ms, {b.kind}-bound on {b.name} "
                       f"({b.share:.0%} of the time)>")
    assert repr(a) == "<Analysis of 'seed app' on 'seed': 400 ms, memory-bound on DRAM (100% of the time)>"
    adv = roofline.advise(a, devices=False)
    assert repr(adv).startswith("<Advice for 'seed app' on 'seed': no lever found; limiting roof: memory (DRAM")
    assert "<ol>" in adv._repr_html_()


def test_hostile_names_in_reprs_are_one_line_and_escaped() -> None:
    name = "<img src=x onerror=alert(1)>\n\x1b[2J" + "x" * 5000
    w = Workload.from_ops([Op("a", flops=1e9, bytes_read=1e9)], title=name)
    dev = Device.simple(name, "1 TFLOP/s", "1 TB/s")
    a = analyze(w, dev)
    for x in (w, dev, a, roofline.advise(a, devices=False)):
        r = repr(x)
        assert "\n" not in r and "\x1b" not in r and len(r) < 600, r
    for x in (w, dev, roofline.advise(a, devices=False)):  # the Analysis page: tests/test_html.py
        page = x._repr_html_()
        assert "<img" not in page and "\x1b" not in page and "&lt;img src=x" in page


# ----------------------------------------------------------------------------- roofline.hardware.device
def test_device_lookup_by_name_and_the_module_still_imports() -> None:
    assert roofline.device("h100") is roofline.get_device("H100-SXM5-80GB")
    assert roofline.device("A100-80GB").name == "NVIDIA A100 SXM4 80GB"
    dev = Device.simple("mine", "1 TFLOP/s", "1 TB/s")
    assert roofline.device(dev) is dev
    with pytest.raises(roofline.RooflineError, match="closest"):
        roofline.device("h1000000")
    # the submodule is still importable by name (the package attribute is the function)
    import sys

    from roofline.hardware.device import Device as D
    from roofline.hardware.device import MemoryCeiling  # noqa: F401

    assert D is Device and callable(roofline.device)
    assert importlib.import_module("roofline.hardware.device") is sys.modules["roofline.hardware.device"]
    assert isinstance(sys.modules["roofline.hardware.device"], ModuleType)


def test_device_lookup_reads_a_device_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    Device.simple("mine", "2 TFLOP/s", "1 TB/s").save(path)
    assert roofline.device(str(path)).name == "mine"


# ----------------------------------------------------------------------------- the notebook table's sorter
def test_notebook_table_sorter_is_inline_self_contained_and_scoped() -> None:
    from roofline.render.html import notebook_html

    a = analyze(Workload.from_ops([Op("a", flops=1e9, bytes_read=1e6), Op("b", flops=1e6, bytes_read=1e9)]),
                roofline.device("h100"))
    page = notebook_html(a)
    root = re.match(r'<div id="(roofline-[0-9a-f]{32})">', page)
    assert root, page[:100]
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S)
    assert len(scripts) == 1
    attrs, js = scripts[0]
    assert attrs == ""  # inline: no src
    assert f"getElementById('{root.group(1)}')" in js  # bound to this output only
    assert "addEventListener('click'" in js and ".sort(" in js
    for outside in ("http:", "https:", "//cdn", "import(", "require(", "fetch(", "XMLHttpRequest", "$(", "jQuery"):
        assert outside not in js
    # the hint is set by the script: a viewer that strips scripts claims nothing
    assert "click to sort" not in page.replace(js, "")
    assert "click to sort" in js
    assert notebook_html(a) != page  # a fresh id per output: two outputs never bind each other's tables


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_notebook_table_sorts_in_a_browser(tmp_path: Path) -> None:
    from roofline.render.html import notebook_html

    ops = [Op("small", flops=1e6, bytes_read=1e9), Op("big", flops=1e12, bytes_read=1e6),
           Op("mid", flops=1e9, bytes_read=1e8)]
    page = notebook_html(analyze(Workload.from_ops(ops), roofline.device("h100")))
    probe = ("<script>var th=[].slice.call(document.querySelectorAll('table.ops th')).filter(function(h){"
             "return h.textContent==='FLOPs'})[0];th.click();var up=[].map.call(document.querySelectorAll("
             "'table.ops tbody tr'),function(r){return r.cells[1].textContent});th.click();var down=[].map.call("
             "document.querySelectorAll('table.ops tbody tr'),function(r){return r.cells[1].textContent});"
             "document.body.setAttribute('data-probe',JSON.stringify([up,down,th.title]));</script>")
    path = tmp_path / "nb.html"
    path.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{page}{probe}</body></html>",
                    encoding="utf-8")
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000", "--dump-dom",
                        path.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'data-probe="([^"]*)"', p.stdout)
    assert m, p.stderr[-2000:]
    up, down, title = json.loads(html.unescape(m.group(1)))
    assert up == ["small", "mid", "big"] and down == ["big", "mid", "small"] and title == "click to sort"


# ----------------------------------------------------------------------------- docs/python-api.md
def test_python_api_doc_runs_as_a_doctest(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    monkeypatch.chdir(tmp_path)  # the examples write files: here, not in the checkout
    result = doctest.testfile(str(ROOT / "docs" / "python-api.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False,
                              raise_on_error=False)
    assert result.attempted > 20
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in docs/python-api.md failed (above)"
