"""roofline.bench.network: collectives measured under torchrun (gloo over loopback here), fitted to alpha-beta,
written as a system file whose tiers then predict those collectives."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.bench.network import QUICK_SIZES, fit
from roofline.catalog import get_device
from roofline.collectives import on_tier
from roofline.system import MeasuredCollective, NetworkTier, System

torch = pytest.importorskip("torch")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def test_fit_recovers_alpha_beta():
    """Points on t = 20 us + S / 5 GB/s (with +-3% alternating noise) give back both within 5%, one regime."""
    sizes = [8 * 8**k for k in range(9)]
    times = [(20e-6 + s / 5e9) * (1.03 if k % 2 else 0.97) for k, s in enumerate(sizes)]
    f = fit(sizes, times)
    assert f.alpha == pytest.approx(20e-6, rel=0.05) and f.bandwidth == pytest.approx(5e9, rel=0.05)
    assert f.r2 > 0.99 and f.split_bytes == float("inf")


def test_fit_finds_a_second_regime():
    """gloo's all-reduce: 0.2 ms for 8 B, then 1 ms + S / 1.5 GB/s from 64 B on (an algorithm switch): two
    regimes split at 64 B, each recovered."""
    sizes = [8 * 8**k for k in range(8)]
    times = [0.2e-3 if s == 8 else 1e-3 + s / 1.5e9 for s in sizes]
    f = fit(sizes, times)
    assert f.split_bytes == 64 and f.alpha == pytest.approx(0.2e-3)
    assert f.alpha2 == pytest.approx(1e-3, rel=1e-6) and f.bandwidth2 == pytest.approx(1.5e9, rel=1e-6)
    assert f.time(8) == pytest.approx(0.2e-3) and f.r2 == pytest.approx(1.0)


def test_measured_tier_predicts_its_own_collectives():
    """A tier with a measured all-gather for 2 ranks predicts a 2-rank all-gather from that fit (not from the
    tier's bandwidth and NCCL's factor); other group sizes and collectives use the tier's figures."""
    m = MeasuredCollective("gloo", 2, 100e-6, 1e9, 0.99, ((8.0, 1e-4, 9e-5, 1.1e-4),))
    tier = NetworkTier("loop", "node", 10e9, 1e-6, "switch", measured={"all_gather": m})
    assert on_tier("all_gather", 1e6, 2, tier, 2).time == pytest.approx(100e-6 + 1e6 / 1e9)
    assert on_tier("all_gather", 1e6, 4, tier, 4).time == pytest.approx(3 * 1e-6 + 0.75 * 1e6 / 10e9)
    assert on_tier("all_reduce", 1e6, 2, tier, 2).time == pytest.approx(2 * 1e-6 + 1e6 / 10e9)
    s = System("m", get_device("xeon-8480"), 2, 1, (tier,))
    again = System.from_dict(json.loads(s.to_json()))
    assert again.tiers[0].measured["all_gather"] == m


def _torchrun(tmp: Path, name: str, nproc: int, *extra: str, timeout: float = 240) -> subprocess.CompletedProcess:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", f"--master-port={port}",
           "-m", "roofline.bench.network", "--quick", "--device", "xeon-8480", "--out", str(tmp / f"{name}.json"),
           *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV, cwd=tmp)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("net")
    return tmp, _torchrun(tmp, "one", 2, "--plot", str(tmp / "comm.png"))


def test_two_gloo_ranks_complete_and_write_a_system(two_ranks):
    tmp, first = two_ranks
    assert first.returncode == 0, first.stderr[-2000:]
    s = System.load(tmp / "one.json")
    assert s.devices_per_node == 2 and s.nodes == 1 and [t.scope for t in s.tiers] == ["node"]
    tier = s.tiers[0]
    assert set(tier.measured) == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"}
    assert tier.provenance.kind == "measured" and "gloo" in tier.provenance.method
    assert all(len(m.points) == len(QUICK_SIZES) for m in tier.measured.values())
    assert (tmp / "comm.png").read_bytes()[:4] == b"\x89PNG"
    assert "busbw GB/s" in first.stdout and "algbw GB/s" in first.stdout


def test_fits_describe_their_own_run(two_ranks):
    """Each collective's fit (one or two alpha-beta regimes) follows its own run's medians: R^2 on log time
    above 0.8 here.  Whether it predicts another run (issue 18's 25% / 0.95 targets) is measured, with this
    machine's run-to-run spread, by benchmarks/bench_network.py: on a 2-vCPU shared VM it does not."""
    tmp, _ = two_ranks
    for name, m in System.load(tmp / "one.json").tiers[0].measured.items():
        assert m.r2 >= 0.8, (name, m.r2)
        assert all(m.time(size) > 0 for size, *_ in m.points)


def test_four_gloo_ranks_complete(tmp_path):
    r = _torchrun(tmp_path, "four", 4, "--collectives", "all_reduce,send_recv")
    assert r.returncode == 0, r.stderr[-2000:]
    tier = System.load(tmp_path / "four.json").tiers[0]
    assert tier.measured["all_reduce"].ranks == 4


def test_a_stalled_peer_is_one_line_and_no_file(tmp_path):
    """Rank 0 of 2 started alone: the rendezvous stalls past --timeout; one line, exit 2, nothing written."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**ENV, "RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "LOCAL_RANK": "0",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    out = tmp_path / "s.json"
    r = subprocess.run([sys.executable, "-m", "roofline.bench.network", "--quick", "--device", "xeon-8480",
                        "--timeout", "3", "--out", str(out)], capture_output=True, text=True, timeout=120, env=env)
    errors = [line for line in r.stderr.splitlines() if line.startswith("roofline: error:")]
    assert r.returncode == 2 and len(errors) == 1 and "rank 0" in errors[0], r.stderr[-1500:]
    assert not out.exists()


def test_bad_input_without_torchrun(tmp_path):
    env = {k: v for k, v in ENV.items() if k not in ("WORLD_SIZE", "RANK")}
    r = subprocess.run([sys.executable, "-m", "roofline.bench.network", "--quick"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 2 and "not launched by torchrun" in r.stderr and r.stderr.count("\n") == 1


def test_tensor_parallel_mlp_beside_its_prediction(two_ranks, tmp_path):
    """A 2-rank tensor-parallel MLP (gloo) timed for real: its all-reduce of 64 x 1024 fp32 values is
    predicted from the measured tier (the all-reduce fit at 256 kB) and drawn on the communication roofline
    beside that prediction.  The fit comes from back-to-back calls; the MLP's one all-reduce follows 10 ms of
    GEMMs, and gloo's threads wake up for it (on this shared 2-vCPU machine 3 to 8x the batched time, and
    gloo's small-message latency flips between about 0.2 and 1 ms from run to run), so the check is the
    order of magnitude: within 10x either way."""
    tmp, first = two_ranks
    assert first.returncode == 0, first.stderr[-2000:]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "mlp.json"
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", f"--master-port={port}",
                        str(Path(__file__).with_name("tp_mlp.py")), str(out)], capture_output=True, text=True,
                       timeout=180, env=ENV)
    assert r.returncode == 0, r.stderr[-2000:]
    mlp = json.loads(out.read_text())
    system = System.load(tmp / "one.json")
    predicted = on_tier("all_reduce", mlp["bytes"], 2, system.tiers[0], 2).time
    assert 0.1 <= mlp["all_reduce"] / predicted <= 10, (mlp, predicted)
    assert mlp["forward"] > mlp["all_reduce"] > 0
    from roofline.render.network import network_chart_bytes

    png = network_chart_bytes(system, "mlp.png", extra=[("TP MLP all-reduce", "all_reduce", mlp["bytes"],
                                                          mlp["all_reduce"])])
    assert png[:4] == b"\x89PNG"
    (tmp_path / "mlp.png").write_bytes(png)
