"""Parallel groups over scale-up domains that are not a power of two (NVL72 racks): a group split unevenly over the
racks is costed on the slower tier instead of refused (``plan --devices 256`` on GB200 NVL72 runs), and plan's
words name the tier each of the best layout's groups runs over."""

from __future__ import annotations

import pytest

from roofline.catalog import get_system
from roofline.cli import main
from roofline.planner.layout import members_per_domain, members_per_node


def test_members_per_domain_by_hand() -> None:
    """256 GB200 = racks of 72, 72, 72 and 40 (64 trays of 4)."""
    s = get_system("gb200-nvl72", devices=256)
    assert (s.devices, s.domain, s.domains) == (256, 72, 4)
    # tp 8, consecutive ranks: 72 = 9 x 8 and the last rack's 40 = 5 x 8, so no group crosses a rack's edge
    assert members_per_domain(1, 8, s) == 8
    # 16 consecutive ranks: the group 64..79 crosses the first rack's edge at 72 (8 + 8), so every group is costed
    # as split: its members per tray, 4 (the tray's NVLink first, then the cluster tier)
    assert members_per_domain(1, 16, s) == 4 == members_per_node(1, 16, 4)
    # dp 64 with tp 4 (ranks 4 apart, one per tray): 18, 18, 18, 10 per rack: uneven -> 1 per tray
    assert members_per_domain(4, 64, s) == 1
    # two full racks (144): a group of 18 ranks 8 apart spans 144 ranks, 9 in each rack (72 / 8)
    s2 = get_system("gb200-nvl72", devices=144)
    assert members_per_domain(8, 18, s2) == 9
    assert members_per_domain(1, 72, s2) == 72 and members_per_domain(1, 144, s2) == 72


@pytest.mark.parametrize("stride,size", [(1, 8), (1, 16), (2, 8), (8, 4), (16, 2), (4, 8)])
def test_a_domain_of_one_node_counts_as_the_node(stride: int, size: int) -> None:
    """Where the domain is the node (DGX H100, 8 GPUs; 4 nodes), both counts agree: the route the planner had."""
    s = get_system("dgx-h100", nodes=4)
    assert members_per_domain(stride, size, s) == members_per_node(stride, size, s.devices_per_node)


def test_plan_on_256_gb200_runs_and_names_its_tiers(capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before ('every one of the 41424 splits a group unevenly'); now it ranks, and tp 16 (tried: it divides
    256 and fits a rack of 72) runs across a rack's edge on NVLink and InfiniBand."""
    assert main(["plan", "llama-3-70b", "--system", "gb200-nvl72", "--devices", "256", "--train", "--top", "2",
                 "--layout", "tp=16,pp=2"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "tiers: NVLink 5 via NVLink Switch (NVL72 domain) joins 72 devices, what tp, cp and ep groups may span" in out
    assert "across: tp 16 over NVLink 5 via NVLink Switch (NVL72 domain) + InfiniBand" in out


def test_plan_names_the_domain_tier_for_tp_cp_and_ep(capsys: pytest.CaptureFixture[str]) -> None:
    """issue 49's accept lines: 64 GB200 (one partial rack) in mxfp8 names the NVLink domain tp and cp span; 72 GB200
    for DeepSeek-V3 runs its ep all-to-all on it."""
    assert main(["plan", "llama-3-70b", "--system", "gb200-nvl72", "--devices", "64", "--train", "--precision",
                 "mxfp8", "--layout", "tp=2,cp=2", "--top", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "tiers: NVLink 5 via NVLink Switch (NVL72 domain) joins 64 devices" in out
    assert "on it: tp 2, cp 2" in out
    assert main(["plan", "deepseek-v3", "--system", "gb200-nvl72", "--devices", "72", "--train", "--top", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "joins 72 devices" in out and "on it: ep " in out
