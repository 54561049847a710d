"""A table written in several parts reads as the one table, in either kind of part (Arrow IPC,
and the Parquet of run format 1); an unreadable part is rejected by name and the other parts
are still used."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from collectors.sink import arrow_part
from correlate.schema import TABLES, Column
from correlate.sources import run_folder
from correlate.sources.detect import load
from testing.raw_parts import to_current_parts

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "run-v1"


def write_part(df: pl.DataFrame, path: Path) -> None:
    if path.name.endswith(".arrow"):
        table = TABLES[path.parent.name]
        path.write_bytes(arrow_part([table.column(c) for c in df.columns],
                                    [s.to_list() for s in df.get_columns()]))
    else:
        df.write_parquet(path)


def split_parts(run: Path, suffix: str = ".parquet") -> Path:
    """Rewrite one worker's task_executions as two parts; return that table's folder."""
    folder = next((run / "procs").glob("worker-*")) / "task_executions"
    (only,) = folder.glob("*.parquet")
    df = pl.read_parquet(only)
    only.unlink()
    half = df.height // 2
    write_part(df.head(half), folder / f"part-000001{suffix}")
    write_part(df.slice(half).drop("status"), folder / f"part-000002{suffix}")  # older part
    return folder


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_parts_read_as_one_table(tmp_path, suffix):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    split_parts(run, suffix)
    whole, parts = load(SAMPLE), load(run)
    missing = parts.executions.filter(pl.col("status").is_null()).height
    assert missing > 0  # the second part's rows came with a null status
    assert parts.executions.drop("status").equals(whole.executions.drop("status"))
    assert parts.rejects.is_empty()


@pytest.mark.parametrize("suffix,damage", [
    (".parquet", b"PAR1 not really"), (".arrow", b"ARROW1 not really"),
    (".arrow", "cut"),  # a file cut short (its footer lost)
    (".arrow", "mistyped")])  # text where the table declares integers
def test_an_unreadable_part_is_rejected_and_the_others_are_used(tmp_path, suffix, damage):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    folder = split_parts(run, suffix)
    bad = folder / f"part-000003{suffix}"
    if damage == "cut":
        bad.write_bytes((folder / f"part-000001{suffix}").read_bytes()[:60])
    elif damage == "mistyped":
        bad.write_bytes(arrow_part([Column("execution_seq", "String", ""),
                                    TABLES["task_executions"].column("key")], [["one"], ["k"]]))
    else:
        bad.write_bytes(damage)
    whole, parts = load(SAMPLE), load(run)
    assert parts.executions.height == whole.executions.height
    (reject,) = parts.rejects.iter_rows(named=True)
    assert reject["file"].endswith(bad.name) and reject["count"] == 1
    assert ("unreadable part" in reject["reason"] if damage != "mistyped"
            else reject["reason"] == "column 'execution_seq' is String, expected Int64")


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_rows_of_impossible_times_in_parts_are_rejected(tmp_path, suffix):
    """Formats 1 and 2: a part whose data holds times no process of the run can have
    recorded (a damaged data page that still decodes; 1970, and 2180)."""
    from correlate.sources.time_span import REASON

    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    folder = split_parts(run, suffix)
    part = folder / f"part-000001{suffix}"
    df = (pl.read_parquet(part) if suffix == ".parquet" else pl.read_ipc(part))
    part.unlink()
    write_part(df.with_columns(local_start_ns=pl.when(pl.int_range(pl.len()) == 0).then(0)
                               .otherwise(pl.col("local_start_ns")),
                               local_stop_ns=pl.when(pl.int_range(pl.len()) == 1)
                               .then(6_600_000_000 * 10**9).otherwise(pl.col("local_stop_ns"))),
               part)
    whole, parts = load(SAMPLE), load(run)
    assert parts.executions.height == whole.executions.height - 2
    assert parts.rejects.rows() == [("run-folder", str(folder), REASON, 2)]


def test_lazy_tables_read_the_same_as_loaded_up_front(monkeypatch):
    lazy, eager = load(SAMPLE, lazy=True), load(SAMPLE)
    for name in ("transitions", "func_stats"):
        assert isinstance(getattr(lazy, name), pl.LazyFrame), name
        assert isinstance(getattr(eager, name), pl.DataFrame), name
    # (a small run's DXT segments are decoded with the logs' other records; a bigger run's
    # are left in the logs)
    assert isinstance(lazy.io_segments, pl.DataFrame)
    monkeypatch.setattr(run_folder, "KEEP_SEGMENTS", lazy.io_segments.height - 1)
    left = load(SAMPLE, lazy=True)
    assert isinstance(left.io_segments, pl.LazyFrame)
    for read in (lazy.collected(), left.collected()):
        for name in read.table_names():
            assert getattr(read, name).equals(getattr(eager, name)), name
        assert read.rejects.is_empty()
    assert eager.transitions.height > 0 and eager.io_segments.height > 0


def test_an_unreadable_part_of_a_lazy_table_is_rejected_when_loading(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    folder = next((run / "procs").glob("worker-*")) / "worker_transitions"
    (folder / "part-999999.parquet").write_bytes(b"PAR1 not really")
    whole, frames = load(SAMPLE), load(run, lazy=True)
    (reject,) = frames.rejects.iter_rows(named=True)  # known before anything is read
    assert reject["file"].endswith("part-999999.parquet") and reject["count"] == 1
    assert "unreadable part" in reject["reason"]
    assert frames.table("transitions").equals(whole.transitions)


def test_names_come_from_any_transition_of_the_key(tmp_path):
    """The scheduler logs a key's prefix and group only while the task is alive at a flush:
    a key named on its first (``released``) transition, one named only on a later one, and
    one never named (its prefix is left to ``key_split`` later)."""
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    (part,) = (next((run / "procs").glob("scheduler-*")) / "scheduler_transitions").glob("*")
    tr = pl.read_parquet(part)
    executed = load(SAMPLE).executions.get_column("key").unique().sort().to_list()
    first, later, never = executed[:3]
    released = pl.col("start") == "released"
    named = (pl.col("key") == first) | ((pl.col("key") == later) & ~released)
    tr.with_columns(prefix=pl.when(named).then(pl.col("key") + "-prefix"),
                    group=pl.when(named).then(pl.col("key") + "-group")).write_parquet(part)
    assert tr.filter((pl.col("key") == later) & released).height  # named only after it
    names = {k: (p, g) for k, p, g in load(run).executions.select("key", "prefix", "group")
             .unique().iter_rows()}
    assert names[first] == (f"{first}-prefix", f"{first}-group")
    assert names[later] == (f"{later}-prefix", f"{later}-group")
    assert names[never] == (None, None)


def test_the_sample_rewritten_in_current_parts_loads_as_recorded(tmp_path):
    """The same rows in the collectors' current parts load to the same frames as from
    Parquet."""
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    assert len(to_current_parts(run)) > 10
    want, got = load(SAMPLE), load(run)
    assert want.table_names() == got.table_names()
    for name in want.table_names():
        a, b = getattr(want, name), getattr(got, name)
        if name == "processes":
            a, b = a.sort("host", "pid"), b.sort("host", "pid")
        if name in ("io_segments", "io_file_counters", "darshan_logs"):  # paths of the copy
            a, b = (f.with_columns(pl.col(pl.Categorical).cast(pl.String).str.replace_all(
                str(folder), "RUN", literal=True)) for f, folder in ((a, SAMPLE), (b, run)))
        assert b.equals(a), name
    assert got.rejects.is_empty() and got.executions.height > 0
