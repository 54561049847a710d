"""`collect` on a real LocalCluster (2 worker processes × 4 threads): every layer recorded, each
execution timed on its own thread, CPU exact, transfers with bytes, profiles per task, no hook
errors; and a SIGKILLed worker leaves readable data."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from correlate.sources.detect import load
from testing.raw_parts import closing_records, read_raw

HERE = Path(__file__).parent
pytestmark = pytest.mark.cluster


def collect(out: Path, *args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(out), "--darshan", "off",
           "--flush-interval", "0.5", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=HERE)


def parts(run: Path, table: str) -> pl.DataFrame:
    return read_raw(run, table)


@pytest.fixture(scope="module", params=["sample", "yappi", "yappi-all"])
def recorded(request, tmp_path_factory):
    if request.param == "sample":  # the session's run of this job (tests/conftest.py)
        shared = request.getfixturevalue("cluster_run")
        return request.param, shared.run, {r["key"]: r for r in shared.truth}
    tmp = tmp_path_factory.mktemp(f"collect-{request.param}")
    truth = tmp / "truth.json"
    proc = collect(tmp / "run", "--profile", request.param, "--", sys.executable, "jobs.py",
                   "cluster", str(truth))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return request.param, tmp / "run", {r["key"]: r for r in json.loads(truth.read_text())}


def test_every_task_is_recorded_once_on_the_thread_that_ran_it(recorded):
    _mode, run, truth = recorded
    ex = parts(run, "task_executions")
    for key, obs in truth.items():
        rows = ex.filter(pl.col("key") == key)
        assert rows.height == 1, key
        row = rows.row(0, named=True)
        assert row["thread_id"] == obs["thread"]
        assert row["local_start_ns"] <= int(obs["wall"][0] * 1e9)
        assert row["local_stop_ns"] >= int(obs["wall"][1] * 1e9) - 1000  # µs float rounding
        assert row["status"] == "ok"


def test_thread_cpu_is_exact_for_burning_and_zero_for_sleeping(recorded):
    _mode, run, truth = recorded
    ex = parts(run, "task_executions")
    for key, obs in truth.items():
        cpu = ex.filter(pl.col("key") == key)["thread_cpu_ns"][0] / 1e9
        if key.startswith("burn"):
            assert cpu == pytest.approx(obs["cpu"], rel=0.10), key
        if key.startswith("nap"):
            assert cpu < 0.01, key


def test_transfer_between_workers_is_recorded_with_bytes(recorded):
    _mode, run, _truth = recorded
    keys = parts(run, "worker_transfer_keys")
    transfers = parts(run, "worker_transfers")
    moved = keys.filter(pl.col("key") == "block-0").join(transfers, on=["transfer_seq", "proc"])
    assert set(moved["direction"]) == {"incoming", "outgoing"}
    assert (moved["nbytes"] >= 3_000_000).all()
    starts = parts(run, "task_startstops").filter(pl.col("key") == "consume-0")
    assert {"compute", "transfer"} <= set(starts["action"])


def test_scheduler_side_graph_and_cluster_events(recorded):
    _mode, run, truth = recorded
    tr = parts(run, "scheduler_transitions")
    done = tr.filter((pl.col("start") == "processing") & (pl.col("finish") == "memory"))
    assert set(truth) <= set(done["key"])
    assert done.filter(pl.col("key") == "burn-0")["thread_id"][0] == truth["burn-0"]["thread"]
    # what the task-finished message carries is on its own row, and only there
    workers = {json.loads(f.read_text())["address"] for f in run.glob("procs/worker-*/proc.json")}
    assert set(done["worker"]) <= workers and done["worker"].null_count() == 0
    assert (done["nbytes"] > 0).all()
    assert (done["prefix"] == done["key"].cast(pl.String).str.extract(r"^([a-z]+)-")).all()
    queued = tr.filter((pl.col("start") == "released") & (pl.col("finish") == "waiting"))
    assert queued.height >= len(truth) and queued["stimulus_id"].null_count() == 0
    assert queued.select("worker", "thread_id", "nbytes").null_count().row(0) == (
        queued.height,) * 3
    deps = parts(run, "task_dependencies")
    assert deps.filter((pl.col("key") == "consume-0") & (pl.col("depends_on") == "block-0")
                       ).height == 1
    ev = parts(run, "cluster_events")
    assert ev.filter(pl.col("event") == "add_worker").height == 2


def test_profiles_split_per_task_execution(recorded):
    mode, run, _truth = recorded
    ex = parts(run, "task_executions").filter(pl.col("key") == "burn-3")
    stats = parts(run, "worker_func_stats").filter(pl.col("name").str.contains(
        "distinctive_cpu_burner"))
    mine = stats.join(ex.select("proc", "execution_seq"), on=["proc", "execution_seq"])
    assert mine.height >= 1 and set(mine["profiler"]) == {"yappi" if "yappi" in mode
                                                          else "sample"}
    assert mine["ttot_s"].sum() > 0.1  # burn-3 burns 0.35 s in that function
    # every burn-i execution has its own stats: nearly all of its wall time is in the burner
    # (wall, not CPU: 8 threads share 2 cores here), and a call count
    ex = parts(run, "task_executions").filter(pl.col("key").cast(pl.String).str.starts_with(
        "burn-"))
    per = (stats.join(ex.select("proc", "execution_seq", "key", wall_s=(
        pl.col("local_stop_ns") - pl.col("local_start_ns")) / 1e9), on=["proc", "execution_seq"])
           .group_by("key").agg(pl.col("ttot_s").sum(), pl.col("ncall").sum(),
                                pl.col("wall_s").first()).sort("key"))
    assert per["key"].to_list() == [f"burn-{i}" for i in range(4)]
    for key, ttot, ncall, wall in per.select("key", "ttot_s", "ncall", "wall_s").iter_rows():
        assert 0.8 * wall - 0.02 < ttot < wall + 0.02, (key, ttot, wall)
        # one call of burn per execution: Yappi counts exactly one (sample: samples, >= 1)
        assert ncall == 1 if "yappi" in mode else ncall >= 1, (key, ncall)


def test_task_profiles_hold_the_task_not_the_threads_machinery(recorded):
    """In every mode a task's functions start at Dask's call of the task: not the executor
    thread's bootstrap and loop, nor the plugin's wrapper, the same in every task."""
    mode, run, _truth = recorded
    tasks = parts(run, "worker_func_stats").filter(pl.col("execution_seq") > 0)
    names = set(tasks["name"])
    assert any("distinctive_cpu_burner" in n for n in names)
    assert not names & {"_bootstrap", "_bootstrap_inner", "_worker", "_timed"}, mode


def test_yappi_profiles_the_event_loop_only_when_asked(recorded):
    mode, run, _truth = recorded
    if not mode.startswith("yappi"):
        pytest.skip("Yappi modes only")
    stats = parts(run, "worker_func_stats")
    for proc_json in run.glob("procs/worker-*/proc.json"):
        info = json.loads(proc_json.read_text())
        mine = stats.filter(pl.col("proc") == proc_json.parent.name)
        on_loop = mine.filter(pl.col("thread_id") == info["main_thread_id"])
        assert mine.filter(pl.col("execution_seq") > 0).height > 0  # task threads profiled
        if mode == "yappi":
            # nothing the event loop ran after start-up (its coroutines, the plugin's flushes)
            assert on_loop.height == 0
        else:
            assert on_loop.filter(pl.col("name").str.ends_with("_on_loop")).height == 1


def test_clean_close_no_hook_errors_and_manifest(recorded):
    _mode, run, _truth = recorded
    closed = list(closing_records(run).values())
    assert len(closed) == 3  # scheduler + 2 workers
    assert all(c["hook_errors"] == {} for c in closed)
    assert all(c["dropped"] == {} for c in closed)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["exit_code"] == 0 and manifest["processes_not_closed"] == []
    assert manifest["darshan"]["runtime"] is None and "darshan" in manifest["unknown"]


def test_run_folder_loads_into_canonical_frames(recorded):
    _mode, run, truth = recorded
    frames = load(run)
    assert set(truth) <= set(frames.executions["key"])
    # Dask's settings, as the scheduler ran with them (`collect` itself does not import Dask)
    config = frames.facts["dask_config"]
    assert {"scheduler", "worker", "comm"} <= set(config)
    assert "dask_config" not in frames.facts["unknown"]
    assert frames.executions["cpu_s"].null_count() == 0
    assert frames.clock_samples.height >= 2


def test_sigkilled_worker_leaves_readable_rows(tmp_path):
    marker = tmp_path / "killed"
    proc = collect(tmp_path / "run", "--profile", "off", "--", sys.executable, "jobs.py",
                   "kill", str(marker))
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    manifest = json.loads((run / "manifest.json").read_text())
    killed = [p for p in manifest["processes_not_closed"] if p.startswith("worker-")]
    assert len(killed) == 1
    ex = read_raw(run, "task_executions", killed[0])
    assert {f"early-{i}" for i in range(6)} <= set(ex["key"])
    frames = load(run)
    assert any("did not close cleanly" in w for w in frames.warnings)


def test_importing_the_collectors_does_not_import_analysis_modules():
    code = ("import sys, collectors, collectors.worker_plugin, collectors.scheduler_plugin, "
            "collectors.preload; bad = [m for m in ('polars', 'pyarrow', 'yappi', 'pandas') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_help_lists_every_profile_mode_with_its_cost():
    from collectors.profiling import PROFILE_MODES

    proc = subprocess.run([sys.executable, "-m", "collectors.launcher", "--help"],
                          capture_output=True, text=True, cwd=HERE)
    assert proc.returncode == 0, proc.stderr
    for mode in PROFILE_MODES:
        assert re.search(rf"^\s+{re.escape(mode)}\s+(~|\+)\d+(-\d+)?%", proc.stdout, re.M), mode


def test_yappi_is_stopped_past_its_memory_budget_and_correlate_says_so(tmp_path):
    """Yappi keeps an entry per function it saw for the whole job: a job that makes new
    functions all the time grows it past a tenth of the worker's memory limit, and the
    collectors then stop it, keep what it recorded, and say when."""
    run = tmp_path / "run"
    proc = collect(run, "--profile", "yappi", "--", sys.executable, "jobs.py",
                   "profile-budget", str(tmp_path / "truth.json"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    stopped = {}
    for name, info in closing_records(run, "worker-*").items():
        if "profile_stopped" in info:
            stopped[name] = info["profile_stopped"]
    assert stopped, "no worker stopped Yappi"
    ex = parts(run, "task_executions")
    stats = parts(run, "worker_func_stats").filter(pl.col("name") == "many_functions")
    for proc_name, s in stopped.items():
        assert s["budget_bytes"] == 10_000_000 and s["memory_bytes"] > s["budget_bytes"]
        mine = ex.filter(pl.col("proc") == proc_name).join(
            stats.select("proc", "execution_seq", "ncall"), on=["proc", "execution_seq"],
            how="left")
        before = mine.filter(pl.col("local_stop_ns") < s["time_ns"])
        after = mine.filter(pl.col("local_start_ns") > s["time_ns"] + 100_000_000)
        # what Yappi recorded before is kept, one call per execution; later: nothing
        assert before.height > 50 and (before["ncall"] == 1).all()
        assert after.height > 50 and after["ncall"].null_count() == after.height
    frames = load(run)
    warned = [w for w in frames.warnings if "Yappi was stopped" in w]
    assert len(warned) == len(stopped) and all("10 MiB" in w for w in warned)
