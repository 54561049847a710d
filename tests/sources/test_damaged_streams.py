"""Run format 3's streams damaged on disk (cut short, a batch header overwritten, the strings
lost): ``correlate`` never fails with a traceback; a stream is read up to the damage, the rest
is a reject naming it, and the rows before it are used."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.ipc  # noqa: F401 (pa.ipc)
import pytest

from correlate.cli import main
from correlate.schema.run import SNAPSHOT_SUFFIX, STREAM_SUFFIX
from correlate.sources.run_streams import framing
from testing.synthetic import write_run


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("streams") / "run"
    write_run(run, workers=2, threads=2, executions=120, segments=1500, profile="yappi",
              flush_interval_s=0.05, seed=4)
    return run


def _correlate(run: Path, out: Path, capsys) -> tuple[int, str, dict | None]:
    code = main([str(run), "-o", str(out), "--no-reports"])
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "internal error" not in text and "Traceback" not in text, text[-2000:]
    assert code in (0, 1), text[-2000:]
    summary = (json.loads((out / "summary.json").read_text()) if code == 0 else None)
    return code, text, summary


def _copy(pristine: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(pristine, tmp_path / "run"))


def test_a_stream_cut_in_its_last_batch_keeps_the_batches_before(pristine, tmp_path, capsys):
    run = _copy(pristine, tmp_path)
    _code, _text, whole = _correlate(run, tmp_path / "whole", capsys)
    stream = next(run.glob(f"procs/worker-*/task_executions{STREAM_SUFFIX}"))
    data = stream.read_bytes()
    start, end, rows = framing(data).batches[-1]
    assert len(data) - end in (0, 8) and end - start > 100  # (8: an end-of-stream marker)
    stream.write_bytes(data[:-100])
    code, text, summary = _correlate(run, tmp_path / "cut", capsys)
    assert code == 0, text
    torn = [r for r in summary["rejects"] if r["file"] == str(stream)]
    assert len(torn) == 1 and torn[0]["count"] == rows
    assert torn[0]["reason"].startswith(f"torn tail: {len(data) - 100 - start} byte(s)")
    assert summary["executions"] == whole["executions"] - rows > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_streams_whose_last_header_is_overwritten_stop_there(pristine, tmp_path, capsys, seed):
    """Garbage where a batch's header is (a write that was not the collectors'): the stream is
    read up to it, the rest is a reject naming the file."""
    rng = random.Random(seed)
    run = _copy(pristine, tmp_path)
    damaged = {}
    for stream in sorted(run.glob(f"procs/*/*{STREAM_SUFFIX}")):
        data = bytearray(stream.read_bytes())
        batches = framing(bytes(data)).batches
        if len(batches) < 2:
            continue
        start = batches[-1][0]
        data[start:start + 48] = bytes(rng.randrange(256) for _ in range(48))
        stream.write_bytes(bytes(data))
        damaged[str(stream)] = len(data) - start
    code, text, summary = _correlate(run, tmp_path / "out", capsys)
    assert code == 0, text
    rejected = {r["file"]: r["reason"] for r in summary["rejects"]
                if r["reason"].startswith("torn tail")}
    assert set(damaged) <= set(rejected)
    for path, size in damaged.items():
        assert rejected[path].startswith(f"torn tail: {size} byte(s)"), rejected[path]


def test_a_process_whose_strings_are_lost_is_counted_not_guessed(pristine, tmp_path, capsys):
    run = _copy(pristine, tmp_path)
    _code, _text, whole = _correlate(run, tmp_path / "whole", capsys)
    strings = next(run.glob(f"procs/worker-*/strings{STREAM_SUFFIX}"))
    strings.unlink()
    # the rows of each of that process's streams, counted from their framing, and of its
    # function-profile snapshot (an Arrow IPC file)
    rows = {f.name.removesuffix(STREAM_SUFFIX): sum(n for *_, n in framing(f.read_bytes()).batches)
            for f in strings.parent.glob(f"*{STREAM_SUFFIX}")}
    for f in strings.parent.glob(f"*{SNAPSHOT_SUFFIX}"):
        rows[f.name.removesuffix(SNAPSHOT_SUFFIX)] = pa.ipc.open_file(f).read_all().num_rows
    code, text, summary = _correlate(run, tmp_path / "out", capsys)
    assert code == 0, text
    lost = {r["file"]: r["count"] for r in summary["rejects"]
            if "string id has no text" in r["reason"]}
    # every row of that process's tables that name strings is counted, no more; the rows
    # themselves are kept, their text null (not guessed)
    assert "task_executions" in lost and "worker_transitions" in lost
    assert lost == {table: rows[table] for table in lost}
    assert summary["executions"] == whole["executions"]


def _recorded_worker(run: Path, executions: int) -> list[tuple[int, int]]:
    """A worker's folder written by the collectors' own sink (real clock, two flushes, closed
    cleanly); each execution's (start, stop) times."""
    import threading
    import time

    from collectors.sink import ProcessSink, proc_json, process_dir
    from correlate.schema import run as schema

    proc = process_dir(run, "worker", "h", 4321)
    sink = ProcessSink(proc, {t.name: t for t in (schema.EXECUTIONS_RAW,
                                                 schema.WORKER_TRANSITIONS)})
    proc_json(proc, role="worker", address="tcp://127.0.0.1:4321", name="w", nthreads=1,
              main_thread_id=threading.get_ident())
    times = []
    for seq in range(1, executions + 1):
        start = time.time_ns()
        sink.append("worker_transitions", (start, f"t-{seq}", "ready", "executing"))
        stop = time.time_ns() + 1000
        sink.append("worker_transitions", (stop, f"t-{seq}", "executing", "memory"))
        sink.append("task_executions", (seq, f"t-{seq}", threading.get_ident(),
                                        threading.get_native_id(), start, stop, 500, "ok"))
        times.append((start, stop))
        if seq == executions // 2:
            sink.flush()
    sink.close()
    return times


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_garbage_in_a_data_buffer_that_reads_as_an_impossible_time_is_rejected(
        tmp_path, capsys, seed):
    """A stream's framing intact, but bytes of its data overwritten: the times they decode to
    lie years from the run. Those rows are rejects with the reason, naming the stream; the
    others are used."""
    import struct

    from correlate.sources.time_span import REASON

    rng = random.Random(seed)
    run = tmp_path / "run"
    times = _recorded_worker(run, 10)
    proc = run / "procs" / "worker-h-4321"
    damaged = {}
    for table, value in (("task_executions", times[2][0]), ("task_executions", times[7][1]),
                         ("worker_transitions", times[4][0])):
        stream = proc / f"{table}{STREAM_SUFFIX}"
        data = stream.read_bytes()
        at = data.find(struct.pack("<q", value))
        assert at > framing(data).batches[0][0]  # (in a batch's body: each time is unique)
        garbage = bytes(rng.randrange(256) for _ in range(8))
        assert abs(struct.unpack("<q", garbage)[0] - value) > 10 * 86_400 * 10**9  # (years)
        stream.write_bytes(data[:at] + garbage + data[at + 8:])
        damaged[str(stream)] = damaged.get(str(stream), 0) + 1
    # (the framing does not see it: every batch is complete)
    assert all(not framing(Path(p).read_bytes()).torn_bytes for p in damaged)
    code, text, summary = _correlate(run, tmp_path / "out", capsys)
    assert code == 0, text
    impossible = {r["file"]: r["count"] for r in summary["rejects"] if r["reason"] == REASON}
    assert impossible == damaged
    assert summary["executions"] == 8


def test_a_strings_batch_of_invalid_text_is_rejected_and_every_other_id_finds_its_own(
        pristine, tmp_path, capsys):
    """A byte of a text in the first batch of a worker's strings made invalid UTF-8 (the
    batch decodes; only a full check finds it): that batch is a reject in both reads of the
    strings (the second read checks again when the first found a reject: one that did not
    would take the batch, and every text after it would shift to another id)."""
    from correlate.sources import run_folder

    run = _copy(pristine, tmp_path)
    whole = run_folder.load(run).collected()
    strings = next(run.glob(f"procs/worker-*/strings{STREAM_SUFFIX}"))
    data = bytearray(strings.read_bytes())
    start, end, _rows = framing(bytes(data)).batches[0]
    texts = pa.ipc.open_stream(pa.py_buffer(bytes(data))).read_all().column("text")
    victim = next(t for t in reversed(texts.to_pylist()) if t and len(t) > 8).encode()
    data[data.rindex(victim, start, end)] = 0xFF  # (a lone continuation byte: not UTF-8)
    strings.write_bytes(bytes(data))
    code, text, summary = _correlate(run, tmp_path / "out", capsys)
    assert code == 0, text
    assert any(r["file"] == str(strings) and "unreadable record batch" in r["reason"]
               for r in summary["rejects"]), summary["rejects"]
    damaged = run_folder.load(run).collected()
    keys = damaged.executions["key"]
    assert keys.null_count() > 0  # (the ids of the rejected batch: no text)
    assert set(keys.drop_nulls()) <= set(whole.executions["key"])
    assert keys.drop_nulls().len() > 0
    one = ["pid", "execution_seq"]
    kept = damaged.executions.filter(pl.col("key").is_not_null()).select(*one, "key")
    joined = kept.join(whole.executions.select(*one, "key"), on=one, suffix="_whole")
    assert joined.height == kept.height
    assert joined.filter(pl.col("key") != pl.col("key_whole")).is_empty()
