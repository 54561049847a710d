"""An in-situ job recorded end to end (tests/deploy/insitu_job.sh under `collect`): a CLI
scheduler and 2 workers, an MPI simulation of 3 ranks (MPICH's mpiexec) scattering one block
per rank per step through ``collectors.scatter``, an analytics client reducing each step once
its blocks are there; rank 2 is slower on odd steps. Checks the arrivals (one row per block,
its bytes and rank), each step's analytics waiting longest where rank 2's block came last,
the per-step lag in summary.json and the reports, and `correlate compare` of a run with a
slower simulation naming the arrivals, not the analytics."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl
import pytest
from procs import BIN, HERE, env, processes

# (not `alone`: the runs are recorded with the machine alone, `machine_alone` in `runs`; the
# tests only read them)
pytestmark = [pytest.mark.cluster]

STEPS, RANKS, SLOW_RANK = 4, 3, 2


def _mpiexec_present() -> None:
    pytest.importorskip("mpi4py", reason="mpi4py not installed (test extra)")
    if not (BIN / "mpiexec").exists():
        pytest.skip("no mpiexec beside this Python: `pip install -e '.[test]'` installs "
                    "MPICH's wheel (mpich) on Linux x86_64/aarch64")


def record(tmp, name: str, slow_s: float):
    """Run the in-situ job under `collect`: the run folder and what the job recorded."""
    run, work = tmp / name, tmp / f"{name}-work"
    work.mkdir()
    with processes() as procs:
        p = procs.start([str(BIN / "collect"), "-o", str(run), "--profile", "off",
                         "--flush-interval", "0.5", "--darshan", "off", "--", "bash",
                         str(HERE / "insitu_job.sh"), str(work), str(STEPS), str(slow_s)],
                        tmp / f"{name}.log", env=env())
        assert p.wait(timeout=120) == 0, (tmp / f"{name}.log").read_text()[-3000:]
    return run, json.loads((work / "truth.json").read_text())


def correlate(*runs: tuple[Path, tuple[str, ...]]) -> list[str]:
    """`correlate RUN [OPTIONS]` of each run at once (one process each): their outputs."""
    procs = [subprocess.Popen([str(BIN / "correlate"), str(run), *options], env=env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for run, options in runs]
    outputs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=180)
        assert proc.returncode == 0, stdout[-2000:] + stderr[-3000:]
        outputs.append(stdout)
    return outputs


@pytest.fixture(scope="module")
def runs(tmp_path_factory, machine_alone):
    """The job (rank 2 0.6 s slower on odd steps), correlated with its reports, and the same
    job with a slower simulation (1.5 s), correlated without: recorded while no other test
    runs (the waits and lags are the machine's timings), correlated beside the others."""
    _mpiexec_present()
    tmp = tmp_path_factory.mktemp("insitu")
    with machine_alone():
        (run, truth), (slower, _) = record(tmp, "run", 0.6), record(tmp, "slower", 1.5)
    stdout, _ = correlate((run, ()), (slower, ("--no-reports",)))
    return tmp, (run / "correlated", truth, stdout), slower / "correlated"


def test_one_arrival_per_block_with_its_bytes_and_rank(runs):
    _tmp, (out, truth, _stdout), _slower = runs
    arrivals = pl.read_parquet(out / "arrivals.parquet")
    blocks = {b["key"]: b for b in truth["blocks"]}
    assert len(blocks) == STEPS * RANKS
    assert sorted(arrivals["key"]) == sorted(blocks)
    for row in arrivals.iter_rows(named=True):
        block = blocks[row["key"]]
        assert (row["nbytes"], row["rank"], row["step"]) == (
            block["nbytes"], block["rank"], block["step"]), row
        assert row["source"] == "update-data" and row["worker"] and row["client"], row
        assert row["client_address"].startswith("tcp://127.0.0.1:"), row
        assert row["send_s"] is not None and row["send_s"] > 0, row
    # each rank is one client, its own, with its own connection
    per_rank = arrivals.group_by("rank").agg(pl.col("client", "client_address").n_unique())
    assert per_rank["client"].to_list() == per_rank["client_address"].to_list() == [1] * RANKS


def test_each_steps_analytics_waits_longest_where_the_slow_rank_came_last(runs):
    _tmp, (out, truth, _stdout), _slower = runs
    arrivals = pl.read_parquet(out / "arrivals.parquet")
    tasks = pl.read_parquet(out / "tasks.parquet")
    assert sorted(tasks["key"]) == sorted(truth["results"])
    per_step = arrivals.group_by("step").agg(
        spread=(pl.col("time_ns").max() - pl.col("time_ns").min()) / 1e9,
        last_rank=pl.col("rank").sort_by("time_ns").last())
    waits = {}
    for row in per_step.iter_rows(named=True):
        k = int(row["step"].split("-")[1])
        mine = tasks.filter(pl.col("key").is_in([f"sum-{k}", f"max-{k}"]))
        assert mine.height == 2
        # submitted once the step's blocks were all there: each waited from the first
        # block's arrival to the last one's
        assert mine["wait_external_s"].to_list() == pytest.approx([row["spread"]] * 2,
                                                                  abs=1e-6)
        waits[k] = (mine["wait_external_s"].min(), row["last_rank"])
    slow = [w for k, (w, last) in waits.items() if k % 2]
    fast = [w for k, (w, last) in waits.items() if not k % 2]
    assert all(last == SLOW_RANK for k, (w, last) in waits.items() if k % 2), waits
    assert min(slow) > 0.4 and min(slow) > 2 * max(fast), waits


def test_per_step_lag_is_in_the_summary_and_reports(runs):
    _tmp, (out, _truth, stdout), _slower = runs
    summary = json.loads((out / "summary.json").read_text())["arrivals"]
    assert summary["keys"] == STEPS * RANKS and summary["steps"] == STEPS
    tasks = pl.read_parquet(out / "tasks.parquet")
    arrivals = pl.read_parquet(out / "arrivals.parquet")
    for step in summary["per_step"]:
        k = int(step["step"].split("-")[1])
        end = tasks.filter(pl.col("key").is_in([f"sum-{k}", f"max-{k}"]))["stop_ns"].max()
        last = arrivals.filter(pl.col("step") == step["step"])["time_ns"].max()
        assert step["lag_s"] == pytest.approx((end - last) / 1e9, abs=1e-6)
        assert step["lag_s"] > 0 and step["analytics_tasks"] == 2
    assert {s["sender"]: s["last_in_steps"] for s in summary["senders"]}[
        f"rank {SLOW_RANK}"] >= STEPS // 2
    md = (out / "report.md").read_text()
    section = md.split("## Data from outside Dask (arrivals)")[1].split("\n## ")[0]
    for step in summary["per_step"]:
        assert f"`{step['step']}`" in section
        assert f"{step['lag_s'] * 1e3:.1f} ms" in section
    html = (out / "report.html").read_text()
    assert f'"arrivals":{{"keys":{STEPS * RANKS},' in html
    assert all(f'"step":"{s["step"]}"' in html for s in summary["per_step"])
    assert "arrivals: 12 keys" in stdout
    trace = json.loads((out / "trace.json").read_text())["traceEvents"]
    mine = [e for e in trace if e["pid"] == 999_998 and e["ph"] != "M"]
    assert sorted(e["name"] for e in mine if e["ph"] == "i") == sorted(arrivals["key"])
    assert len([e for e in mine if e["ph"] == "X"]) == 2 * STEPS


def test_compare_with_a_slower_simulation_names_the_arrivals(runs):
    tmp, (out, _truth, _stdout), slower = runs
    cmp = tmp / "compare"
    proc = subprocess.run([str(BIN / "correlate"), "compare", str(out), str(slower), "-o",
                           str(cmp)], env=env(), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    md = (cmp / "compare.md").read_text()
    changed = md.split("## What changed")[1].split("\n## ")[0]
    bullets = [line for line in changed.splitlines() if line.startswith("- ")]
    assert bullets[0].startswith("- `arrivals`: the data from outside Dask (the simulation) "
                                 "changed, not the analytics"), changed
    assert "rank 2 last in" in bullets[0]
