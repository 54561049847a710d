"""Dask's P2P shuffle disk buffer on a real LocalCluster (2 workers x 2 threads): a dataframe
shuffle with a per-partition groupby, a merge and an array rechunk, all with the P2P method
and its disk buffer. The job records every shard write and partition read of distributed's
``DiskShardsBuffer`` (path, thread, bytes, time) and each shuffle folder's files when it closes.

Two runs: with darshan-runtime under real LD_PRELOAD (skipped, saying why, without one), and
without it, genuine logs written through libdarshan-util from the job's record: shard writes
on the thread that made them (the worker's event loop), reads on the unpack task's thread,
none for the reads an array rechunk makes through a memory map (no read call to trace)."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest
from collect_job import record
from reports.cdp import CHROMIUM, Browser
from test_helper_threads import _write_logs

from collectors.darshan_env import find_runtime
from correlate.attribution.local_dir import BARRIER_PREFIX, P2P, SPILL
from correlate.engine import correlate_frames, write_outputs
from correlate.reports import aggregate as agg
from correlate.reports import write_reports
from correlate.reports.terminal import print_summary
from correlate.sources.run_folder import load
from correlate.summary import destinations
from tests.engine.key_parts import assert_same, correlated

pytestmark = pytest.mark.cluster
IO = ["pid", "thread_id", "path", "op", "length", "t0", "t1", "mapped"]
SHUFFLE = r"/shuffle-(.+)-\d+/[^/]+$"


def _run(tmp, real: bool):
    run, truth, lib = record(tmp, "p2p", darshan="auto" if real else "off")
    assert lib == real
    seen = json.loads(truth.read_text())
    io = pl.DataFrame(seen["io"], orient="row", schema=IO).with_columns(
        shuffle_id=pl.col("path").str.extract(SHUFFLE, 1))
    folders = pl.DataFrame(seen["folders"], orient="row", schema=["pid", "folder", "file",
                                                                   "size"])
    if not real:
        _write_logs(run, io.filter(~(pl.col("mapped") & (pl.col("op") == "read"))).select(
            "pid", pl.col("thread_id").cast(pl.UInt64), "path", "op", "length",
            offset=pl.lit(0), t0=(pl.col("t0") * 1e9).cast(pl.Int64),
            t1=(pl.col("t1") * 1e9).cast(pl.Int64)))
    frames = load(run)
    return correlate_frames(frames), io, folders, frames


@pytest.fixture(scope="module", params=["written-logs", "darshan-runtime"])
def shuffled(request, tmp_path_factory):
    real = request.param == "darshan-runtime"
    if real and find_runtime("auto")[0] is None:
        pytest.skip("no darshan-runtime (set DARSHAN_RUNTIME to libdarshan.so): the P2P job "
                    "runs under real LD_PRELOAD only with one; the written-logs run covers it")
    return _run(tmp_path_factory.mktemp(request.param), real)


def _shard_segments(result) -> pl.DataFrame:
    return result.tables["segments"].with_columns(
        shuffle_id=pl.col("path").str.extract(SHUFFLE, 1)).filter(
        pl.col("shuffle_id").is_not_null())


def test_the_job_used_the_disk_buffer_of_a_shuffle_a_merge_and_a_rechunk(shuffled):
    _result, io, folders, _frames = shuffled
    # a shuffle, a merge (two shuffles: left and right) and at least one rechunk
    assert folders["folder"].n_unique() >= 4
    assert io.filter(pl.col("mapped"))["shuffle_id"].n_unique() >= 1  # rechunk reads
    assert io.filter(~pl.col("mapped") & (pl.col("op") == "read")).height >= 16


def test_every_shard_write_goes_to_its_shuffles_barrier_none_to_spill(shuffled):
    result, io, _folders, _frames = shuffled
    seg = _shard_segments(result).filter(pl.col("op") == "write")
    assert seg["length"].sum() == io.filter(pl.col("op") == "write")["length"].sum()
    tasks = result.tables["tasks"].select("execution_id", "key")
    owners = seg.join(tasks, on="execution_id", how="left")
    assert (owners["attribution"] == "p2p-shuffle").all()
    assert (owners["key"] == BARRIER_PREFIX + owners["shuffle_id"]).all()
    assert (owners["attributed_weight"] == 1.0).all()
    un = result.tables["unattributed"]
    assert un.filter(pl.col("reason").is_in([P2P, SPILL])).is_empty()
    # one row per execution; the shard writes of a shuffle, from every worker, are accounted
    # at its barrier in task_files, not as the barrier's own I/O
    every = result.tables["tasks"]
    assert every["execution_id"].is_unique().all()
    written = seg.group_by("shuffle_id").agg(pl.col("length").sum())
    accounted = result.tables["task_files"].filter(
        pl.col("attribution") == "p2p-shuffle").join(
        every.select("execution_id", shuffle_id=pl.col("key").str.slice(len(BARRIER_PREFIX))),
        on="execution_id").group_by("shuffle_id").agg(pl.col("bytes").sum())
    assert written.join(accounted, on="shuffle_id").filter(
        pl.col("length") != pl.col("bytes")).is_empty()
    assert accounted.height == written.height
    assert result.summary["spill"]["spilled_bytes"] == 0


def test_every_shard_read_goes_to_the_unpack_task_that_read_it(shuffled):
    result, io, _folders, frames = shuffled
    reads = io.filter((pl.col("op") == "read") & ~pl.col("mapped"))
    seg = _shard_segments(result).filter(pl.col("op") == "read")
    assert seg["length"].sum() == reads["length"].sum()
    assert (seg["attribution"] == "exact-thread").all()
    tasks = result.tables["tasks"].select("execution_id", "key", "thread_id")
    got = seg.join(tasks, on="execution_id", how="left", suffix="_task")
    assert (got["thread_id"] == got["thread_id_task"]).all()
    # the task is an unpack of that shuffle: it depends on the shuffle's barrier
    deps = frames.dependencies.select(pl.col("key", "depends_on").cast(pl.String))
    unpack = got.join(deps, on="key", how="left").filter(
        pl.col("depends_on") == BARRIER_PREFIX + pl.col("shuffle_id"))
    assert unpack.select("seg_id").n_unique() == seg.height
    # and the thread that read the file, by the job's own record, is the one holding it
    files = reads.group_by("path").agg(pl.col("thread_id").unique())
    held = got.group_by("path").agg(holder=pl.col("thread_id").unique())
    both = files.join(held, on="path")
    assert both.height == files.height
    assert all(sorted(a) == sorted(b) for a, b in zip(both["thread_id"], both["holder"],
                                                         strict=True))


def test_per_shuffle_totals_equal_the_bytes_in_the_shuffle_folders(shuffled):
    result, io, folders, _frames = shuffled
    summary = {s["shuffle_id"]: s for s in result.summary["shuffles"]}
    truth = folders.with_columns(shuffle_id=pl.col("folder").str.extract(
        r"^shuffle-(.+)-\d+$", 1))
    per_shuffle = truth.group_by("shuffle_id").agg(pl.col("size").sum())
    assert set(summary) == set(per_shuffle["shuffle_id"])
    for sid, size in per_shuffle.iter_rows():
        s = summary[sid]
        assert s["written_bytes"] == size == s["written_to_owner_bytes"], sid
        assert s["write_method"] == "p2p-shuffle"
        assert s["tasks"]["barrier"]["executions"] >= 1
        assert s["tasks"]["transfer"]["executions"] >= 1
        assert s["tasks"]["unpack"]["executions"] >= 1
        per_pid = truth.filter(pl.col("shuffle_id") == sid).group_by("pid").agg(
            pl.col("size").sum()).rows_by_key("pid", unique=True)
        assert {w["pid"]: w["written_bytes"] for w in s["per_worker"]
                if w["written_bytes"]} == {p: v[0] for p, v in per_pid.items()}
        mapped = io.filter((pl.col("shuffle_id") == sid) & pl.col("mapped")).height > 0
        if mapped:  # read through a memory map: no read call, not 0 B
            assert s["read_bytes"] is None and s["reads_note"]
        else:
            assert s["read_bytes"] == s["read_by_tasks_bytes"] == io.filter(
                (pl.col("shuffle_id") == sid) & (pl.col("op") == "read"))["length"].sum()


def test_the_headline_splits_the_bytes_into_tasks_shuffles_spill_and_unexplained(shuffled):
    result, io, _folders, _frames = shuffled
    dest = result.summary["io"]["by_destination"]
    total = result.summary["io"]["total"]["bytes"]
    assert sum(d["bytes"] for d in dest.values()) == pytest.approx(total)
    assert set(dest) == {"tasks", "shuffles", "spill", "not_tasks", "unexplained"}
    assert dest["shuffles"]["bytes"] == io.filter(pl.col("op") == "write")["length"].sum()
    assert dest["spill"]["bytes"] == 0
    assert dest["tasks"]["bytes"] >= io.filter(
        (pl.col("op") == "read") & ~pl.col("mapped"))["length"].sum()


def test_rescheduled_unpack_executions_are_neither_errors_nor_runs(shuffled):
    result, _io, _folders, frames = shuffled
    tasks, summary = result.tables["tasks"], result.summary
    # the scheduler's own record of each Reschedule: processing → released by a
    # ``reschedule-…`` stimulus (independent of the worker-side transition the engine reads)
    sched = frames.transitions.lazy().filter(
        (pl.col("side") == "scheduler") & (pl.col("start") == "processing")
        & pl.col("stimulus_id").str.starts_with("reschedule")).collect()
    assert sched.height >= 1, "the job's P2P tasks were not rescheduled: nothing to check"
    handed = tasks.filter(pl.col("status") == "rescheduled")
    assert handed.height == sched.height == summary["handed_back"]["rescheduled"]["executions"]
    assert sorted(handed["key"]) == sorted(sched["key"].cast(pl.String))
    assert tasks.filter(pl.col("status") == "error").is_empty()
    assert summary["job"]["erred_tasks"] == 0
    # each rescheduled task ran to its end once, elsewhere: one run per task
    ok = tasks.filter(pl.col("status") == "ok")
    assert ok["key"].is_unique().all() and set(handed["key"]) <= set(ok["key"])
    assert summary["runs"] == ok.height == summary["executions"] - handed.height
    by_prefix = {r["prefix"]: r["executions"] for r in summary["top_prefixes_by_wall"]}
    for prefix, n in ok.group_by("prefix").len().iter_rows():
        assert by_prefix.get(prefix, n) == n
    assert summary["handed_back"]["rescheduled"]["wall_s"] == pytest.approx(
        handed["duration_s"].sum(), abs=1e-6)


def test_read_in_parts_by_key_the_transitions_say_the_same(shuffled, monkeypatch):
    """(the handed-back executions among them: each execution's ending is found in the part
    of its key)"""
    _result, _io, _folders, frames = shuffled
    whole, _ = correlated(frames, monkeypatch)
    assert whole["summary"]["handed_back"]["rescheduled"]["executions"] >= 1
    parts, _ = correlated(frames, monkeypatch, whole["events"].height // 4, spilled=False)
    assert_same(whole, parts)


def test_every_worker_has_exactly_its_executor_threads(shuffled):
    """Code a transfer task started (its comm buffer serialising messages on Dask's offload
    thread) is timed under the task's execution by the collectors: not an execution, not a
    lane, not thread time."""
    result, _io, _folders, frames = shuffled
    tasks, summary = result.tables["tasks"], result.summary
    nthreads = {r["pid"]: r["nthreads"] for r in summary["processes"]
                if r["role"] == "worker"}
    # Dask's own record of the thread that ran each task body: the task-finished messages
    dask_threads = (frames.transitions.lazy().filter(
        (pl.col("side") == "scheduler") & pl.col("thread_id").is_not_null())
        .select("pid", "worker", "thread_id").collect())
    by_address = {p["worker"]: p["pid"] for p in summary["processes"] if p["worker"]}
    told = {(by_address[w], t) for w, t in dask_threads.select("worker", "thread_id")
            .unique().iter_rows()}
    lanes = agg.lanes(tasks)
    assert lanes.group_by("pid").len().rows() and all(
        n == nthreads[pid] for pid, n in lanes.group_by("pid").len().iter_rows())
    assert set(tasks.select("pid", "thread_id").unique().iter_rows()) == told
    # the records on other threads were there (the job makes them) and are named as such
    others = summary["task_code_on_other_threads"]
    recorded = set(frames.executions.select("pid", "thread_id").unique().iter_rows())
    assert others and {(r["pid"], r["thread_id"]) for r in others} == recorded - told
    assert not any(r["executor_thread"] for r in others)
    assert sum(r["calls"] for r in others) == frames.executions.height - tasks.height
    budget = agg.worker_budget(tasks, agg.executor_threads(summary))
    assert (budget["threads"] == 2).all() and not budget["threads_bound"].any()
    assert (budget["busy_share"] <= 1.0).all()


def _pct(x: float) -> str:
    return f"{x:.1%}"


def _shares_in(text: str, summary: dict) -> list[tuple[str, str, str]]:
    """(what, printed, the summary's) for every share of the I/O destinations and the
    tasks' share that ``text`` prints."""
    out = []
    for name, _b, share in destinations(summary):
        for got in re.findall(rf"\b{re.escape(name)} [\d.,]+ [KMGT]?i?B \(([\d.]+%)\)", text):
            out.append((name, got, _pct(share)))
    for got in re.findall(r"attributed to task(?:s| executions): (?:[^(%\n]*\()?([\d.]+%)",
                          text):
        out.append(("attributed", got, _pct(summary["io"]["attributed_bytes_share"])))
    return out


def test_every_output_prints_each_share_as_the_summary_has_it(shuffled, tmp_path, capsys):
    result, _io, _folders, _frames = shuffled
    summary = result.summary
    dest = summary["io"]["by_destination"]
    assert dest["shuffles"]["bytes"] > 0  # the contradiction needs shard writes
    assert summary["io"]["attributed_bytes_share"] == dest["tasks"]["share"]
    write_outputs(result, tmp_path)
    write_reports(tmp_path, kinds=("markdown", "html"))
    print_summary(json.loads((tmp_path / "summary.json").read_text()), result.tables,
                  out=tmp_path)
    texts = {"terminal": capsys.readouterr().out,
             "report.md": (tmp_path / "report.md").read_text()}
    html = (tmp_path / "report.html").read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    # the page prints DATA.destinations and io.attributed_bytes_share (report.js)
    assert [(n, s) for n, _b, s in data["destinations"]] == [
        (n, s) for n, _b, s in destinations(summary)]
    assert data["headline"]["io"]["attributed_bytes_share"] == dest["tasks"]["share"]
    if CHROMIUM.exists():
        with Browser(tmp_path / "chromium") as page:
            page.open((tmp_path / "report.html").as_uri())
            texts["report.html"] = page.evaluate(
                "document.getElementById('headline').textContent + '\\n' + "
                "document.getElementById('io-share').textContent")
    for where, text in texts.items():
        found = _shares_in(text, summary)
        assert {w for w, _g, _e in found} >= {"attributed", "P2P shuffles"}, where
        assert [f for f in found if f[1] != f[2]] == [], where


def test_shard_writes_are_the_shuffles_own_not_the_barriers_io(shuffled):
    result, io, _folders, _frames = shuffled
    tasks = result.tables["tasks"]
    barriers = tasks.filter(pl.col("key").str.starts_with(BARRIER_PREFIX))
    assert barriers.height >= 4
    # a barrier runs no I/O call of its own (the worker writes the shards on its event loop)
    assert (barriers["write_bytes"] == 0).all() and (barriers["io_time_s"] == 0).all()
    # no execution shows more time inside I/O calls of its own thread than it ran
    exact = tasks.filter(pl.col("attribution") == "exact-thread")
    assert exact.filter(pl.col("io_time_s") > pl.col("duration_s") + 1e-6).is_empty()
    # the heaviest executions by I/O (reports, figures) hold no shard write
    top = agg.top_tasks(tasks, "io_bytes", 10)
    assert not top["key"].str.starts_with(BARRIER_PREFIX).any()
    # the shuffle's own row has them, naming the barrier where they are accounted
    shuffles = {s["shuffle_id"]: s for s in result.summary["shuffles"]}
    for sid, n in io.filter(pl.col("op") == "write").group_by("shuffle_id").agg(
            pl.col("length").sum()).iter_rows():
        assert shuffles[sid]["written_bytes"] == n
        assert shuffles[sid]["barrier_key"] == BARRIER_PREFIX + sid
