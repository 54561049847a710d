"""Run format 3 writes a constant number of files per process, at most 10, in every collector
mode: a real job flushing every 0.1 s for several seconds leaves the same files as a short one,
and correlate reads both. The heaviest mode is a function profile with every table a process
can write: tasks that open files, coroutine tasks, transfers, Darshan clock markers, spans and
annotations, data scattered from the client with its sender notes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from collectors.sink import closing_record
from collectors.worker_plugin import MARKER_BYTES
from correlate.schema.run import STREAM_SUFFIX
from correlate.sources.detect import load
from correlate.sources.run_streams import framing

pytestmark = pytest.mark.cluster

#: the no-op job of a given length (prints tasks=N)
JOB = Path(__file__).resolve().parents[2] / "testing" / "timed_job.py"
#: files a process may leave, whatever the job's length and the collectors' mode (issue 44)
MAX_FILES = 10
#: streams the short job may not have reached (their tables' first rows come later)
_LAZY_STREAMS = {f"{t}{STREAM_SUFFIX}" for t in (
    "worker_transitions", "task_file_opens", "task_executions", "worker_transfers",
    "worker_transfer_keys", "task_annotations", "scheduler_arrivals")}
#: (profile, the job's options, Darshan clock markers)
MODES = {"off": ("off", [], False),
         "heaviest": ("yappi", ["--open", "--coroutines", "--transfers", "--spans",
                                "--scatter"], True)}
#: every file a worker of the heaviest mode writes
HEAVIEST_WORKER = {"proc.json", *(f"{t}{STREAM_SUFFIX}" for t in (
    "strings", "task_executions", "worker_transitions", "worker_transfers",
    "worker_transfer_keys", "worker_clock_samples", "worker_func_stats", "task_file_opens")),
    "worker_func_stats.snapshot.arrow"}
#: every file the scheduler of the heaviest mode writes
HEAVIEST_SCHEDULER = {"proc.json", *(f"{t}{STREAM_SUFFIX}" for t in (
    "strings", "scheduler_transitions", "scheduler_transition_details", "task_startstops",
    "task_dependencies", "task_annotations", "cluster_events", "scheduler_arrivals")),
    "spans.snapshot.arrow"}


def _job(tmp_path: Path, name: str, seconds: float, mode: str) -> tuple[Path, int]:
    profile, options, markers = MODES[mode]
    run = tmp_path / name
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(run), "--darshan", "off",
           "--profile", profile, "--flush-interval", "0.1", "--", sys.executable, str(JOB),
           str(seconds), "--pause", "0.05", *options]
    # (without a Darshan runtime here, the markers are asked for as its environment does, and
    # a preload that names one makes the workers record the files tasks open, as with Darshan;
    # the loader says it cannot preload it and goes on)
    env = {**os.environ, "DASK_CORRELATE_MARKERS": "1" if markers else "0"}
    if markers:
        env["LD_PRELOAD"] = "/nonexistent/lib/libdarshan.so"
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=tmp_path,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return run, int(done.stdout.split("tasks=")[-1])


def _files(run: Path) -> dict[str, list[str]]:
    """role -> the sorted names of everything in its process folders (a stream is created
    with its table's first rows: a worker that ran no task of the short job has fewer)."""
    out: dict[str, set[str]] = {}
    for proc in sorted((run / "procs").iterdir()):
        names = {str(p.relative_to(proc)) for p in proc.rglob("*")}
        assert len(names) <= MAX_FILES, (proc.name, len(names), sorted(names))
        out.setdefault(proc.name.split("-")[0], set()).update(names)
    return {role: sorted(names) for role, names in out.items()}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_long_job_leaves_as_many_files_per_process_as_a_short_one(tmp_path, mode):
    short, n_short = _job(tmp_path, "short", 0.1, mode)
    long, n_long = _job(tmp_path, "long", 3.0, mode)
    assert n_long > n_short  # (how many more depends on the machine's load)
    # the long job flushed many times into the same streams (up to 30 flushes with rows; a
    # loaded host has the worker's flush thread wake fewer times: 13 in one suite run)
    batches = len(framing((next((long / "procs").glob("worker-*"))
                           / f"worker_transitions{STREAM_SUFFIX}").read_bytes()).batches)
    assert batches >= 5, batches
    files_short, files_long = _files(short), _files(long)
    # the long job's processes have no file the short job's have not (nothing per flush)
    assert files_short.keys() == files_long.keys()
    for role, names in files_long.items():
        assert set(names) <= set(files_short[role]) | _LAZY_STREAMS, (role, names)
    if mode == "heaviest":
        assert set(files_long["worker"]) == HEAVIEST_WORKER
        assert set(files_long["scheduler"]) == HEAVIEST_SCHEDULER
        _check_heaviest(long)
    for run, n in ((short, n_short), (long, n_long)):
        frames = load(run)
        assert frames.executions.height == n
        assert frames.rejects.is_empty(), frames.rejects
        assert frames.processes["closed_cleanly"].all()
        for proc in (run / "procs").iterdir():
            assert closing_record(proc) is not None and not (proc / "closed.json").exists()


def _check_heaviest(run: Path) -> None:
    """The rows written in other tables' files are all there: a Darshan clock marker on every
    clock sample (and in the marker file), active slices for every coroutine task, the client's
    notes of what it scattered, the spans' metrics."""
    frames = load(run)
    samples, markers = frames.table("clock_samples"), frames.table("clock_markers")
    for pid, n in samples.group_by("pid").len().iter_rows():
        mine = markers.filter(pl.col("pid") == pid).sort("offset")
        assert mine.height == n
        assert mine["offset"].to_list() == [i * len(MARKER_BYTES) for i in range(n)]
        (path,) = mine["path"].unique().to_list()
        assert Path(path).stat().st_size == n * len(MARKER_BYTES)
    coroutines = frames.executions.filter(
        pl.col("key").cast(pl.String).str.starts_with("inc_awaiting"))
    sliced = frames.table("execution_slices").select("pid", "execution_seq").unique()
    assert coroutines.height and coroutines.join(sliced, on=["pid", "execution_seq"],
                                                 how="anti").is_empty()
    assert not frames.file_opens.is_empty() and not frames.transfers.is_empty()
    notes = frames.table("senders").filter(pl.col("key").is_not_null())
    assert notes.height == frames.table("data_arrivals").height > 0
    assert frames.table("span_tree").filter(pl.col("span") == "batch").height
    assert not frames.table("span_dask_metrics").is_empty()
