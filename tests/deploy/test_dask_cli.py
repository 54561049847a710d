"""`dask scheduler` + `dask worker --nworkers 2 --nthreads 2` started by the test with only the
preload and DASK_CORRELATE_RUN_DIR (no `collect`): the folder correlates, every task of the
client's graph is in tasks.parquet with its thread and CPU, and summary.json says what is
unknown without `collect`."""

from __future__ import annotations

import json
import time

import polars as pl
import pytest
from procs import (
    BIN,
    check_io,
    check_tasks,
    correlate,
    darshan_lib,
    env,
    exports,
    processes,
    run_client,
)

pytestmark = pytest.mark.cluster


def wait_for(path, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def start_cluster(procs, tmp, run, worker_envs, sched_env=None):
    """A scheduler and one `dask worker --nworkers 2 --nthreads 2` per entry of worker_envs
    (extra variables for that worker command)."""
    sched_file = tmp / "scheduler.json"
    procs.start([str(BIN / "dask"), "scheduler", "--scheduler-file", str(sched_file),
                 "--preload", "collectors.preload", "--host", "127.0.0.1", "--port", "0",
                 "--no-dashboard"], tmp / "scheduler.log", env=env(run, **(sched_env or {})))
    wait_for(sched_file)
    for i, extra in enumerate(worker_envs):
        procs.start([str(BIN / "dask"), "worker", "--scheduler-file", str(sched_file),
                     "--preload", "collectors.preload", "--nworkers", "2", "--nthreads", "2",
                     "--host", "127.0.0.1", "--no-dashboard"], tmp / f"worker-{i}.log",
                    env=env(run, **extra))
    return sched_file


@pytest.fixture(scope="module")
def preload_only(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dask-cli")
    run = tmp / "run"
    with processes() as procs:
        sched_file = start_cluster(procs, tmp, run, [{}])
        run_client(sched_file, tmp / "truth.json", tmp / "data", env(), workers=2)
        procs.wait_all(timeout=60)  # client.shutdown() ends scheduler and workers
    return run, json.loads((tmp / "truth.json").read_text())


def test_preload_only_folder_correlates_every_task(preload_only):
    run, truth = preload_only
    assert {p.name.split("-")[0] for p in (run / "procs").iterdir()} == {"scheduler", "worker"}
    assert len(list((run / "procs").glob("worker-*/closed.json"))) == 2
    tasks, _summary = correlate(run)
    check_tasks(tasks, truth)
    assert tasks["pid"].n_unique() == 2


def test_scheduler_preload_writes_the_manifest_and_summary_lists_the_unknown(preload_only):
    run, _truth = preload_only
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["recorded_by"] == "scheduler preload"
    assert manifest["command"] is None and manifest["exit_code"] is None
    assert "scheduler" in manifest["scheduler_command"]
    assert manifest["ended_ns"] > manifest["started_ns"]  # finished at the scheduler's close
    _tasks, summary = correlate(run)
    facts = summary["facts"]
    assert facts["recorded_by"] == "scheduler preload"
    assert {"command", "exit_code"} <= set(facts["unknown"])
    assert facts["workers"] == 2 and facts["nthreads"] == [2]


def test_folder_without_manifest_still_correlates(preload_only, tmp_path):
    """Workers preloaded, scheduler not: only procs/ (here: the same folder, manifest gone)."""
    run, truth = preload_only
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "procs").symlink_to(run / "procs", target_is_directory=True)
    tasks, summary = correlate(bare)
    check_tasks(tasks, truth)
    facts = summary["facts"]
    assert facts["recorded_by"] == "preload (no manifest)"
    assert {"manifest", "command", "exit_code", "versions"} <= set(facts["unknown"])
    assert facts["started_ns"] and facts["ended_ns"] > facts["started_ns"]
    assert any("no manifest.json" in w for w in summary["warnings"])


def test_two_hosts_clocks_and_matching(tmp_path):
    """Two worker commands, one recording its host as another name: the scheduler's host
    shares its clock (offset 0, said so), the other host gets Dask's estimate with an
    uncertainty, and every task still matches its execution."""
    run = tmp_path / "run"
    with processes() as procs:
        sched_file = start_cluster(procs, tmp_path, run,
                                   [{}, {"DASK_CORRELATE_HOST": "otherhost"}])
        run_client(sched_file, tmp_path / "truth.json", tmp_path / "data", env(), workers=4)
        procs.wait_all(timeout=60)
    truth = json.loads((tmp_path / "truth.json").read_text())
    tasks, summary = correlate(run)
    check_tasks(tasks, truth)
    clocks = pl.read_parquet(run / "correlated" / "clocks.parquet").filter(
        pl.col("domain") == "worker")
    hosts = set(clocks["host"])
    assert len(hosts) == 2 and "otherhost" in hosts
    same = clocks.filter(pl.col("host") != "otherhost")
    other = clocks.filter(pl.col("host") == "otherhost")
    assert same.height == other.height == 2
    assert (same["offset_ns"] == 0).all() and (same["uncertainty_ns"] == 0).all()
    assert same["method"].str.contains("same host").all()
    assert other["method"].str.contains("scheduler_delay").all()
    assert (other["uncertainty_ns"] > 0).all() and (other["samples"] >= 1).all()
    # "otherhost" is this machine: the truth is 0, and Dask's estimate is milliseconds off
    assert (other["offset_ns"].abs() < 50_000_000).all()
    # the two hosts' processes hold the tasks between them
    assert set(tasks.filter(pl.col("key").str.starts_with("burn"))["host"]) <= hosts
    assert sorted(summary["facts"]["hosts"]) == sorted(hosts)


def test_darshan_attributes_the_io_when_a_runtime_is_present(tmp_path):
    lib = darshan_lib()
    if not lib:
        pytest.skip("no darshan-runtime on this machine (DARSHAN_RUNTIME, darshan-config, "
                    "common paths): the I/O check needs one")
    run = tmp_path / "run"
    darshan = exports(run, lib)
    with processes() as procs:
        sched_file = start_cluster(procs, tmp_path, run, [darshan], darshan)
        run_client(sched_file, tmp_path / "truth.json", tmp_path / "data", env(), workers=2)
        procs.wait_all(timeout=60)
    truth = json.loads((tmp_path / "truth.json").read_text())
    tasks, _summary = correlate(run)
    check_tasks(tasks, truth)
    check_io(tasks, truth)
