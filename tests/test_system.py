"""The system format (roofline.system/2; /1 files migrate): devices x nodes joined by network tiers, checked field by field."""

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


def test_an_old_system_file_loads_with_its_domain_its_node(tmp_path):
    """A roofline.system/1 file (DGX above: 8 per node, 4 nodes) has no domains: its scale-up domain is its node
    (8 devices, 4 domains); written back it is a /2 file saying so, and that reads back equal."""
    s = System.from_dict(DGX)
    assert (s.domain, s.domains) == (8, 4)
    out = s.to_dict()
    assert out["schema"] == "roofline.system/2" and out["domain_devices"] == 8
    path = tmp_path / "s.json"
    path.write_text(s.to_json())
    assert System.load(path) == s
    # the /1 file on disk, as an older roofline wrote it, loads too
    path.write_text(json.dumps(DGX))
    assert System.load(path) == s


NVL = {"schema": "roofline.system/2", "name": "rack", "device": "gb200", "devices_per_node": 4, "nodes": 18,
       "domain_devices": 72,
       "tiers": [{"name": "NVLink 5", "scope": "node", "bandwidth": "900 GB/s", "latency": "0.6 us",
                  "in_switch_reduction": True}]}


def test_a_domain_spans_nodes_and_needs_the_network_only_beyond_it():
    """18 trays of 4 in one domain of 72: no cluster tier needed for the rack; 36 trays (2 racks) need one."""
    s = System.from_dict(NVL)
    assert (s.devices, s.domain, s.domains) == (72, 72, 1)
    with pytest.raises(RooflineError, match="144 devices across domains of 72 need a cluster tier"):
        System.from_dict({**NVL, "nodes": 36})
    with pytest.raises(RooflineError, match="domain_devices 70 is no whole number of nodes of 4 devices"):
        System.from_dict({**NVL, "domain_devices": 70})
    # a partial rack: 16 trays are one domain of 64
    assert System.from_dict({**NVL, "nodes": 16}).domain == 64


def test_devices_give_the_nodes_in_the_system_granularity():
    from roofline.catalog import get_system, resolve_system

    s = get_system("gb200-nvl72", devices=64)  # 64 / 4 per tray = 16 trays, one (partial) rack
    assert (s.nodes, s.devices, s.domains) == (16, 64, 1)
    assert get_system("gb200-nvl72", devices=288).domains == 4  # 288 / 72 = 4 racks
    assert get_system("dgx-b200", devices=16).nodes == 2
    with pytest.raises(RooflineError, match="multiple of 4") as e:
        get_system("gb200-nvl72", devices=6)
    assert "\n" not in str(e.value) and "nearest: 4 or 8" in str(e.value)
    with pytest.raises(RooflineError, match="multiple of 8"):
        get_system("dgx-b200", devices=12)  # a DGX comes in whole nodes of 8
    with pytest.raises(RooflineError, match="not both"):
        resolve_system("dgx-b200", nodes=2, devices=16)
    with pytest.raises(RooflineError, match="no cluster tier"):
        get_system("tpu-v6e-256", devices=512)  # one pod: ICI only


def test_plan_devices_is_a_count_and_a_bad_one_is_one_line(capsys):
    from roofline.cli import main

    assert main(["plan", "llama-3-8b", "--system", "gb200-nvl72", "--devices", "6", "--train"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "multiple of 4" in err
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    assert "COUNT" in capsys.readouterr().out.replace("\n", " ")
