"""An attribution partition's executions (or markers, or files opened) are its processes' rows,
one process after another in the partition's order, each process's rows in their order
(``driver._per_group``), whether the processes' rows come contiguous or interleaved."""

from __future__ import annotations

import polars as pl
import pytest

from correlate.attribution.driver import _per_group


def _expected(df: pl.DataFrame, groups: list[list[tuple[str, int]]]) -> dict[int, list[int]]:
    out = {}
    for g, group in enumerate(groups):
        rows = [i for host, pid in group for i, h, p in df.select("i", "host", "pid").rows()
                if (h, p) == (host, pid)]
        if rows:
            out[g] = rows
    return out


@pytest.mark.parametrize("hosts,pids", [
    (["a", "a", "a", "b", "b", "c"], [1, 1, 2, 1, 1, 3]),  # each process's rows contiguous
    (["a", "b", "a", "a", "b", "c"], [1, 1, 2, 1, 1, 3])],  # interleaved
    ids=["contiguous", "interleaved"])
def test_each_group_holds_its_processes_rows_in_its_order(hosts: list[str],
                                                          pids: list[int]) -> None:
    df = pl.DataFrame({"host": hosts, "pid": pids, "i": range(len(hosts))})
    # (b's before a's in group 0; ("z", 9) has no rows; c's rows are in no group)
    groups = [[("b", 1), ("a", 1)], [("z", 9)], [("a", 2)]]
    got = {g: part["i"].to_list() for g, part in _per_group(df, groups).items()}
    assert got == _expected(df, groups)
    assert list(got) == [0, 2]
    assert got[0][:2] == [i for i, h in enumerate(hosts) if h == "b"]
