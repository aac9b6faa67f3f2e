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
from host_load import Watch, judge  # tests/host_load.py

from roofline.bench.network import QUICK_SIZES, fit
from roofline.catalog import get_device
from roofline.engine.collectives import on_tier
from roofline.hardware.system import MeasuredCollective, NetworkTier, System

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


def test_fit_keeps_one_line_that_the_spread_explains():
    """0.7 ms at 8 B, then 1 ms + S / 1.5 GB/s: with tight quartiles (+-5%) that is a step, two regimes;
    measured with quartiles 0.6x..1.4x (a noisy machine's) one line (~0.91 ms + S / 1.45 GB/s) passes
    within every spread, so the step is not fitted: it may be noise."""
    sizes = [8 * 8**k for k in range(8)]
    times = [0.7e-3 if s == 8 else 1e-3 + s / 1.5e9 for s in sizes]
    tight = fit(sizes, times, [(t * 0.95, t * 1.05) for t in times])
    assert tight.split_bytes == 64 and tight.alpha == pytest.approx(0.7e-3)
    loose = fit(sizes, times, [(t * 0.6, t * 1.4) for t in times])
    assert loose.split_bytes == float("inf")
    assert all(0.6 * t <= loose.time(s) <= 1.4 * t for s, t in zip(sizes, times, strict=True))


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
           "-m", "roofline.commands.bench_network", "--quick", "--device", "xeon-8480", "--out", str(tmp / f"{name}.json"),
           *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV, cwd=tmp)


#: the two ranks' run, watched for contention (tests/host_load.py): its timings are real
WATCH = Watch(threads=2)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("net")
    with WATCH:
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
    above 0.8 here.  Whether it predicts another run (issue 18's 25% / 0.95 targets) is measured by
    benchmarks/bench_network.py beside this machine's own run-to-run spread (on a 2-vCPU shared VM the
    same size's median moves by 20 to 80% from one run to the next, which no fit can beat)."""
    tmp, _ = two_ranks
    for name, m in System.load(tmp / "one.json").tiers[0].measured.items():
        assert all(m.time(size) > 0 for size, *_ in m.points)
        judge(m.r2 >= 0.8, f"{name}'s fit R^2 {m.r2:.2f} < 0.8", WATCH)  # a real run: judged on a quiet host


def test_an_odd_group_sizes_its_batches_from_the_busy_ranks(tmp_path):
    """3 ranks: send/recv pairs ranks 0 and 1, rank 2 idles (1 us a call).  Its 1 us does not size the
    batches (it stretched every batch to 10,000 calls: two sizes took 83 s before the fix; all eight take
    seconds now)."""
    r = _torchrun(tmp_path, "three", 3, "--collectives", "send_recv", "--repeats", "3", timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    m = System.load(tmp_path / "three.json").tiers[0].measured["send_recv"]
    assert m.ranks == 3 and len(m.points) == len(QUICK_SIZES)


def test_four_gloo_ranks_complete(tmp_path):
    r = _torchrun(tmp_path, "four", 4, "--collectives", "all_reduce,send_recv")
    assert r.returncode == 0, r.stderr[-2000:]
    tier = System.load(tmp_path / "four.json").tiers[0]
    assert tier.measured["all_reduce"].ranks == 4


def test_two_nodes_through_torchrun_rendezvous(tmp_path):
    """Two torchrun agents (two "nodes" of 2 ranks on loopback, joined by torchrun's c10d rendezvous as the
    README shows): the node tier is measured within each node (2 ranks), the cluster tier across the
    nodes (one rank per node, 2 ranks); only global rank 0 (on node 0) writes its file."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    agents = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=2",
                                f"--node-rank={r}", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}",
                                "--rdzv-id=roofline-test", "-m", "roofline.commands.bench_network", "--quick", "--repeats", "3",
                                "--device", "xeon-8480", "--collectives", "all_reduce",
                                "--out", str(tmp_path / f"node{r}.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
              for r in (0, 1)]
    for agent in agents:
        _, err = agent.communicate(timeout=240)
        assert agent.returncode == 0, err[-2000:]
    assert not (tmp_path / "node1.json").exists()
    s = System.load(tmp_path / "node0.json")
    assert (s.devices_per_node, s.nodes) == (2, 2)
    assert [(t.scope, t.measured["all_reduce"].ranks) for t in s.tiers] == [("node", 2), ("cluster", 2)]


def test_a_stalled_peer_is_one_line_and_no_file(tmp_path):
    """Rank 0 of 2 started alone: the rendezvous stalls past --timeout; one line, exit 2, nothing written."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**ENV, "RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "LOCAL_RANK": "0",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    out = tmp_path / "s.json"
    r = subprocess.run([sys.executable, "-m", "roofline.commands.bench_network", "--quick", "--device", "xeon-8480",
                        "--timeout", "3", "--out", str(out)], capture_output=True, text=True, timeout=120, env=env)
    errors = [line for line in r.stderr.splitlines() if line.startswith("roofline: error:")]
    assert r.returncode == 2 and len(errors) == 1 and "rank 0" in errors[0], r.stderr[-1500:]
    assert not out.exists()


def test_a_rank_that_dies_is_one_line_and_no_file(tmp_path):
    """Rank 1 of 2 killed (SIGKILL) a few seconds in: rank 0 ends with one line naming the lost peer (or,
    had the kill come before the rendezvous, the stall past --timeout), exit 2, nothing written."""
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "s.json"
    ranks = [subprocess.Popen([sys.executable, "-m", "roofline.commands.bench_network", "--quick", "--device", "xeon-8480",
                               "--timeout", "30", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path,
                              env={**ENV, "RANK": str(r), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
                                   "LOCAL_RANK": str(r), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
             for r in (0, 1)]
    time.sleep(6)
    ranks[1].kill()
    ranks[1].communicate()  # reaped, its pipes read and closed (a ResourceWarning is an error in this suite)
    _, err = ranks[0].communicate(timeout=120)
    assert ranks[0].returncode == 2 and err.count("\n") == 1, err[-1500:]
    assert err.startswith("roofline: error: network bench (rank 0): ") and err.rstrip().endswith("nothing written")
    assert not out.exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize("args, says", [
    (("--device", "xeon-8480"), "not launched by torchrun"),  # a catalog device: no bench cache needed
    (("--collectives", "all_reduce,broadcast"), "--collectives: broadcast not among"),
    (("--collectives", ","), "--collectives: (none)"),
    (("--repeats", "2"), "--repeats 2: at least 3"),
    (("--timeout", "0"), "--timeout 0.0: a positive number"),
    (("--timeout", "nan"), "--timeout nan: a positive number"),
    (("--device", "no-such-gpu"), "no-such-gpu"),
    (("--out", "/dev/null/s.json"), "is a file, not a directory"),
    (("--plot", "comm.txt"), "comm.txt"),
])
def test_bad_input_is_one_line(tmp_path, args, says):
    """Checked before any rank joins a process group (so also without torchrun): one line, exit 2."""
    env = {k: v for k, v in ENV.items() if k not in ("WORLD_SIZE", "RANK")}
    r = subprocess.run([sys.executable, "-m", "roofline.commands.bench_network", "--quick", *args], capture_output=True,
                       text=True, timeout=240, env=env, cwd=tmp_path)  # a loaded host starts torch slowly
    assert r.returncode == 2 and says in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("roofline: error: network bench (rank 0): ") and not list(tmp_path.iterdir())


def test_tensor_parallel_mlp_beside_its_prediction(two_ranks, tmp_path):
    """A 2-rank tensor-parallel MLP (gloo) timed for real: its all-reduce of 64 x 1024 fp32 values is
    predicted from the measured tier (the all-reduce fit at 256 kB) and drawn on the communication roofline
    beside that prediction.  The fit comes from back-to-back calls; the MLP's one all-reduce follows 10 ms of
    GEMMs.  On this shared 2-vCPU machine, whose own run-to-run spread is 20 to 80% per size, measured /
    predicted has ranged from about 1 to 8 between runs (benchmarks/bench_network.py prints it), so the
    check is the order of magnitude: within 10x either way, judged only when the host was quiet over both runs
    (tests/host_load.py; skipped with the contention seen otherwise)."""
    tmp, first = two_ranks
    assert first.returncode == 0, first.stderr[-2000:]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "mlp.json"
    with Watch(threads=2) as watch:
        r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2",
                            f"--master-port={port}", str(Path(__file__).with_name("tp_mlp.py")), str(out)],
                           capture_output=True, text=True, timeout=180, env=ENV)
    assert r.returncode == 0, r.stderr[-2000:]
    mlp = json.loads(out.read_text())
    system = System.load(tmp / "one.json")
    predicted = on_tier("all_reduce", mlp["bytes"], 2, system.tiers[0], 2).time
    # each rank's forward (GEMMs, then the all-reduce) contains its all-reduce: the slowest forward is longer
    # than the last-arriving rank's all-reduce whatever the load
    assert mlp["forward"] > mlp["all_reduce"] > 0
    from roofline.render.network import network_chart_bytes

    png = network_chart_bytes(system, "mlp.png", extra=[("TP MLP all-reduce", "all_reduce", mlp["bytes"],
                                                          mlp["all_reduce"])])
    assert png[:4] == b"\x89PNG"
    (tmp_path / "mlp.png").write_bytes(png)
    ratio = mlp["all_reduce"] / predicted
    judge(0.1 <= ratio <= 10, f"measured / predicted all-reduce {ratio:.2f} outside 0.1..10", WATCH, watch)


def test_the_planner_predicts_from_the_measured_fits(two_ranks):
    """The measured system feeds the planner: a tp=2 training step on the 2 measured ranks times each of its
    tensor-parallel all-reduces with the measured all-reduce fit (not the tier's NCCL-style figures)."""
    from roofline.planner import Layout, TrainingRun, estimate

    tmp, first = two_ranks
    assert first.returncode == 0, first.stderr[-2000:]
    system = System.load(tmp / "one.json")
    fitted = system.tiers[0].measured["all_reduce"]
    e = estimate(TrainingRun.of("llama-2-7b", seq=256, global_batch=2), Layout(tp=2), system)
    msg = 256 * 4096 * 2  # one sequence's activations (micro-batch 1), bf16
    # 2 forward + 2 backward per layer (32 layers), the embedding's forward and lm_head's input gradient
    tp = next(c for c in e.comms if c.name == "tp all-reduce")
    assert tp.tiers == ("node",)
    assert tp.time == pytest.approx(fitted.time(msg) * (4 * 32 + 2) * e.micro_batches)


def test_cross_run_criterion_allows_the_sizes_own_spread():
    from roofline.bench.network import cross_run_check

    # run 1 and run 2 at 3 sizes; the fit predicts 1.0 ms everywhere
    run1 = [(8.0, 1.0e-3), (1024.0, 1.0e-3), (1 << 20, 1.0e-3)]
    run2 = [(8.0, 1.8e-3), (1024.0, 1.3e-3), (1 << 20, 1.1e-3)]
    rows = cross_run_check(lambda s: 1.0e-3, run1, run2)
    # 8 B: fit error |1.0 / 1.8 - 1| = 44 %, spread |1.8 / 1.0 - 1| = 80 %: allowed 80 %, ok
    # 1 KiB: error |1.0 / 1.3 - 1| = 23 % <= 25 % (spread 30 %): ok
    # 1 MiB: error 9 %, spread 10 %, allowed 25 %: ok
    assert [r[4] for r in rows] == [True, True, True]
    assert rows[0][1] == pytest.approx(0.8 / 1.8) and rows[0][3] == pytest.approx(0.8)
    # a fit 50 % off at a size the machine repeats within 5 %: refused
    bad = cross_run_check(lambda s: 1.5e-3, [(8.0, 1.0e-3)], [(8.0, 1.05e-3)])
    assert bad[0][4] is False and bad[0][3] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="different sizes"):
        cross_run_check(lambda s: 1.0, [(8.0, 1.0)], [(16.0, 1.0)])


def test_point_bandwidths_by_hand_and_the_render_reads_them():
    """4 ranks all-reduce, 1 GB in a median 10 ms (q1 9 ms, q3 12 ms): algbw = 1e9 B / 0.01 s = 100 GB/s; nccl-tests'
    bus factor 2 (n - 1) / n = 1.5: busbw 150 GB/s; spread (12 - 9) / 10 = 30%; the fit t = 1e9 / 1.25e11 = 8 ms is
    8 / 10 - 1 = -20% off the median."""
    from roofline.bench.network import point_bandwidths
    from roofline.render.network import collective_lines

    m = MeasuredCollective("gloo", 4, 0.0, 1.25e11, 1.0, ((1e9, 0.010, 0.009, 0.012),))
    (p,) = point_bandwidths("all_reduce", m)
    assert (p.nbytes, p.median) == (1e9, 0.010)
    assert p.algbw_gb_s == pytest.approx(100.0) and p.busbw_gb_s == pytest.approx(150.0)
    assert p.spread == pytest.approx(0.3) and p.fit_error == pytest.approx(-0.2)
    row = collective_lines("node", "all_reduce", m).splitlines()[-1].split()
    assert row[-4:] == ["100", "150", "30%", "-20%"]
