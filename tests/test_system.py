"""The system format (roofline.system/1): devices x nodes joined by network tiers, checked field by field."""

from __future__ import annotations

import copy
import json

import pytest

from roofline.core.errors import RooflineError
from roofline.hardware.system import System

DGX = {"schema": "roofline.system/1", "name": "DGX H100 x 4", "device": "h100", "devices_per_node": 8, "nodes": 4,
       "tiers": [{"name": "NVLink 4", "scope": "node", "bandwidth": "450 GB/s", "latency": "3 us",
                  "topology": "switch", "in_switch_reduction": True},
                 {"name": "InfiniBand NDR", "scope": "cluster", "bandwidth": "50 GB/s", "nics_per_node": 8,
                  "latency": "5 us"}]}


def test_a_system_loads_and_round_trips(tmp_path):
    s = System.from_dict(DGX)
    assert s.devices == 32 and s.device.name.startswith("NVIDIA H100")
    node, cluster = s.tier("node"), s.tier("cluster")
    assert node.bandwidth == 450e9 and node.latency == 3e-6 and node.in_switch_reduction
    # 8 NICs of 50 GB/s shared by 8 GPUs: 50 GB/s per GPU
    assert cluster.per_device_bandwidth(8) == 50e9
    path = tmp_path / "s.json"
    path.write_text(s.to_json())
    assert System.load(path) == s


def test_a_torus_slice():
    tpu = {"schema": "roofline.system/1", "name": "slice", "device": "h100", "devices_per_node": 64, "nodes": 1,
           "tiers": [{"name": "ICI", "scope": "node", "bandwidth": "90 GB/s", "latency": "1 us",
                      "topology": "torus", "dims": [4, 4, 4]}]}
    assert System.from_dict(tpu).tier("node").dims == (4, 4, 4)
    with pytest.raises(RooflineError, match="has no cluster tier"):
        System.from_dict(tpu).tier("cluster")


def _bad(change) -> str:
    d = copy.deepcopy(DGX)
    change(d)
    with pytest.raises(RooflineError) as e:
        System.from_dict(json.loads(json.dumps(d)), where="s.json")
    text = str(e.value)
    assert text.startswith("s.json") and "\n" not in text
    return text


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(schema="roofline.system/9"), "schema: expected 'roofline.system/2' (or an older roofline.system/1)"),
    (lambda d: d.pop("tiers"), "missing field 'tiers'"),
    (lambda d: d.update(nodes=0), "nodes"),
    (lambda d: d.update(device="no-such-gpu"), "device:"),
    (lambda d: d.update(device=[1]), "device must be a catalog name or a device object"),
    (lambda d: d["tiers"].pop(1), "32 devices across nodes need a cluster tier"),
    (lambda d: d["tiers"].pop(0), "8 devices across a node need a node tier"),
    (lambda d: d["tiers"][1].pop("nics_per_node"), "a cluster tier needs nics_per_node"),
    (lambda d: d["tiers"][0].update(bandwidth="fast"), "tiers[0].bandwidth"),
    (lambda d: d["tiers"][0].update(bandwidth=0), "tiers[0].bandwidth must be above 0"),
    (lambda d: d["tiers"][0].update(latency=-1), "tiers[0].latency must be 0 or more"),
    (lambda d: d["tiers"][0].update(topology="mesh"), "tiers[0].topology 'mesh' is not one of ring, switch, torus"),
    (lambda d: d["tiers"][0].update(topology="torus", dims=[2, 2]), "the node torus 2x2 holds 4 devices, the system 8"),
    (lambda d: d["tiers"][0].update(dims=[8]), "'dims' is given for a torus and only for a torus"),
    (lambda d: d["tiers"].append(dict(d["tiers"][0])), "2 node tiers"),
    (lambda d: d["tiers"][0].update(name="\x1b[31mred"), None),
])
def test_bad_system_files_are_one_line(change, message):
    text = _bad(change) if message else None
    if message:
        assert message in text
    else:  # a name from a file is data: it loads, and its control characters are never echoed raw
        d = copy.deepcopy(DGX)
        change(d)
        assert System.from_dict(d).tiers[0].name == "\x1b[31mred"
