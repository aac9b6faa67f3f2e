"""The trace reader's worker processes: the forkserver started from the command's own words before its imports,
and a local Dask cluster's quiet settings and frozen heap actually in its processes."""

from __future__ import annotations

import pytest

from roofline.frontends import workers


@pytest.mark.parametrize(("argv", "want"), [
    (["trace", "r*.json", "--jobs", "2"], (2, None)),
    (["trace", "r*.json", "--jobs=3", "--device", "h100"], (3, None)),
    (["trace", "r*.json", "--dask", "local"], (1, "local")),
    (["trace", "--dask=tcp://h:8786", "r*.json"], (1, "tcp://h:8786")),
    (["trace", "r*.json", "--jobs", "2", "--jobs", "1"], (1, None)),  # the last one counts, as in argparse
    (["trace", "r*.json", "--jobs", "two"], (1, None)),  # not a number: argparse says so, nothing starts
    (["trace", "r*.json", "--jobs"], (1, None)),  # no value
    (["trace", "--", "--jobs", "2"], (1, None)),  # after --: a file name
    (["trace", "r*.json", "--jo", "2"], (1, None)),  # abbreviated: started later, by the command
    (["analyze", "w.json", "--jobs", "2"], (1, None)),  # another command
    ([], (1, None)),
])
def test_from_argv_reads_only_the_exact_spellings(argv, want):
    assert workers.from_argv(argv) == want


@pytest.mark.parametrize(("jobs", "dask", "want"), [
    (1, None, False), (2, None, True), (True, None, False), ("2", None, False),
    (1, "local", True), (4, "tcp://h:8786", False),  # a remote cluster's workers are not ours to fork
])
def test_wants_workers(jobs, dask, want):
    assert workers.wants_workers(jobs, dask) is want


def test_the_command_starts_the_server_before_it_parses(monkeypatch, capsys):
    """cli starts the server from argv first, before the parser is built: the call is recorded although argparse
    then refuses the line (the missing --device value), so the trace command never runs."""
    from roofline import cli

    calls = []
    monkeypatch.setattr(workers, "start_early", lambda jobs, dask: calls.append((jobs, dask)))
    with pytest.raises(SystemExit) as exit_:  # a usage error: argparse's exit 2, one line
        cli.main(["trace", "nothing*.json", "--jobs", "2", "--device"])  # --device lacks its value
    assert exit_.value.code == 2 and calls == [(2, None)]
    assert "--device" in capsys.readouterr().err


def test_a_local_cluster_runs_quiet_and_its_workers_start_frozen():
    """_client("local"): both workers carry QUIET_LOCAL (each value as set; the nanny hands them the config it was
    made under), the scheduler has no work-stealing extension and a worker saturation of 1.0, and each worker was forked from the warm forkserver: torch imported and the
    heap frozen (gc.get_freeze_count() > 0: nothing else in a fresh worker calls gc.freeze)."""
    pytest.importorskip("distributed", reason="dask.distributed is not installed (the dask extra)")
    pytest.importorskip("torch")
    import multiprocessing

    import roofline.frontends.trace.ranks as rk

    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no forkserver on this platform (spawned workers warm up themselves)")

    def seen() -> tuple:
        import gc
        import sys

        import dask

        return (tuple(dask.config.get(k) for k in sorted(rk.QUIET_LOCAL)), gc.get_freeze_count() > 0,
                "torch" in sys.modules)

    workers.start_early(1, "local")
    client, cluster = rk._client("local")
    try:
        want = tuple(rk.QUIET_LOCAL[k] for k in sorted(rk.QUIET_LOCAL))
        got = client.run(seen)
        assert len(got) == 2 and all(g == (want, True, True) for g in got.values()), got
        assert "stealing" not in cluster.scheduler.extensions
        assert cluster.scheduler.WORKER_SATURATION == 1.0
    finally:
        client.close()
        cluster.close()
