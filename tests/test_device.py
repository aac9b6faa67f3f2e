import json

import pytest

from roofline.core.errors import RooflineError
from roofline.hardware.device import ComputeCeiling, Device, MemoryCeiling, Provenance


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
    assert json.loads(p.read_text())["schema"] == "roofline.device/3"


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
    (lambda d: d.update(schema="roofline.device/9"), "schema"),
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


def _with(mutate):
    d = base_dict()
    mutate(d)
    return d


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.update(aliases=5), "aliases must be a list"),
    (lambda d: d.update(aliases=["a", 5]), "aliases[1] must be a string"),
    (lambda d: d.update(metadata=[]), "metadata must be an object"),
    (lambda d: d.update(name=5), "name must be a string"),
    (lambda d: d.update(name=""), "name must be a non-empty string"),
    (lambda d: d.update(vendor=["x"]), "vendor must be a string"),
    (lambda d: d.update(interconnect="nvlink"), "interconnect must be an object"),
    (lambda d: d.update(compute=[1]), "compute[0] must be an object"),
    (lambda d: d.update(memory="abc"), "memory must be a list of objects"),
    (lambda d: d["compute"][0].update(provenance="abc"), "compute[0].provenance must be an object"),
    (lambda d: d["compute"][0].update(provenance={"repeats": "x"}), "compute[0].provenance.repeats"),
    (lambda d: d["compute"][0].update(provenance={"dense": "no"}), "compute[0].provenance.dense"),
    (lambda d: d["compute"][0].update(provenance={"source": ["x"]}), "compute[0].provenance.source"),
    (lambda d: d["compute"][0].update(provenance={"methods": [{"method": "m", "value": True}]}),
     "compute[0].provenance.methods[0].value"),
    (lambda d: d["compute"][0].update(unit=5), "compute[0].unit must be a string"),
    (lambda d: d["compute"][0].update(flops=True), "compute[0].flops"),
    (lambda d: d["compute"][0].update(flops=10**400), "compute[0].flops"),
    (lambda d: d["compute"][0].update(flops="1e400 FLOP/s"), "compute[0].flops"),
    (lambda d: d["memory"][0].update(bandwidth=1e-300), "memory[0].bandwidth must be a finite number > 0 from"),
    (lambda d: d["memory"][1].update(level="hbm"), "memory level 'hbm' given twice"),
    (lambda d: d["memory"][1].update(level=" "), "memory level must not be empty"),
    (lambda d: d.update(compute=[]), "needs at least one compute ceiling"),
    (lambda d: d.update(bench={"version": True}), "bench.version"),
    (lambda d: d.update(bench={"version": 2, "isa": "avx"}), "bench.isa must be a list"),
])
def test_device_fields_are_checked_one_by_one(mutate, field):
    with pytest.raises(RooflineError) as e:
        Device.from_dict(_with(mutate), where="dev.json")
    assert field in str(e.value) and "dev.json" in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).count("dev.json") == 1


def test_optional_device_fields_may_be_null_or_absent():
    d = Device.from_dict(_with(lambda d: (d["compute"][1].update(provenance=None),
                                          d["memory"][1].update(capacity=None), d.update(aliases=None, metadata=None))))
    assert d.memory_level("L2").capacity is None and d.aliases == ()


def test_device_file_read_errors_are_one_line(tmp_path):
    long = tmp_path / ("d" * 5000 + ".json")
    with pytest.raises(RooflineError, match="File name too long") as e:
        Device.load(long)
    assert len(str(e.value)) < 400
    bad = tmp_path / "d.json"
    bad.write_bytes(b'{"name": "\xff"}')
    with pytest.raises(RooflineError, match="not valid UTF-8"):
        Device.load(bad)


def test_version_1_bench_devices_load_with_typed_bench_facts():
    """A /1 device written by `roofline bench` kept its sweep, ERT curve, threads and caches in metadata;
    /2 reads them as typed bench facts (the migration moves them) and writes them there."""
    from roofline.hardware.device import Device

    v1 = {"schema": "roofline.device/1", "name": "local: toy (2 threads)", "kind": "cpu",
          "compute": [{"unit": "vector", "precision": "fp64", "flops": 100e9}],
          "memory": [{"level": "DRAM", "bandwidth": 20e9}],
          "metadata": {"cpu_model": "toy", "threads": 2,
                       "sweep": {"working_set_bytes": [1024, 2048], "kernels": ["copy"], "bytes_counting": "STREAM",
                                 "curves": {"2": {"copy": [30e9, 20e9]}, "1": {"copy": [15e9, 10e9]}},
                                 "spread": {"2": {"copy": [[29e9, 31e9], [19e9, 21e9]]}}},
                       "ert": {"flops_per_element": [1, 2], "intensity": [1 / 16, 2 / 16], "flops": [1e9, 2.5e9],
                               "model_flops": [1.25e9, 2.5e9], "working_set_bytes": 4096, "threads": 2,
                               "deviation": [-0.2, 0.0], "max_deviation": -0.2},
                       "caches_sysfs": {"L2": {"size": 1024, "instances": 2, "capacity": 2048}}},
          "bench": {"version": 2, "machine": "toy; 2 CPUs", "native": ["fp64", "fp32"]}}
    d = Device.from_dict(v1, where="old.json")
    b = d.bench
    assert b is not None and b.threads == 2 and b.sweep is not None and b.sweep.working_set_bytes == (1024, 2048)
    curves = {(c.kernel, c.threads): c for c in b.sweep.curves}
    assert curves[("copy", 2)].median == (30e9, 20e9) and curves[("copy", 2)].spread[1] == (19e9, 21e9)
    assert curves[("copy", 1)].spread == ()  # /1 kept no spread for it
    # the deviation is derived, not stored: 1e9 / 1.25e9 - 1 = -0.2 at AI 1/16, 0 at 1/8
    assert b.ert is not None and b.ert.deviation == pytest.approx((-0.2, 0.0)) and b.ert.worst == 0
    assert b.caches[0].level == "L2" and b.caches[0].capacity == 2048
    assert set(d.metadata) == {"cpu_model"}  # what moved is not kept twice
    again = Device.from_dict(json.loads(d.to_json()))
    assert again == d and json.loads(d.to_json())["schema"] == "roofline.device/3"


@pytest.mark.parametrize("change, message", [
    (lambda m: m["sweep"]["curves"].update({"max": {"copy": [1.0]}}), "thread count 'max' is not a whole number"),
    (lambda m: m["sweep"].update(spread=[1, 2]), "metadata.sweep.spread must be an object"),
])
def test_bad_version_1_bench_metadata_is_one_line(change, message):
    from roofline.core.errors import RooflineError
    from roofline.hardware.device import Device

    v1 = {"schema": "roofline.device/1", "name": "local", "kind": "cpu",
          "compute": [{"unit": "vector", "precision": "fp64", "flops": 1e9}],
          "memory": [{"level": "DRAM", "bandwidth": 1e9}],
          "metadata": {"sweep": {"working_set_bytes": [1024], "curves": {"1": {"copy": [1.0]}}}},
          "bench": {"version": 2, "machine": "m"}}
    change(v1["metadata"])
    with pytest.raises(RooflineError) as e:
        Device.from_dict(v1, where="old.json")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_fp6_and_fp4_are_precisions_with_their_widths_and_upcast_to_fp8():
    """fp6 (E2M3/E3M2) and fp4 (E2M1) are 6 and 4 bits an element; a device without their roof runs them on
    its fp8 roof (an H100 upcasts FP4 weights), a Blackwell on its own FP4 roof (9 PFLOP/s dense on a B200)."""
    from roofline.catalog import get_device
    from roofline.core.precision import BITS, PRECISIONS, canonical

    assert (BITS["fp6"], BITS["fp4"]) == (6, 4) and PRECISIONS[-2:] == ("fp6", "fp4")
    assert (canonical("E2M1"), canonical("e3m2"), canonical("FP4")) == ("fp4", "fp6", "fp4")
    h100 = get_device("h100").choose_compute("matrix", "fp4")
    assert h100.ceiling.precision == "fp8" and h100.fallback
    b200 = get_device("b200").choose_compute("matrix", "fp4")
    assert b200.ceiling.precision == "fp4" and b200.ceiling.flops == 9e15 and not b200.fallback
