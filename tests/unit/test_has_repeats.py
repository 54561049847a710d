"""A value in more than one row, found without a hash table where the values are sorted (the
per-execution tables of a big run are in execution order); and the attribution's check that
an execution has rows from several processes' partitions (a P2P barrier's), which uses it."""

from __future__ import annotations

import polars as pl
import pytest

from correlate.attribution.exact import task_io_totals
from correlate.attribution.untraced import across_processes
from correlate.frames.sorting import has_repeats
from correlate.schema import TABLES, conform


@pytest.mark.parametrize("values, repeats", [
    ([0, 1, 2, 3], False), ([0, 1, 1, 2], True),  # sorted: neighbours compared
    ([2, 0, 1], False), ([2, 0, 2], True),  # not sorted
    ([None, 1, 2], False), ([None, 1, 1], True), ([None, None], True),  # with nulls
    ([], False), ([7], False)])
def test_a_repeated_value_is_found_sorted_or_not(values, repeats):
    assert has_repeats(pl.Series(values, dtype=pl.Int64)) is repeats


def _files(rows: list[tuple[int, int, str, float]]) -> pl.DataFrame:
    """(execution_id, pid, path, bytes read) per row of task_files."""
    df = pl.DataFrame(rows, orient="row", schema=["execution_id", "pid", "path", "bytes"])
    return conform(df.with_columns(key=pl.format("k{}", "execution_id"), op=pl.lit("read"),
                                   attribution=pl.lit("exact-thread"), ops=pl.lit(1.0),
                                   io_time_s=pl.lit(0.5)), TABLES["task_files"])


def test_an_execution_with_rows_of_two_partitions_gets_one_row_of_totals():
    # each process's partition gave its totals; execution 1 read on both processes
    per_partition = [_files([(0, 1, "/a", 10.0), (1, 1, "/b", 20.0)]),
                     _files([(1, 2, "/c", 5.0), (2, 2, "/d", 1.0)])]
    files = pl.concat(per_partition)
    totals = pl.concat([task_io_totals(f) for f in per_partition])
    assert totals["execution_id"].to_list() == [0, 1, 1, 2]  # sorted, one repeated
    _, got = across_processes(files.lazy(), totals)
    assert got.select("execution_id", "read_bytes", "read_ops").rows() == [
        (0, 10.0, 1.0), (1, 25.0, 2.0), (2, 1.0, 1.0)]
    # none repeated: the partitions' totals as they are
    alone = totals.filter(pl.col("execution_id") != 1)
    assert across_processes(files.lazy(), alone)[1] is alone
