"""Spill per key on a real LocalCluster that spills (400 MB memory limit, low thresholds): 16
results of 8 MiB, tuple keys and string keys that need quoting in a file name, then sums that
read them back. The job records every spill file Dask's store wrote and read (path, size,
thread, time). With a darshan-runtime the job runs under real LD_PRELOAD; otherwise genuine
logs are written through libdarshan-util from that record."""

from __future__ import annotations

import json

import polars as pl
import pytest
from collect_job import record
from test_helper_threads import _write_logs

from correlate.engine import correlate_frames
from correlate.sources.run_folder import load
from testing.raw_parts import read_raw

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def spilled(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spill")
    run, truth, lib = record(tmp, "spill", data=tmp)
    seen = pl.DataFrame(json.loads(truth.read_text())["spill"], orient="row",
                        schema=["pid", "thread_id", "path", "op", "length", "t0", "t1", "key"])
    if not lib:
        _write_logs(run, seen.with_columns(
            pl.col("thread_id").cast(pl.UInt64), offset=pl.lit(0),
            t0=(pl.col("t0") * 1e9).cast(pl.Int64), t1=(pl.col("t1") * 1e9).cast(pl.Int64)))
    return correlate_frames(load(run)), seen, run


def _engine_saw(result) -> str:
    """What the engine made of the run, for a failure's message: the tasks' spill and
    read-back columns and the summary's account of the inputs (the CI run of stop 74 saw every
    read-back null and a spilled key's bytes null, which no run here has reproduced)."""
    tasks = result.tables["tasks"].select("key", "worker", "pid", "thread_id", "spilled_bytes",
                                          "input_read_back_s", "attribution")
    told = {k: result.summary.get(k) for k in ("executions", "io", "rejects", "warnings",
                                                "processes", "spill")}
    return f"\n{tasks.rows()}\n{told}"


def test_every_spilled_keys_bytes_and_writes_are_what_dask_wrote_for_it(spilled):
    result, seen, _run = spilled
    truth = seen.group_by("key").agg(
        written=pl.col("length").filter(pl.col("op") == "write").sum(),
        writes=(pl.col("op") == "write").sum(),
        read=pl.col("length").filter(pl.col("op") == "read").sum())
    assert truth.filter(pl.col("writes") > 0).height >= 4  # the job did spill
    assert {"spill me/ü#1", "('make-spill', 0)"} <= set(truth["key"])
    tasks = result.tables["tasks"]
    got = truth.join(tasks.select("key", "spilled_bytes", "spill_writes", "unspilled_bytes"),
                     on="key", how="left")
    for r in got.iter_rows(named=True):
        assert r["spilled_bytes"] == r["written"], r["key"] + _engine_saw(result)
        assert r["spill_writes"] == r["writes"], r["key"]
        assert r["unspilled_bytes"] == r["read"], r["key"]
    never = tasks.join(truth, on="key", how="anti")
    assert (never["spilled_bytes"] == 0).all()
    # the spill segments say so, and belong to no execution
    seg = result.tables["segments"].filter(pl.col("attribution") == "spill")
    assert seg["length"].sum() == seen["length"].sum()
    assert seg["execution_id"].null_count() == seg.height


def test_executions_that_read_spilled_inputs_back_show_the_read_back_time(spilled):
    result, _seen, run = spilled
    tasks = result.tables["tasks"]
    # Dask's own disk-read startstops, as the scheduler recorded them: per key, their durations
    ss = read_raw(run, "task_startstops")
    reads = ss.filter(pl.col("action").cast(pl.String) == "disk-read").group_by(
        pl.col("key").cast(pl.String)).agg(
        want=(pl.col("reported_stop_ns") - pl.col("reported_start_ns")).sum() / 1e9)
    # (the sums read the spilled blocks back; Dask also records a disk-read for a task without
    # inputs when its thread was held over 5 ms between two clock reads, as on a loaded host)
    assert reads.filter(pl.col("key").str.starts_with("total-")).height >= 1
    got = tasks.select("key", "input_read_back_s").join(reads, on="key", how="left")
    for key, back, want in got.iter_rows():
        assert back == (None if want is None else pytest.approx(want, rel=1e-9)), (
            key + _engine_saw(result))
    # (the blocks among them: null but where Dask recorded a disk-read)
    assert got.filter(pl.col("key").str.starts_with("('make-spill'")).height == 14


def test_read_back_time_is_dasks_disk_read_split_by_what_darshan_saw_in_it(spilled):
    """Dask's disk-read windows (raw startstops, the worker's time.time()) and the job's own
    record of every spill-file call (the same clock): the summary's split of Dask's read-back
    time holds exactly the calls the job saw inside those windows."""
    result, seen, run = spilled
    back = result.summary["spill"]["read_back"]
    ss = read_raw(run, "task_startstops").filter(
        pl.col("action").cast(pl.String) == "disk-read")
    assert back["dask_disk_read_s"] == pytest.approx(
        ((ss["reported_stop_ns"] - ss["reported_start_ns"]).sum()) / 1e9, rel=1e-9)
    assert back["dask_disk_read_s"] == pytest.approx(
        result.tables["tasks"]["input_read_back_s"].sum(), rel=1e-9), _engine_saw(result)
    # the spill calls the job recorded inside a disk-read window of their process (same
    # clock: no alignment)
    pid_of = dict(result.tables["tasks"].select("worker", "pid").unique().rows())
    wins = [(pid_of[w], s / 1e9, e / 1e9) for w, s, e in
            ss.select("worker", "reported_start_ns", "reported_stop_ns").rows()]
    calls = seen.filter(pl.struct("pid", "t0", "t1").map_elements(
        lambda c: any(p == c["pid"] and a <= (c["t0"] + c["t1"]) / 2 <= b for p, a, b in wins),
        return_dtype=pl.Boolean))
    reads = calls.filter(pl.col("op") == "read")
    assert reads.height >= 1  # the job read spilled inputs back for its executions
    assert back["read_bytes"] == reads["length"].sum()
    assert back["write_bytes"] == calls.filter(pl.col("op") == "write")["length"].sum()
    # the read calls are a part of Dask's figure, never more; the rest is said, not dropped
    assert 0 < back["in_read_calls_s"] <= back["dask_disk_read_s"]
    assert back["rest_s"] == pytest.approx(
        back["dask_disk_read_s"] - back["in_read_calls_s"] - back["in_write_calls_s"])
