"""Which recorded executions are Dask's own (``correlate.timeline.task_threads.split``)."""

from __future__ import annotations

import polars as pl

from correlate.timeline import task_threads


def _records(rows: list[tuple[int, int | None, int]]) -> pl.DataFrame:
    """(pid, execution_seq, local_start_ns) records of one host."""
    return pl.DataFrame(rows, schema={"pid": pl.Int64, "execution_seq": pl.Int64,
                                      "local_start_ns": pl.Int64}, orient="row").with_columns(
        host=pl.lit("h"), thread_id=pl.int_range(pl.len()).cast(pl.UInt64))


def test_the_first_record_of_a_number_is_the_execution_the_others_task_code() -> None:
    ex = _records([(1, 0, 50), (1, 0, 10), (1, 1, 20), (2, 0, 30), (1, 0, 70),
                   (1, None, 5), (1, None, 6)])
    own, other = task_threads.split(ex)
    assert sorted(own.select("pid", "execution_seq", "local_start_ns").rows(),
                  key=str) == sorted([(1, 0, 10), (1, 1, 20), (2, 0, 30), (1, None, 5),
                                      (1, None, 6)], key=str)
    assert sorted(other.get_column("local_start_ns").to_list()) == [50, 70]


def test_records_of_distinct_numbers_are_all_executions_and_not_copied() -> None:
    """The usual run (one record per number, records without one): the table as it was,
    not a filtered copy of every column."""
    ex = _records([(1, 0, 50), (1, 1, 10), (2, 0, 30), (1, None, 5), (1, None, 6)])
    own, other = task_threads.split(ex)
    assert own is ex and other.is_empty() and other.schema == ex.schema
