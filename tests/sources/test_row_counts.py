"""A run folder's rows counted without decoding them (``correlate.sources.row_counts``): the
counts are the rows the loader then produces, in run format 3 (streams and snapshots), 2
(Arrow IPC parts) and 1 (the recorded Parquet sample, real Darshan logs); a damaged stream,
part or log counts what is readable and never raises."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from correlate.schema.run import SNAPSHOT_SUFFIX, STREAM_SUFFIX
from correlate.sources import row_counts, run_streams
from correlate.sources.detect import load
from testing.synthetic import write_run

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "run-v1"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("counts")
    out = {"format 1 (recorded)": SAMPLE}
    for fmt in (3, 2):
        out[f"format {fmt}"] = base / f"run{fmt}"
        write_run(out[f"format {fmt}"], workers=2, threads=2, executions=300, segments=3000,
                  seed=7, flush_interval_s=0.05, run_format=fmt)
    return out


def _loaded(run: Path) -> tuple[dict[str, int], dict[tuple[str | None, int], int]]:
    frames = load(run, lazy=True)
    rows = {"executions": frames.executions.height,
            "transitions": frames.transitions.select(pl.len()).collect().item(),
            "profile rows": frames.func_stats.select(pl.len()).collect().item()}
    logs = frames.darshan_logs.filter(pl.col("segment_count") > 0)
    segments = {(h, p): n for h, p, n in logs.group_by("host", "pid")
                .agg(pl.col("segment_count").sum()).iter_rows()}
    return rows, segments


@pytest.mark.parametrize("which", ["format 3", "format 2", "format 1 (recorded)"])
def test_the_counts_are_the_rows_the_loader_produces(runs: dict[str, Path], which: str) -> None:
    run = runs[which]
    counted = row_counts.count(run)
    rows, segments = _loaded(run)
    assert counted.rows == rows
    assert all(n > 0 for n in rows.values())
    assert counted.segments == segments and sum(segments.values()) > 0
    # format 3's files are held in memory by its load; the parts of 1 and 2 are scanned
    assert (counted.stream_bytes > 0) == (which == "format 3")


def test_streams_are_counted_from_their_message_headers(runs: dict[str, Path],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """No batch is decoded: the readers of stream data fail if called."""
    def decoded(*_args: object, **_kw: object) -> None:
        raise AssertionError("a stream was decoded")

    for name in ("read_many", "read_stream", "decode"):
        monkeypatch.setattr(run_streams, name, decoded)
    monkeypatch.setattr(pl, "read_ipc_stream", decoded)
    counted = row_counts.count(runs["format 3"])
    assert counted.rows["transitions"] > 0


def _copy(run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run, tmp_path / "run"))


def test_a_damaged_stream_counts_its_complete_batches_as_the_loader_reads_them(
        runs: dict[str, Path], tmp_path: Path) -> None:
    run = _copy(runs["format 3"], tmp_path)
    workers = sorted((run / "procs").glob("worker-*"))
    cut = workers[0] / f"task_executions{STREAM_SUFFIX}"
    data = cut.read_bytes()
    batches = run_streams.framing(data).batches
    assert len(batches) > 2
    cut.write_bytes(data[:batches[-1][0] + 20])  # the last batch's header cut short
    garbled = workers[1] / f"worker_transitions{STREAM_SUFFIX}"
    data = bytearray(garbled.read_bytes())
    second = run_streams.framing(bytes(data)).batches[1][0]
    data[second:second + 8] = b"\x00" * 8  # the second batch's framing overwritten
    garbled.write_bytes(bytes(data))
    (workers[1] / f"worker_func_stats{SNAPSHOT_SUFFIX}").write_bytes(b"not an arrow file")
    (workers[0] / f"strings{STREAM_SUFFIX}").write_bytes(b"")
    before = row_counts.count(runs["format 3"])
    counted = row_counts.count(run)
    assert 0 < counted.rows["executions"] < before.rows["executions"]
    assert 0 < counted.rows["transitions"] < before.rows["transitions"]
    assert 0 < counted.rows["profile rows"] < before.rows["profile rows"]
    rows, _segments = _loaded(run)
    assert counted.rows["executions"] == rows["executions"]
    assert counted.rows["transitions"] == rows["transitions"]


def test_damaged_parts_and_logs_count_nothing_and_raise_nothing(runs: dict[str, Path],
                                                                tmp_path: Path) -> None:
    run = _copy(runs["format 2"], tmp_path)
    parts = sorted(run.glob("procs/worker-*/task_executions/part-*"))
    parts[0].write_bytes(parts[0].read_bytes()[:40])
    logs = sorted((run / "darshan").glob("*.darshan"), key=lambda p: p.stat().st_size)
    logs[-1].write_bytes(logs[-1].read_bytes()[:200])  # the largest log cut in its header
    before = row_counts.count(runs["format 2"])
    counted = row_counts.count(run)
    assert counted.rows["executions"] < before.rows["executions"]
    assert sum(counted.segments.values()) < sum(before.segments.values())
    assert counted.rows["transitions"] == before.rows["transitions"]
