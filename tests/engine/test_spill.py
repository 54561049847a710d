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
        assert r["spilled_bytes"] == r["written"], r["key"]
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
    reads = ss.filter(pl.col("action").cast(pl.String) == "disk-read").group_by("key").agg(
        want=(pl.col("reported_stop_ns") - pl.col("reported_start_ns")).sum() / 1e9)
    assert reads.height >= 1 and reads["key"].str.starts_with("total-").all()
    got = tasks.select("key", "input_read_back_s").join(reads, on="key", how="left")
    for key, back, want in got.iter_rows():
        assert back == (None if want is None else pytest.approx(want, rel=1e-9)), key
    assert tasks.filter(pl.col("key").str.starts_with("('make-spill'"))[
        "input_read_back_s"].null_count() == 14
