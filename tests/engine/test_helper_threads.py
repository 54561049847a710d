"""I/O that libraries do on their own threads, on real libraries and a real LocalCluster:
``dd.read_parquet`` (pyarrow reads each file's footer on the executor thread and its pages on
its I/O pool) and ``da.from_zarr`` on a zarr 3 array (every chunk read on zarr's I/O thread; the
executor thread touches no file of the array). Each input file's bytes must go to the one
execution that read it: the partition with that file's index, the block with that chunk's index.

With a darshan-runtime available the jobs run under real LD_PRELOAD. Otherwise the test writes
genuine Darshan logs through libdarshan-util that reproduce the thread pattern: for parquet,
each reading execution's footer read on its own thread and its pages on two pool threads that
serve every execution of the process in turn; for zarr, each chunk read on the thread that
opened it, as the job's own audit hook saw it (not the collector's)."""

from __future__ import annotations

import ast
import json
import os
import socket
from pathlib import Path

import polars as pl
import pytest
from collect_job import record

from correlate.engine import correlate_frames
from correlate.sources.run_folder import load
from testing.darshan_writer import write_log

pytestmark = pytest.mark.cluster
HOST = socket.gethostname().split(".", 1)[0]
POOL = (0x7F00_0000_1000, 0x7F00_0000_2000)  # pyarrow's I/O threads in the written logs
PAGE = 65536


def _record(tmp: Path, job: str) -> tuple[Path, dict, bool]:
    run, truth, real = record(tmp, job)
    return run, json.loads(truth.read_text()), real


def _write_logs(run: Path, calls: pl.DataFrame) -> None:
    """One log per process from ``calls`` (pid, thread_id, path, op, offset, length, t0, t1 in
    ns on the process clock), its header start one second before the first call."""
    (run / "darshan").mkdir(exist_ok=True)
    for (pid,), g in calls.group_by("pid"):
        start_ns = int(g["t0"].min()) - 10**9
        seg = g.with_columns(start_s=(pl.col("t0") - start_ns) / 1e9,
                             end_s=(pl.col("t1") - start_ns) / 1e9)
        write_log(run / "darshan" / f"test_python_id{pid}-{pid}_1.darshan", seg, host=HOST,
                  pid=pid, start_ns=start_ns, end_ns=start_ns + 600 * 10**9)


def _index(key: str) -> tuple[int, ...]:
    return tuple(ast.literal_eval(key)[1:])


def _parquet_calls(run: Path, files: list[str]) -> pl.DataFrame:
    """What a Darshan trace of the parquet job shows: per reading execution (the one whose
    key index names its file), the footer read on its own thread early in its window, then the
    rest of the file in 64 KiB reads alternating between the two pool threads."""
    rows = []
    for e in load(run).executions.iter_rows(named=True):
        if not e["key"].startswith("('read_parquet"):
            continue
        index = _index(e["key"])
        path = files[index[0]]
        size = os.path.getsize(path)
        a, b = e["local_start_ns"], e["local_stop_ns"]
        span = b - a
        footer = min(PAGE, size)
        rows.append((e["pid"], e["thread_id"], path, size - footer, footer,
                     a + span // 10, a + span // 8))
        pages = range(0, size - footer, PAGE)
        for n, off in enumerate(pages):
            t0 = a + span // 5 + (span * 7 // 10) * n // len(pages)
            rows.append((e["pid"], POOL[n % 2], path, off, min(PAGE, size - footer - off), t0,
                         t0 + span // (20 * len(pages))))
    return pl.DataFrame(rows, schema={"pid": pl.Int64, "thread_id": pl.UInt64, "path": pl.String,
                                      "offset": pl.Int64, "length": pl.Int64, "t0": pl.Int64,
                                      "t1": pl.Int64}, orient="row").with_columns(op=pl.lit("read"))


@pytest.fixture(scope="module")
def parquet_run(tmp_path_factory):
    run, truth, real = _record(tmp_path_factory.mktemp("parquet"), "parquet")
    if not real:
        _write_logs(run, _parquet_calls(run, truth["files"]))
    return correlate_frames(load(run)), truth


@pytest.fixture(scope="module")
def zarr_run(tmp_path_factory):
    run, truth, real = _record(tmp_path_factory.mktemp("zarr"), "zarr")
    if not real:
        calls = pl.DataFrame(truth["opens"], schema=["pid", "thread_id", "path", "t"],
                             orient="row").with_columns(
            pl.col("thread_id").cast(pl.UInt64), op=pl.lit("read"), offset=pl.lit(0),
            length=pl.col("path").map_elements(os.path.getsize, return_dtype=pl.Int64),
            t0=pl.col("t") + 5_000, t1=pl.col("t") + 25_000)
        _write_logs(run, calls)
    return correlate_frames(load(run)), truth


def _inputs_of_workers(result, paths: pl.Expr) -> tuple[pl.DataFrame, int]:
    """task_files rows of the input files with their execution's key, and the bytes the
    worker processes read from those files."""
    tasks = result.tables["tasks"]
    seg = result.tables["segments"].filter(paths & pl.col("pid").is_in(tasks["pid"].unique()
                                                                      .implode()))
    files = result.tables["task_files"].filter(paths)
    return files, seg["length"].sum()


def test_read_parquet_pages_read_by_pyarrows_pool_go_to_the_execution_that_read_the_file(
        parquet_run):
    result, truth = parquet_run
    files, read = _inputs_of_workers(result, pl.col("path").is_in(truth["files"]))
    # every byte the workers read from the input files is attributed...
    assert read > sum(os.path.getsize(f) for f in truth["files"]) * 0.9
    assert files["bytes"].sum() == pytest.approx(read)
    # ...each file to one execution: the partition with that file's index
    owners = files.group_by("path").agg(pl.col("key").unique())
    assert owners.height == len(truth["files"])
    for path, keys in owners.iter_rows():
        assert len(keys) == 1 and truth["files"][_index(keys[0])[0]] == path
    # most of it through the helper-thread rules, labelled so
    by_method = result.summary["io"]["attributed_by_method"]
    helper = sum(v["bytes"] for m, v in by_method.items() if m.startswith("helper-"))
    assert helper > 0.5 * read
    assert set(files["attribution"]) <= {"exact-thread", "helper-context", "helper-file"}


def test_from_zarr_chunks_read_on_zarrs_thread_go_to_the_block_that_loaded_them(zarr_run):
    result, truth = zarr_run
    assert truth["sum"] == float(sum(range(512 * 512)))
    files, read = _inputs_of_workers(result, pl.col("path").str.contains("/a.zarr/c/"))
    assert read >= 64 * 64 * 64 * 8
    assert files["bytes"].sum() == pytest.approx(read)
    assert files.select("path").n_unique() == 64
    for key, path in files.select("key", "path").iter_rows():
        assert _index(key) == tuple(int(x) for x in path.rsplit("/c/", 1)[1].split("/"))
    assert set(files["attribution"]) == {"helper-context"}
    assert result.tables["tasks"].filter(pl.col("read_bytes") > 0)["attribution"].unique(
    ).to_list() == ["helper-context"]
