import json

import pytest

from roofline.device import ComputeCeiling, Device, MemoryCeiling, Provenance
from roofline.errors import RooflineError


def base_dict():
    return {
        "schema": "roofline.device/1", "name": "toy", "kind": "gpu",
        "compute": [{"unit": "matrix", "precision": "bf16", "flops": "100 TFLOP/s",
                     "provenance": {"kind": "datasheet", "source": "toy sheet", "url": "https://example.invalid"}},
                    {"unit": "vector", "precision": "fp32", "flops": 10e12}],
        "memory": [{"level": "HBM", "bandwidth": "1 TB/s", "capacity": "16 GB"},
                   {"level": "L2", "bandwidth": "5 TB/s", "capacity": "40 MiB"}],
    }


def test_from_dict_parses_units_and_round_trips(tmp_path):
    d = Device.from_dict(base_dict())
    assert d.ceiling("matrix", "bf16").flops == 100e12
    assert d.main_memory.level == "HBM" and d.main_memory.capacity == 16e9
    assert d.memory_level("L2").capacity == 40 * 2**20
    # ridge = 100e12 / 1e12 = 100 FLOP/B
    assert d.ridge_intensity("matrix", "bf16") == pytest.approx(100.0)
    p = tmp_path / "toy.json"
    d.save(p)
    assert Device.load(p) == d
    assert json.loads(p.read_text())["schema"] == "roofline.device/1"


def test_measured_provenance_round_trip():
    prov = Provenance(kind="measured", source="roofline bench", method="triad", date="2026-11-29", repeats=5,
                      spread=(9.0e9, 9.8e9), details={"threads": 2})
    d = Device("m", (ComputeCeiling("vector", "fp64", 5e10, prov),), (MemoryCeiling("DRAM", 9.5e9, None, prov),), kind="cpu")
    assert Device.from_dict(d.to_dict()) == d
    assert "spread 9e+09..9.8e+09" in prov.describe()


def test_fallback_order_is_recorded():
    d = Device.from_dict(base_dict())
    # fp16 matrix -> fp16 vector? no: bf16 is next in fp16's chain and a matrix roof exists for it
    assert d.choose_compute("matrix", "fp16").fallback == "fp16 matrix -> bf16 matrix"
    # tf32 matrix: no tf32 roof at all -> fp32, matrix first (absent) then vector
    assert d.choose_compute("matrix", "tf32").ceiling.key == ("vector", "fp32")
    # vector ops never borrow a matrix roof: bf16 vector -> fp32 vector
    assert d.choose_compute("vector", "bf16").ceiling.key == ("vector", "fp32")
    assert d.choose_compute("matrix", "bf16").fallback == ""


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(schema="roofline.device/2"), "schema"),
    (lambda d: d.update(schema="something.else/1"), "schema"),
    (lambda d: d.pop("compute"), "missing field 'compute'"),
    (lambda d: d["compute"][0].pop("flops"), "missing field 'flops'"),
    (lambda d: d["compute"][0].update(flops=-5), "must be a finite number > 0"),
    (lambda d: d["memory"][0].update(bandwidth=0), "must be a finite number > 0"),
    (lambda d: d["memory"][0].update(bandwidth="3 furlongs/s"), "unknown or wrong unit"),
    (lambda d: d["compute"][0].update(flops="3 TB/s"), "unknown or wrong unit"),
    (lambda d: d["compute"][0].update(precision="fp7"), "precision"),
])
def test_bad_device_files(mutate, message):
    d = base_dict()
    mutate(d)
    with pytest.raises(RooflineError) as e:
        Device.from_dict(d, where="dev.json")
    assert message in str(e.value)
    assert "dev.json" in str(e.value)
    assert "\n" not in str(e.value)
