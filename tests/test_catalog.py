"""The shipped device catalog: coverage, provenance, pinned datasheet figures, lookup."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from roofline.catalog import closest, devices, get_device, normalize
from roofline.core.errors import RooflineError
from roofline.hardware.device import Device

ALL = devices()


def test_catalog_has_at_least_25_devices():
    assert len(ALL) >= 25
    kinds = {d.kind for d in ALL}
    assert {"gpu", "tpu", "npu", "cpu"} <= kinds


def test_every_catalog_file_is_well_formed():
    files = [p for p in resources.files("roofline.catalog").iterdir() if p.name.endswith(".json")]
    assert {"nvidia.json", "amd.json", "google.json", "intel.json", "apple.json"} <= {p.name for p in files}
    for f in files:
        data = json.loads(f.read_text(encoding="utf-8"))
        assert data["schema"] == "roofline.catalog/1"
        sources = data["sources"]
        for key, src in sources.items():
            assert src.get("title"), f"{f.name}: source {key} has no title"
            assert src.get("url", "").startswith("https://"), f"{f.name}: source {key} has no https url"
        for d in data["devices"]:
            ceilings = [*d["compute"], *d["memory"]]
            if d.get("interconnect"):
                ceilings.append(d["interconnect"])
            for c in ceilings:
                key = c["provenance"]["source"]
                assert key in sources, f"{f.name}: {d['name']} cites unknown source {key!r}"


@pytest.mark.parametrize("dev", ALL, ids=lambda d: d.name)
def test_every_ceiling_has_provenance(dev: Device):
    ceilings = [*dev.compute, *dev.memory]
    if dev.interconnect is not None:
        ceilings.append(dev.interconnect)
    for c in ceilings:
        p = c.provenance
        assert p.kind in ("datasheet", "derived"), (dev.name, p)
        assert p.source.strip(), (dev.name, c)
        if p.kind == "datasheet":
            assert p.url.startswith("https://"), (dev.name, c)
        if p.kind == "derived":
            assert p.note.strip(), f"{dev.name}: derived figure without its derivation"
        assert p.dense, (dev.name, c)
    assert dev.main_memory.level in ("HBM", "DRAM")
    assert dev.main_memory.bandwidth > 0


def _tf(name: str, unit: str, precision: str) -> float:
    c = get_device(name).ceiling(unit, precision)
    assert c is not None, f"{name} has no {precision} {unit} ceiling"
    return c.flops


def test_pinned_h100_sxm():
    h100 = get_device("h100")
    assert h100.name == "NVIDIA H100 SXM5 80GB"
    assert get_device("H100-SXM5-80GB") is h100
    assert get_device("h100 sxm") is h100
    assert _tf("h100", "matrix", "bf16") == pytest.approx(989.4e12)
    assert h100.memory_level("HBM").bandwidth == pytest.approx(3.35e12)


def test_pinned_a100_sxm4_80gb():
    a100 = get_device("a100")
    assert a100 is get_device("a100-80gb") is get_device("A100-SXM4-80GB")
    assert _tf("a100", "matrix", "bf16") == pytest.approx(312e12)
    assert a100.memory_level("HBM").bandwidth == pytest.approx(2.039e12)
    # nvidia-smi reports 81920 MiB for the A100 80GB (modal-labs/modal-client#2797): 81920 x 2^20 B = 80 GiB
    assert a100.memory_level("HBM").capacity == 81920 * 2**20
    # less the stated 512 MiB reserve (the CUDA context): 81408 MiB = 79.5 GiB
    assert a100.memory_capacity == (81920 - 512) * 2**20


def test_pinned_mi300x():
    assert _tf("mi300x", "matrix", "bf16") == pytest.approx(1307.4e12)
    assert get_device("MI300X").main_memory.bandwidth == pytest.approx(5.3e12)


def test_pinned_h200():
    h200 = get_device("h200")
    assert "H200 SXM" in h200.name
    assert h200.main_memory.bandwidth == pytest.approx(4.8e12)


def test_pinned_tpu_v5e():
    v5e = get_device("tpu-v5e")
    assert v5e is get_device("v5e")
    assert v5e.kind == "tpu"
    assert _tf("v5e", "matrix", "bf16") == pytest.approx(197e12)
    assert v5e.main_memory.bandwidth == pytest.approx(819e9)


@pytest.mark.parametrize("alias", [
    "h100-sxm", "h100sxm", "h100-pcie", "a100-40gb", "a100-pcie", "v100", "t4", "a10", "l4", "l40s",
    "4090", "rtx4090", "3090", "b200", "mi250x", "mi325x", "tpu-v4", "v5p", "gaudi2", "gaudi3",
    "m2-ultra", "m4-max", "spr", "xeon-8480", "genoa", "epyc-9654",
])
def test_aliases_resolve(alias: str):
    dev = get_device(alias)
    assert normalize(alias) in {normalize(a) for a in (dev.name, *dev.aliases)}


def test_distinct_parts_are_distinct():
    assert get_device("a10") is not get_device("a100")
    assert get_device("a100") is not get_device("a100-pcie")
    assert get_device("a100") is not get_device("a100-40gb")
    assert get_device("h100") is not get_device("h100-pcie")
    assert get_device("h100") is not get_device("h200")


def test_cpu_and_sparse_sanity():
    spr = get_device("spr")
    assert spr.kind == "cpu"
    assert spr.ceiling("matrix", "bf16").flops == pytest.approx(56 * 2.0e9 * 1024)
    assert spr.main_memory.bandwidth == pytest.approx(8 * 4800e6 * 8)
    genoa = get_device("genoa")
    assert genoa.main_memory.bandwidth == pytest.approx(12 * 4800e6 * 8)
    # dense figures only: A100 dense bf16 is half its 624 TFLOPS sparse figure
    assert get_device("a100").ceiling("matrix", "bf16").flops < 400e12


def test_unknown_name_lists_three_closest():
    with pytest.raises(RooflineError) as info:
        get_device("h1000-sxm")
    message = str(info.value)
    assert "unknown device 'h1000-sxm'" in message
    match = re.search(r"closest: (.*?) \(see", message)
    assert match, message
    names = match.group(1).split(", ")
    assert len(names) == 3
    by_name = {d.name for d in ALL}
    assert all(n in by_name for n in names)
    assert names == closest("h1000-sxm")
    assert "NVIDIA H100 SXM5 80GB" in names


@pytest.mark.parametrize("dev", ALL, ids=lambda d: d.name)
def test_json_round_trip(dev: Device):
    again = Device.from_dict(dev.to_dict())
    assert again == dev
    assert Device.from_dict(json.loads(dev.to_json())) == dev


P, T = 1e15, 1e12
# catalog name -> the dense matrix roofs (FLOP/s, INT8 in OP/s), typed in from the cited tables (dense = the
# datasheet's sparse figure / 2 where only that is given): GB200 NVL72 per-GPU column 20/10/10/5/2.5 PF sparse
# (zdszero copy of NVIDIA's table); HGX B200 18 PF FP4 sparse, 'FP8/FP6' 9; Verda's dense B300 / GB300 columns;
# stas00/ml-engineering @744d01e dense table (B300 fp6 4,500, fp4 12,600; MI355X 2,500 / 5,000 / 10,100 / 10,100);
# H20 148 FP16 / 296 INT8 (zangshuxian), 296 FP8 (TweakTown); Cloud TPU docs v6e 918 bf16 / 918 fp8 / 1836 int8,
# TPU7x 2307 bf16 / 4614 fp8; RTX PRO 6000 '4000 TOPS' FP4 AI (sparse) / 2.
NEW_ROOFS: dict[str, dict[str, float]] = {
    "b200": {"fp4": 9 * P, "fp6": 4.5 * P, "fp8": 4.5 * P, "bf16": 2.25 * P},
    "gb200": {"fp4": 10 * P, "fp6": 5 * P, "fp8": 5 * P, "int8": 5 * P, "bf16": 2.5 * P, "fp16": 2.5 * P,
              "tf32": 1.25 * P, "fp64": 40 * T},
    "b300": {"fp4": 12.6 * P, "fp6": 4.5 * P, "fp8": 4.5 * P, "bf16": 2.25 * P, "int8": 0.15 * P},
    "gb300": {"fp4": 15 * P, "fp6": 5 * P, "fp8": 5 * P, "bf16": 2.5 * P, "int8": 0.165 * P},
    "h20": {"fp8": 296 * T, "int8": 296 * T, "bf16": 148 * T, "fp16": 148 * T, "tf32": 74 * T},
    "rtx-pro-6000": {"fp4": 2 * P},
    "mi355x": {"fp4": 10.1 * P, "fp6": 10.1 * P, "fp8": 5 * P, "int8": 5 * P, "bf16": 2.5 * P, "fp64": 78.6 * T},
    "tpu-v6e": {"bf16": 918 * T, "fp8": 918 * T, "int8": 1836 * T},
    "tpu-v7": {"bf16": 2307 * T, "fp8": 4614 * T},
}
# (HBM/DRAM bandwidth B/s, capacity bytes, interconnect B/s per direction or None), from the same sources
NEW_MEMORY = {"gb200": (8e12, 186e9, 900e9), "b300": (7.7e12, 270e9, 900e9), "gb300": (8e12, 279e9, 900e9),
              "h20": (4e12, 96e9, 450e9), "rtx-pro-6000": (1597e9, 96e9, None), "mi355x": (8e12, 288e9, 537.6e9),
              "tpu-v6e": (1638e9, 32e9, 400e9), "tpu-v7": (7.37e12, 192 * 2**30, 600e9)}


@pytest.mark.parametrize("name", sorted(NEW_ROOFS))
def test_new_devices_carry_their_cited_roofs(name: str):
    d = get_device(name)
    for prec, flops in NEW_ROOFS[name].items():
        roof = d.ceiling("matrix", prec)
        assert roof is not None and roof.flops == pytest.approx(flops), (name, prec)
        assert roof.provenance.source and roof.provenance.url.startswith("https://") and roof.provenance.note
    if name in NEW_MEMORY:
        bw, cap, link = NEW_MEMORY[name]
        main = d.memory[0]
        assert main.bandwidth == pytest.approx(bw) and main.capacity == pytest.approx(cap)
        assert (d.interconnect.bandwidth if d.interconnect else None) == (None if link is None else pytest.approx(link))


def test_no_roof_the_vendor_does_not_publish():
    # TPU7x is published as BF16 and FP8 only; v6e has no FP4; Hopper's H20 has no FP4 or FP6
    assert {c.key for c in get_device("tpu-v7").compute} == {("matrix", "bf16"), ("matrix", "fp8")}
    for name in ("tpu-v6e", "h20", "h100"):
        assert get_device(name).ceiling("matrix", "fp4") is None, name
    # FP6 at the FP8 rate on Blackwell and at the FP4 rate on CDNA 4 -- each cited on its own row, not copied
    assert get_device("b200").ceiling("matrix", "fp6").provenance.note != get_device("b200").ceiling(
        "matrix", "fp8").provenance.note
    assert "FP6" in get_device("mi355x").ceiling("matrix", "fp6").provenance.note


@pytest.mark.parametrize("name", ["gb200", "b200"])
def test_device_command_shows_the_fp4_roof_with_its_citation(name: str, capsys):
    from roofline.cli import main

    assert main(["device", name]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if re.match(r"\s+matrix\s+fp4\s", line))
    ref = re.search(r"\[(\d+)\]\s*$", row).group(1)  # the row's footnote
    note = out[out.index(f"  [{ref}] "):]
    assert "zdszero" in note.split("\n  [")[0] and "FP4 Tensor Core" in note.split("\n  [")[0].replace("\n      ", " ")


def test_device_cites_each_source_once_and_whole(monkeypatch, capsys) -> None:
    """`roofline device h100`: the ten H100 roofs taken from one page cite it once, each roof's figure listed under
    it; nothing is cut ('...[+N chars]'), the interconnect's provenance included (issue 48, item 8)."""
    from roofline import get_device
    from roofline.cli import main

    monkeypatch.setenv("COLUMNS", "120")
    assert main(["device", "h100"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert "[+" not in out and "..." not in out
    d = get_device("h100")
    pages = {c.provenance.source for c in [*d.compute, *d.memory]}
    assert len(pages) == 2  # Lockwood's H100 table for the ten roofs, HPC Technologies' spec copy for HBM
    for page in pages:  # one citation per source page (the interconnect's is derived: a source of its own kind)
        assert flat.count(f"datasheet: {' '.join(page.split())}") == 1
    for c in d.compute:  # each roof's own figure, under its source
        assert f"{c.precision} {c.unit}: {' '.join(c.provenance.note.split())}" in flat
    assert "interconnect: NVLink: 900 GB/s total" in flat
