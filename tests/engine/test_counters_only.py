"""Darshan without DXT (how most HPC centres run it): POSIX counters per file and process only.

- The MiniApp fixture (a real run, counters and HEATMAP, no DXT): the run's, each process's and
  each file's bytes equal what libdarshan-util itself reads from the logs (PyDarshan's bundled
  library, independent of our decoder), and the tasks that did the I/O get it, by a named
  method.
- A real LocalCluster job whose tasks each write and read their own file, its calls written as
  genuine counters-only logs through libdarshan-util: every task that alone opened its file
  gets exactly that file's bytes (``counter-file``); without the record of opens the same
  bytes are shared by time (``counter-window``), none lost.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from itertools import pairwise
from types import SimpleNamespace
from urllib.parse import quote, unquote

import numpy as np
import polars as pl
import pytest

from correlate.attribution import doubtful
from correlate.attribution.shares import time_shares
from correlate.engine import correlate_frames
from correlate.frames.scalars import number
from correlate.reports import aggregate as agg
from correlate.sources.run_folder import load
from testing.darshan_counts import counter_bytes
from testing.darshan_writer import write_logs_from_truth
from tests.conftest import fixture_path
from tests.engine.collect_job import JOBS


def _per_file(result) -> pl.DataFrame:
    """pid, path, read, written over task_files (with their executions' pid) + unattributed."""
    files = result.tables["task_files"].join(
        result.tables["tasks"].select("execution_id", "pid"), on="execution_id")
    rows = pl.concat([files.select("pid", "path", "op", "bytes"),
                      result.tables["unattributed"].select("pid", "path", "op", "bytes")])
    return rows.with_columns(pl.col("op").cast(pl.String)).group_by("pid", "path").agg(
        read=pl.col("bytes").filter(pl.col("op") == "read").sum(),
        written=pl.col("bytes").filter(pl.col("op") == "write").sum())


@pytest.fixture(scope="module")
def miniapp_result(correlated_fixture):
    """The miniapp fixture and its correlated tables and summary, as ``correlate`` wrote them
    (the session's output folder, tests/conftest.py)."""
    name = "recup-miniapp-20240215"
    out = correlated_fixture(name)
    tables = {t: pl.read_parquet(out / f"{t}.parquet")
              for t in ("tasks", "task_files", "unattributed")}
    return fixture_path(name), SimpleNamespace(
        tables=tables, summary=json.loads((out / "summary.json").read_text()))


@pytest.mark.fixtures
def test_miniapp_totals_equal_libdarshan_util_per_run_process_and_file(miniapp_result):
    folder, result = miniapp_result
    posix, stdio = (counter_bytes(folder, m) for m in ("POSIX", "STDIO"))
    io = result.summary["io"]
    run_bytes = int(posix["read"].sum() + posix["written"].sum())
    assert run_bytes > 60e9  # the log's ~66 GB, not the 2 B of C stdio
    assert io["posix_counters_without_dxt"]["bytes"] == run_bytes
    stdio_bytes = int(stdio["read"].sum() + stdio["written"].sum())
    assert io["stdio"]["bytes"] == stdio_bytes
    assert io["total"]["bytes"] == run_bytes + stdio_bytes
    truth = pl.concat([posix, stdio]).group_by("pid", "path").agg(
        pl.col("read", "written").sum())
    assert io["attributed"]["bytes"] + io["unattributed"]["bytes"] == pytest.approx(
        io["total"]["bytes"], rel=1e-9)
    got = _per_file(result)
    both = truth.join(got, on=["pid", "path"], how="left", suffix="_got")
    # each file's (and so each process's) read and written bytes, as libdarshan-util reads them
    for col in ("read", "written"):
        bad = both.filter((pl.col(f"{col}_got").fill_null(0) - pl.col(col)).abs() > 1e-3)
        assert bad.is_empty(), bad.head()
    def per_process(df: pl.DataFrame) -> dict:
        df = df.group_by("pid").agg(pl.col("read", "written").sum())
        return {r[0]: r[1:] for r in df.filter(pl.col("read") + pl.col("written") > 0).rows()}
    assert per_process(got).keys() == per_process(truth).keys()
    for pid, want in per_process(truth).items():
        assert per_process(got)[pid] == pytest.approx(want, rel=1e-9)


@pytest.mark.fixtures
def test_miniapp_io_tasks_get_their_counters_by_a_named_method(miniapp_result):
    _folder, result = miniapp_result
    tasks = result.tables["tasks"]
    for prefix in ("map_read_frame", "save_file"):
        rows = tasks.filter(pl.col("prefix") == prefix)
        assert rows["read_bytes"].sum() + rows["write_bytes"].sum() > 1e9, prefix
        assert set(rows.filter(pl.col("read_bytes") + pl.col("write_bytes") > 0)
                   ["attribution"]) == {"counter-window"}
    methods = result.summary["io"]["attributed_by_method"]
    assert methods["counter-window"]["bytes"] == pytest.approx(
        result.summary["io"]["attributed"]["bytes"])


def test_time_shares_follow_the_heatmap_and_leave_uncovered_time_out():
    starts, stops = np.array([0, 50]), np.array([50, 100])
    assert time_shares(0, 100, starts, stops, None) == pytest.approx([0.5, 0.5])
    heat = (np.array([0, 25, 50, 75]), np.array([25, 50, 75, 100]),
            np.array([0.0, 10.0, 30.0, 0.0]))
    assert time_shares(0, 100, starts, stops, heat) == pytest.approx([0.25, 0.75])
    # two windows at once share a piece; a piece no window covers stays out
    assert time_shares(0, 100, np.array([0, 0]), np.array([100, 50]), None) == pytest.approx(
        [0.75, 0.25])
    assert time_shares(0, 100, np.array([20]), np.array([40]), None) == pytest.approx([0.2])


@pytest.fixture(scope="module")
def io_job(io_run, tmp_path_factory):
    """The session's io job (tests/conftest.py) and a folder of this module's own for the
    copies it changes; the copies leave out its Darshan logs."""
    return tmp_path_factory.mktemp("counters"), io_run.run, io_run.truth


@pytest.fixture(scope="module")
def counters_only(io_job):
    """The io job's calls as counters-only logs (no DXT)."""
    tmp, run, truth = io_job
    copy = tmp / "counters-only"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("darshan"))
    write_logs_from_truth(copy, truth, dxt=False)
    return load(copy).collected(), truth


SPILLED = {"burn": 3_000_000, "nap": 5_000_001}  # bytes per spill file, by key prefix


@pytest.fixture(scope="module")
def spilled_counters(io_job):
    """The io job's calls plus, in each worker process, Dask's spill files of a burn and a
    nap key (``<local_directory>/storage/<quoted key>#<n>``, written whole then read back)
    made while another task of the process ran, as counters-only logs: what a spill looks
    like to Darshan without DXT."""
    tmp, run, truth = io_job
    frames = load(run)
    local = dict(frames.processes.select("pid", "local_directory").drop_nulls().rows())
    ex = frames.executions.sort("local_start_ns")
    spills = []
    for n, (pid, directory) in enumerate(sorted(local.items())):
        mine = ex.filter(pl.col("pid") == pid)
        during = mine.row(mine.height // 2, named=True)  # the files move inside its window
        t0, t1 = during["local_start_ns"] / 1e9, during["local_stop_ns"] / 1e9
        for prefix, size in SPILLED.items():
            key = mine.filter(pl.col("key").cast(pl.String).str.starts_with(prefix + "-")
                              )["key"][0]
            path = f"{directory}/storage/{quote(key, safe='')}#{n}"
            spills.append({"key": key, "pid": pid, "size": size, "path": path})
            third = (t1 - t0) / 3
            truth = [*truth, {"key": None, "pid": pid, "thread": 1, "path": path, "ops": [
                ("write", 0, size, t0, t0 + third), ("read", 0, size, t0 + third, t1)]}]
    copy = tmp / "spilled-counters"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("darshan"))
    write_logs_from_truth(copy, truth, dxt=False)
    return load(copy).collected(), spills


@pytest.mark.cluster
def test_counters_only_each_sole_opener_gets_exactly_its_files_bytes(counters_only):
    frames, truth = counters_only
    assert frames.io_segments.is_empty() if isinstance(frames.io_segments, pl.DataFrame) else True
    result = correlate_frames(frames)
    tasks = result.tables["tasks"]
    for t in truth:
        row = tasks.filter(pl.col("key") == t["key"]).row(0, named=True)
        ops = t.get("ops", [])
        for op in ("read", "write"):
            want = float(sum(n for o, _off, n, *_ in ops if o == op))
            assert row[f"{op}_bytes"] == want, (t["key"], op)
        if ops:
            assert row["attribution"] == "counter-file", t["key"]
    io = result.summary["io"]
    assert io["unattributed"]["bytes"] == 0
    assert io["attributed_by_method"]["counter-file"]["bytes"] == io["total"]["bytes"]


@pytest.mark.cluster
def test_counters_only_without_record_of_opens_split_by_time_and_conserved(counters_only):
    frames, truth = counters_only
    result = correlate_frames(replace(frames, file_opens=frames.file_opens.clear()))
    io = result.summary["io"]
    total = sum(n for t in truth for _o, _off, n, *_ in t.get("ops", []))
    assert io["total"]["bytes"] == total
    assert io["attributed"]["bytes"] + io["unattributed"]["bytes"] == pytest.approx(total)
    assert set(result.tables["task_files"]["attribution"].cast(pl.String)) == {"counter-window"}
    # the tasks that ran while a file moved share it by time, computed here from the calls the
    # tasks recorded and the windows of the process's executions
    tasks = result.tables["tasks"]
    # (Darshan's times of a file's first and last call reach the run's timeline through the
    # clock alignment: each end may be off by its stated uncertainty, moving that much of the
    # file's span, and its bytes, between neighbouring windows)
    clocks = result.tables["clocks"].filter(pl.col("domain") == "darshan")
    off_ns = 1_000 + 2 * (number(clocks["uncertainty_ns"].max()) or 0.0)
    want, slack = _shared_by_time(truth, tasks, off_ns)
    assert sum(w for by_op in want.values() for w in by_op.values()) > 0
    for r in tasks.iter_rows(named=True):
        for op in ("read", "write"):
            assert r[f"{op}_bytes"] == pytest.approx(want[r["key"]][op],
                                                     abs=1.0 + slack[r["key"]][op]), (
                r["key"], op)


def _pieces_shared(first: int, last: int, windows: list[tuple[str, int, int]]
                   ) -> dict[str, float]:
    """The share of [first, last] each window's key gets: the span cut at every window edge
    inside it, each piece split equally among the windows that cover it (uncovered: nobody)."""
    cuts = sorted({first, last, *(x for _k, s, e in windows for x in (s, e) if first < x < last)})
    share: dict[str, float] = {}
    for a, b in pairwise(cuts):
        on = [k for k, s, e in windows if s <= a and b <= e]
        for k in on:
            share[k] = share.get(k, 0.0) + (b - a) / (last - first) / len(on)
    return share


def _shared_by_time(truth: list[dict], tasks: pl.DataFrame, off_ns: float
                    ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """key -> op -> bytes, each file's read (and written) bytes spread evenly over its first
    call's start to its last call's end, among its process's executions by time; and the bytes
    by which each may differ when both ends of a file's span are ``off_ns`` off."""
    calls = pl.DataFrame([(t["pid"], t["path"], op, n, a, b) for t in truth
                          for op, _off, n, a, b in t.get("ops", [])], orient="row",
                         schema=["pid", "path", "op", "length", "t0", "t1"])
    files = calls.group_by("pid", "path", "op").agg(
        pl.col("length").sum(), first=(pl.col("t0").min() * 1e9).round().cast(pl.Int64),
        last=(pl.col("t1").max() * 1e9).round().cast(pl.Int64))
    want = {k: {"read": 0.0, "write": 0.0} for k in tasks["key"]}
    slack = {k: {"read": 0.0, "write": 0.0} for k in tasks["key"]}
    for f in files.iter_rows(named=True):
        windows = [(k, s, e) for k, s, e in tasks.filter(pl.col("pid") == f["pid"]).select(
            "key", "local_start_ns", "local_stop_ns").iter_rows()]
        for key, share in _pieces_shared(f["first"], f["last"], windows).items():
            want[key][f["op"]] += f["length"] * share
            slack[key][f["op"]] += f["length"] * 2 * off_ns / max(f["last"] - f["first"], 1)
    return want, slack


def test_dxt_off_writes_a_config_and_environment_without_dxt(tmp_path):
    from collectors.darshan_env import environment

    on = environment("/x/libdarshan.so", tmp_path / "on")
    off = environment("/x/libdarshan.so", tmp_path / "off", dxt=False)
    assert on["DXT_ENABLE_IO_TRACE"] == "1" and "DXT_ENABLE_IO_TRACE" not in off
    assert off["DASK_CORRELATE_MARKERS"] == "1"  # their POSIX counters time the log's clock
    assert "DXT_POSIX" in (tmp_path / "on" / "darshan.conf").read_text().split("NAME_EXCLUDE")[0]
    conf = (tmp_path / "off" / "darshan.conf").read_text()
    assert "MOD_ENABLE DXT_POSIX" not in conf and "MAX_RECORDS" in conf


@pytest.mark.cluster
def test_live_job_with_dxt_off_gives_each_sole_opener_its_files_bytes(tmp_path):
    """The io job under the real darshan-runtime with ``collect --dxt off``."""
    import subprocess
    import sys

    from collectors.darshan_env import find_runtime
    from tests.engine.collect_job import JOBS

    lib, how = find_runtime("auto")
    if not lib:
        pytest.skip(f"needs a darshan-runtime (DARSHAN_RUNTIME): {how}")
    (tmp_path / "data").mkdir()
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(tmp_path / "run"),
           "--darshan", lib, "--dxt", "off", "--profile", "off", "--flush-interval", "1", "--",
           sys.executable, "jobs.py", "io", f"{tmp_path / 'truth.json'},{tmp_path / 'data'}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=JOBS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    truth = json.loads((tmp_path / "truth.json").read_text())
    frames = load(tmp_path / "run").collected()
    assert frames.darshan_logs.height >= 2
    assert frames.darshan_logs["segment_count"].sum() == 0  # no DXT
    result = correlate_frames(frames)
    tasks = result.tables["tasks"]
    for t in truth:
        if not t.get("ops"):
            continue
        row = tasks.filter(pl.col("key") == t["key"]).row(0, named=True)
        for op in ("read", "write"):
            want = float(sum(n for o, _off, n, *_ in t["ops"] if o == op))
            assert row[f"{op}_bytes"] == want, (t["key"], op)
        assert row["attribution"] == "counter-file", t["key"]


def _spill_is_the_keys(result, spills) -> None:
    tasks, summary = result.tables["tasks"], result.summary
    for s in spills:
        row = tasks.filter(pl.col("key") == s["key"]).sort("execution_id").row(-1, named=True)
        assert (row["spilled_bytes"], row["unspilled_bytes"], row["spill_writes"]) == (
            s["size"], s["size"], 1), s["key"]
    total = sum(s["size"] for s in spills)
    sp = summary["spill"]
    assert (sp["spilled_bytes"], sp["unspilled_bytes"], sp["keys_spilled"]) == (
        total, total, len(spills))
    assert "counters" in sp["source"]["bytes_and_times"]
    per_pid = {}
    for s in spills:
        per_pid[s["pid"]] = per_pid.get(s["pid"], 0) + s["size"]
    assert {w["pid"]: (w["spilled_bytes"], w["unspilled_bytes"]) for w in sp["per_worker"]} == {
        p: (n, n) for p, n in per_pid.items()}
    # no task is given a spill file's bytes, by any rule
    assert result.tables["task_files"].filter(pl.col("path").str.contains("/storage/")).is_empty()
    assert summary["io"]["by_destination"]["spill"]["bytes"] == 2 * total
    # a key that did not spill has 0 B of spill (the counters count every file), not unknown
    others = tasks.filter(~pl.col("key").is_in([s["key"] for s in spills]))
    assert (others["spilled_bytes"].fill_null(-1) == 0).all()


@pytest.mark.cluster
def test_counters_only_spill_files_are_their_keys_spill(spilled_counters):
    frames, spills = spilled_counters
    _spill_is_the_keys(correlate_frames(frames), spills)


@pytest.mark.cluster
def test_counters_only_spill_without_record_of_opens_is_given_to_no_task(spilled_counters):
    frames, spills = spilled_counters
    result = correlate_frames(replace(frames, file_opens=frames.file_opens.clear()))
    _spill_is_the_keys(result, spills)


@pytest.mark.fixtures
def test_miniapp_spill_is_the_counters_storage_bytes_per_key(miniapp_result):
    folder, result = miniapp_result
    posix = counter_bytes(folder, "POSIX")
    files = posix.filter(pl.col("path").str.contains("/storage/")).with_columns(
        key=pl.col("path").str.extract(r"/storage/([^/]+)#\d+$", 1)
        .map_elements(unquote, return_dtype=pl.String))
    assert files["key"].null_count() == 0
    truth = files.group_by("key").agg(pl.col("read", "written").sum())
    assert truth.height > 100 and (truth["read"].sum() + truth["written"].sum()) > 40e9
    tasks = result.tables["tasks"].filter(pl.col("spilled_bytes").is_not_null())
    got = tasks.sort("execution_id").group_by("key").last().select(
        "key", "spilled_bytes", "unspilled_bytes")
    both = truth.join(got, on="key", how="left")
    for want, have in (("written", "spilled_bytes"), ("read", "unspilled_bytes")):
        off = both.filter((pl.col(have).fill_null(-1) - pl.col(want)).abs()
                          > 1e-3 * pl.col(want))
        assert off.is_empty(), off.head()
    sp = result.summary["spill"]
    assert sp["spilled_bytes"] == pytest.approx(truth["written"].sum(), rel=1e-3)
    assert sp["unspilled_bytes"] == pytest.approx(truth["read"].sum(), rel=1e-3)
    assert result.tables["task_files"].filter(pl.col("path").str.contains("/storage/")).is_empty()


@pytest.mark.cluster
def test_records_with_doubtful_names_are_labelled_not_read_as_named(io_job):
    """The io job's calls plus what Darshan was seen to record on real runs, as genuine
    counters-only logs: a worker's proc.json named in the job's working directory (the
    collectors write it through a directory descriptor) and a relative path."""
    tmp, run, truth = io_job
    frames = load(run)
    pid = frames.processes.filter(pl.col("role") == "worker")["pid"][0]
    t = frames.executions.filter(pl.col("pid") == pid)["local_start_ns"].min() / 1e9
    ours, relative = str(JOBS / "proc.json"), "data/block-7-0.npy"
    extra = [{"key": None, "pid": pid, "thread": 1, "path": ours,
              "ops": [("write", 0, 54_800, t, t + 0.001)]},
             {"key": None, "pid": pid, "thread": 1, "path": relative,
              "ops": [("read", 0, 96_300, t, t + 0.001)]}]
    copy = tmp / "doubtful-names"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("darshan"))
    write_logs_from_truth(copy, [*truth, *extra], dxt=False)
    result = correlate_frames(load(copy).collected())
    un = result.tables["unattributed"]
    reasons = dict(un.group_by("path").agg(pl.col("reason").unique()).rows())
    assert reasons[ours] == [doubtful.MISPLACED] and reasons[relative] == [doubtful.RELATIVE]
    # no task is given them, and the summary says the names are doubtful
    assert result.tables["task_files"].filter(pl.col("path").is_in([ours, relative])).is_empty()
    warning = [w for w in result.summary["warnings"] if "doubtful" in w]
    assert len(warning) == 1 and ours in warning[0] and relative in warning[0]
    # ours is known and no task's; the relative read stays unexplained, under its label
    dest = result.summary["io"]["by_destination"]
    assert dest["not_tasks"]["bytes"] >= 54_800 and dest["unexplained"]["bytes"] >= 96_300
    f = agg.files(result.tables["task_files"], un)
    assert f.filter(pl.col("path").is_in([ours, relative]))["doubtful_name"].all()
    assert not f.filter(pl.col("path").str.ends_with(".bin"))["doubtful_name"].any()
