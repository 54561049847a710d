"""Run format 3's streams under the faults they are built for: a writer killed with SIGKILL at
random instants (most of them inside a flush), a stream cut at every byte, and a write that
fails half-way where even cutting it back fails. Every batch completed before the fault reads
back, the reader stops at the torn tail and counts it, and nothing raises."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from collectors import sink as sink_module
from collectors.sink import ProcessSink, StreamFile
from correlate.schema import run as schema
from correlate.sources import run_streams
from correlate.sources.detect import load
from testing.raw_parts import read_proc

ROWS_PER_FLUSH = 5_000
#: the writer's first row's time: the n-th row is T0 + n ns (times near the run's own, as the
#: collectors record them: correlate rejects rows of impossible times)
T0 = time.time_ns()

#: a worker process writing worker_transitions through the real sink as fast as it can: each
#: flush appends ROWS_PER_FLUSH rows (keys and state pairs as string ids); after each flush
#: returns it prints how many rows are on disk
WRITER = f"""
import sys, time
from pathlib import Path
from collectors.sink import ProcessSink, proc_json
from correlate.schema import run as schema
proc = Path(sys.argv[1])
sink = ProcessSink(proc, {{"worker_transitions": schema.WORKER_TRANSITIONS}},
                   max_rows=10_000_000)
proc_json(proc, role="worker", address="tcp://127.0.0.1:1", name="w", nthreads=2)
n = 0
print("ready", flush=True)
while True:
    for _ in range({ROWS_PER_FLUSH}):
        sink.append("worker_transitions", ({T0} + n, f"inc-{{n // 7}}", "executing",
                                           ("memory", "released")[n % 2]))
        n += 1
    print("flushing", flush=True)
    sink.flush()
    print("written", sink.written["worker_transitions"], flush=True)
"""


def _run_writer(proc: Path, delay: float) -> tuple[int, bool]:
    """Start the writer, SIGKILL it ``delay`` s after it is ready; (rows it said were on disk,
    whether the kill came while a flush was under way)."""
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(proc)], stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate(timeout=30)
    lines = out.split()
    written = [int(v) for k, v in zip(lines, lines[1:], strict=False) if k == "written"]
    last = next((w for w in reversed(lines) if w in ("flushing", "written")), None)
    return (written[-1] if written else 0), last == "flushing"


def test_writers_killed_at_random_instants_leave_every_completed_flush_readable(tmp_path):
    rng = random.Random(44)
    mid_flush = torn = 0
    for i in range(30):
        run = tmp_path / f"run{i}"
        proc = run / "procs" / f"worker-h-{i}"
        proc.mkdir(parents=True)
        promised, during = _run_writer(proc, rng.uniform(0.05, 0.6))
        mid_flush += during
        # the stream itself: complete batches only, the kill's torn tail counted
        got = read_proc(proc, schema.WORKER_TRANSITIONS)
        n = got.height
        assert n >= promised and n % ROWS_PER_FLUSH == 0, (i, n, promised)
        assert got["local_time_ns"].to_list() == list(range(T0, T0 + n))
        assert got.select((pl.col("key") == pl.format("inc-{}", (pl.col("local_time_ns") - T0)
                                                      // 7))
                          .all()).item()
        assert got["finish"].to_list() == [("memory", "released")[k % 2] for k in range(n)]
        torn += bool(_torn(proc / "worker_transitions.arrows"))
        # the whole reader: no exception, the tail a reject naming the stream, the rows used
        frames = load(run)
        assert frames.table("transitions").height == n
        tails = frames.rejects.filter(pl.col("reason").str.starts_with("torn tail"))
        # a kill inside the strings' append tears that stream instead (or as well)
        per_file = Counter(Path(f).name for f in tails["file"])
        # (a kill before the first flush leaves no stream: nothing to read, nothing torn)
        assert per_file == Counter({name: _torn(proc / name) for name in (
            "worker_transitions.arrows", "strings.arrows")}) - Counter(), (i, per_file)
        assert any("did not close cleanly" in w for w in frames.warnings)
    # most kills land inside a flush (it takes most of the writer's time)
    assert mid_flush >= 10, mid_flush
    print(f"{mid_flush} of 30 kills during a flush, {torn} torn tails")


def _torn(path: Path) -> int:
    """Torn tails the stream reader finds in ``path`` (0: no such file)."""
    if not path.exists():
        return 0
    return sum(r[0].startswith("torn tail") for r in run_streams.read_stream(path).rejects)


def _stream_of_batches(tmp_path: Path, batches: int) -> tuple[Path, list[int]]:
    """A stream of ``batches`` batches of 10 rows; the ends of its complete messages (the
    schema's first)."""
    path = tmp_path / "t.arrows"
    stream = StreamFile(path, ["n", "text"], ["int64", "utf8"])
    ends = [len(stream.head)]
    for b in range(batches):
        stream.append([list(range(b * 10, b * 10 + 10)), [f"x{b}"] * 9 + [None]])
        ends.append(stream.length)
    return path, ends


def test_a_stream_cut_at_any_byte_reads_its_complete_batches_and_counts_the_rest(tmp_path):
    path, ends = _stream_of_batches(tmp_path, 4)
    data = path.read_bytes()
    cut = tmp_path / "cut.arrows"
    for at in range(len(data) + 1):
        cut.write_bytes(data[:at])
        got = run_streams.read_stream(cut)
        whole = sum(e <= at for e in ends[1:])
        rows = 0 if got.frame is None else got.frame.height
        assert rows == 10 * whole, at
        good = max([e for e in ends if e <= at], default=0)
        if at > good:
            assert len(got.rejects) == 1, (at, got.rejects)
            assert got.rejects[0][0].startswith(f"torn tail: {at - good} byte(s)"), at
        else:
            assert got.rejects == []


def test_a_write_that_fails_half_way_is_overwritten_by_the_next(tmp_path, monkeypatch):
    """A write cut short whose cut-back fails too (``ftruncate`` refused): its bytes stay,
    and the next batch is written over them, so the stream reads whole."""
    path, _ends = _stream_of_batches(tmp_path, 2)
    stream = StreamFile(path, ["n", "text"], ["int64", "utf8"])
    stream.length = path.stat().st_size
    real = os.pwrite

    def half(fd, data, at):  # noqa: ANN001, ANN202
        real(fd, bytes(data[:len(data) // 2]), at)
        raise OSError(28, "No space left on device")

    def refuse(fd, n):  # noqa: ANN001, ANN202
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "pwrite", half)
    monkeypatch.setattr(os, "ftruncate", refuse)
    big = [list(range(1000)), ["y" * 50] * 1000]
    with pytest.raises(OSError):
        stream.append(big)
    monkeypatch.undo()
    torn = run_streams.read_stream(path)
    assert torn.frame.height == 20 and len(torn.rejects) == 1
    stream.append([[7], ["z"]])  # shorter than what the failed write left
    got = run_streams.read_stream(path)
    assert got.frame["n"].to_list() == [*range(20), 7]
    assert len(got.rejects) == 1 and "torn tail" in got.rejects[0][0]  # the rest of it


def test_a_failed_sink_write_keeps_its_rows_and_their_strings(tmp_path, monkeypatch):
    """A flush whose strings append fails writes nothing that refers to them; the next one
    writes the strings first, then the rows, each once."""
    sink = ProcessSink(tmp_path, {"worker_transitions": schema.WORKER_TRANSITIONS})
    sink.append("worker_transitions", (1, "a", "x", "y"))
    sink.flush()
    calls = {"n": 0}
    real = sink_module.StreamFile.append

    def fail_strings(self, columns):  # noqa: ANN001, ANN202
        if self.path.name == "strings.arrows" and not calls["n"]:
            calls["n"] += 1
            raise OSError(28, "No space left on device")
        return real(self, columns)

    monkeypatch.setattr(sink_module.StreamFile, "append", fail_strings)
    sink.append("worker_transitions", (2, "b", "x", "z"))
    sink.flush()
    assert sink.write_errors == {"no space": 1}
    assert read_proc(tmp_path, schema.WORKER_TRANSITIONS).height == 1
    sink.close()
    got = read_proc(tmp_path, schema.WORKER_TRANSITIONS).sort("local_time_ns")
    assert got.select("key", "start", "finish").rows() == [("a", "x", "y"), ("b", "x", "z")]
    strings = run_streams.read_stream(tmp_path / "strings.arrows").frame
    assert strings["id"].to_list() == list(range(strings.height))
    assert strings["text"].is_unique().all()
