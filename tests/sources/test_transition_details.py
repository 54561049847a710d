"""Run format 3's scheduler transition details are joined back onto their transitions before
their text is decoded (``run_streams.details_joined``), with the rows a join on text gives: the
collector's string map is bounded and starts again past its limit, so a transition and its
details may name one key by two ids."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.ipc  # noqa: F401 (pa.ipc)
import pytest

from correlate.schema.run import STREAM_SUFFIX
from correlate.sources import run_folder
from testing.synthetic import write_run

DETAILS = "scheduler_transition_details"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("details") / "run"
    write_run(run, workers=2, threads=2, executions=120, segments=1500, seed=4)
    return run


def _read(path: Path) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(path.read_bytes())).read_all()


def _write(path: Path, table: pa.Table) -> None:
    with pa.ipc.new_stream(str(path), table.schema) as out:
        out.write_table(table)


def _scheduler_transitions(run: Path) -> tuple[pl.DataFrame, list[tuple]]:
    frames = run_folder.load(run)
    transitions = frames.transitions.collect() if isinstance(
        frames.transitions, pl.LazyFrame) else frames.transitions
    return (transitions.filter(pl.col("side") == "scheduler"),
            [tuple(r) for r in frames.rejects.iter_rows()])


def _restarted(run: Path, rows: list[int]) -> None:
    """The scheduler's details of ``rows`` name their key by a second id, as written after the
    string map started again: its text written again under a new id."""
    folder = next(run.glob("procs/scheduler-*"))
    strings = _read(folder / f"strings{STREAM_SUFFIX}")
    details = _read(folder / f"{DETAILS}{STREAM_SUFFIX}")
    texts = strings.column("text").to_pylist()
    keys = details.column("key").to_pylist()
    new = len(texts)
    again = []
    for i in rows:
        again.append(texts[keys[i]])
        keys[i] = new + len(again) - 1
    _write(folder / f"strings{STREAM_SUFFIX}", pa.concat_tables([strings, pa.table(
        {"id": pa.array(range(new, new + len(again)), pa.int32()),
         "text": pa.array(again, pa.string())})]))
    column = details.schema.get_field_index("key")
    _write(folder / f"{DETAILS}{STREAM_SUFFIX}",
           details.set_column(column, "key", pa.array(keys, pa.int32())))


def test_details_whose_key_has_a_second_id_still_join(pristine, tmp_path):
    before, rejects_before = _scheduler_transitions(pristine)
    assert before["worker"].is_not_null().sum() >= 100  # (the details are there to lose)
    run = Path(shutil.copytree(pristine, tmp_path / "run"))
    _restarted(run, [0, 1, 7, 50])
    after, rejects_after = _scheduler_transitions(run)
    assert after.equals(before)
    assert rejects_after == rejects_before
    assert not any(r[2].startswith("details of") for r in rejects_after)


def test_details_of_no_transition_are_counted_once(pristine, tmp_path):
    run = Path(shutil.copytree(pristine, tmp_path / "run"))
    _restarted(run, [3])
    folder = next(run.glob("procs/scheduler-*"))
    details = _read(folder / f"{DETAILS}{STREAM_SUFFIX}")
    times = details.column("local_time_ns").to_pylist()
    times[3] += 1  # (its transition is not at that time: an orphan, by id or by text)
    times[9] += 1
    column = details.schema.get_field_index("local_time_ns")
    _write(folder / f"{DETAILS}{STREAM_SUFFIX}",
           details.set_column(column, "local_time_ns", pa.array(times, pa.int64())))
    before, _rejects = _scheduler_transitions(pristine)
    after, rejects = _scheduler_transitions(run)
    orphans = [r for r in rejects if r[2].startswith("details of")]
    assert [r[3] for r in orphans] == [2]
    assert after["worker"].is_not_null().sum() == before["worker"].is_not_null().sum() - 2
