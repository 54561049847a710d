"""Profile rows on disk: rows of executions that have ended are written once, as parts (a
snapshot round after they ended); the snapshot holds running executions and work outside
tasks and is replaced at each flush; parts + snapshot never hold an entry twice, and at the end
they hold every entry once."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import polars as pl

from collectors.profiling import TaskTags
from collectors.sink import ProcessSink, closing_record
from collectors.worker_plugin import CorrelateWorkerPlugin
from correlate.schema import run as schema
from correlate.schema.run import SNAPSHOT_SUFFIX
from testing.raw_parts import read_proc

SNAPSHOT = f"{schema.FUNC_STATS_RAW.name}{SNAPSHOT_SUFFIX}"


class FakeProfiler:
    """rows(seqs): one row per (execution, function) seen so far, as the profilers give them,
    for the executions asked for; remembers what each snapshot asked for."""

    def __init__(self) -> None:
        self.seen: dict[tuple[int, str], int] = {}
        self.asked: list[set[int]] = []

    def call(self, seq: int, fn: str) -> None:
        self.seen[(seq, fn)] = self.seen.get((seq, fn), 0) + 1

    def rows(self, seqs=None) -> list[tuple]:
        self.asked.append(set(seqs))
        return [("yappi", "wall", 1, seq, "m", fn, "/m.py", 1, n, 0.5 * n, 0.25 * n)
                for (seq, fn), n in self.seen.items() if seq in seqs]

    def forget(self, seqs) -> None:
        pass

    def stop(self) -> None:
        pass


def plugin(tmp_path: Path) -> CorrelateWorkerPlugin:
    p = CorrelateWorkerPlugin.__new__(CorrelateWorkerPlugin)
    p.sink = ProcessSink(tmp_path, {t.name: t for t in schema.RUN_TABLES})
    p.sink.before_flush.append(p._flush_rows)
    p.transitions = deque()
    p.executions = deque()
    p.profiler = FakeProfiler()
    p.tags = TaskTags()
    p.profile_rows = None
    p._next_snapshot = 0.0
    p.profiles_final = deque()
    p._final_before = set()
    p.profile_done, p.snapshot_written = [], []
    return p


def on_disk(tmp_path: Path) -> pl.DataFrame:
    table = schema.FUNC_STATS_RAW
    return read_proc(tmp_path, table)


def test_ended_executions_are_written_once_as_parts(tmp_path):
    p = plugin(tmp_path)
    prof = p.profiler
    prof.call(0, "loop")           # work outside tasks
    prof.call(1, "a")
    prof.call(2, "a")
    p.profiles_final.append(1)     # execution 1 ended; 2 still runs (on thread 11)
    p.tags.current[11] = 2
    p._snapshot_profile()
    p.sink.flush()
    df = on_disk(tmp_path)
    # first round: nothing was final at the previous snapshot; 1 ended since: waits a round
    assert set(df["file"]) == {SNAPSHOT}
    assert sorted(df["execution_seq"]) == [0, 2]
    prof.call(2, "b")
    prof.call(3, "a")
    p.profiles_final.append(2)     # 2 ended, 3 runs on thread 11
    p.tags.current[11] = 3
    p._next_snapshot = 0.0
    p._snapshot_profile()
    p.sink.flush()
    df = on_disk(tmp_path)
    parts = df.filter(pl.col("file") != SNAPSHOT)
    assert sorted(parts["execution_seq"]) == [1]
    assert sorted(df["execution_seq"]) == [0, 1, 3]  # 2 ended: waits a round, never twice
    prof.call(0, "loop")
    p._next_snapshot = 0.0
    p._snapshot_profile()
    p.sink.flush()
    # each snapshot read work outside tasks, the executions running and those final now:
    # never an execution written before
    assert prof.asked == [{0, 2}, {0, 1, 3}, {0, 2, 3}]
    df = on_disk(tmp_path)
    assert sorted(df.filter(pl.col("file") != SNAPSHOT)["execution_seq"]) == [1, 2, 2]
    assert sorted(df["execution_seq"]) == [0, 1, 2, 2, 3]
    assert df.filter(pl.col("execution_seq") == 0)["ncall"].to_list() == [2]  # latest counts
    p.profiles_final.append(3)
    del p.tags.current[11]
    p._snapshot_profile(end=True)  # the end: every ended execution final
    p.sink.close()
    df = on_disk(tmp_path)
    assert sorted(df.filter(pl.col("file") == SNAPSHOT)["execution_seq"]) == [0]
    assert sorted(df["execution_seq"]) == [0, 1, 2, 2, 3]
    closed = closing_record(tmp_path)
    assert closed is not None
    assert closed["rows"]["worker_func_stats"] == 5


def test_rows_taken_but_not_flushed_survive_the_end(tmp_path):
    p = plugin(tmp_path)
    p.profiler.call(1, "a")
    p.profiles_final.append(1)
    p._snapshot_profile()
    p.sink.flush()
    p.profiler.call(2, "a")
    p.profiles_final.append(2)
    p._next_snapshot = 0.0
    p._snapshot_profile()          # execution 1's rows taken as parts, not flushed yet
    p._snapshot_profile(end=True)
    p.sink.close()
    df = on_disk(tmp_path)
    assert sorted(df["execution_seq"]) == [1, 2]


def test_without_a_profiler_ended_executions_are_not_kept(tmp_path):
    """``--profile off``: nothing reads the ended executions, so the worker must not keep one
    entry per task for the whole job."""
    p = plugin(tmp_path)
    p.profiler = None
    p.profiles_final.extend(range(1000))
    p._snapshot_profile()
    assert not p.profiles_final
