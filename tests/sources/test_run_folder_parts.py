"""A table written in several parts reads as the one table; an unreadable part is rejected by
name and the other parts are still used."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl

from correlate.sources.detect import load

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "run-v1"


def split_parts(run: Path) -> Path:
    """Rewrite one worker's task_executions as two parts; return that table's folder."""
    folder = next((run / "procs").glob("worker-*")) / "task_executions"
    (only,) = folder.glob("*.parquet")
    df = pl.read_parquet(only)
    only.unlink()
    half = df.height // 2
    df.head(half).write_parquet(folder / "part-000001.parquet")
    df.slice(half).drop("status").write_parquet(folder / "part-000002.parquet")  # older part
    return folder


def test_parts_read_as_one_table(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    split_parts(run)
    whole, parts = load(SAMPLE), load(run)
    missing = parts.executions.filter(pl.col("status").is_null()).height
    assert missing > 0  # the second part's rows came with a null status
    assert parts.executions.drop("status").equals(whole.executions.drop("status"))
    assert parts.rejects.is_empty()


def test_an_unreadable_part_is_rejected_and_the_others_are_used(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    folder = split_parts(run)
    (folder / "part-000003.parquet").write_bytes(b"PAR1 not really")
    whole, parts = load(SAMPLE), load(run)
    assert parts.executions.height == whole.executions.height
    (reject,) = parts.rejects.iter_rows(named=True)
    assert reject["file"].endswith("part-000003.parquet") and reject["count"] == 1
    assert "unreadable part" in reject["reason"]


def test_lazy_tables_read_the_same_as_loaded_up_front():
    lazy, eager = load(SAMPLE, lazy=True), load(SAMPLE)
    for name in ("transitions", "func_stats", "io_segments"):
        assert isinstance(getattr(lazy, name), pl.LazyFrame), name
        assert isinstance(getattr(eager, name), pl.DataFrame), name
    read = lazy.collected()
    for name in read.table_names():
        assert getattr(read, name).equals(getattr(eager, name)), name
    assert eager.transitions.height > 0 and eager.io_segments.height > 0
    assert read.rejects.is_empty()


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
