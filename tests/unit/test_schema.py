"""The schema module's helpers."""

from __future__ import annotations


def test_sorted_for_output_equals_a_full_sort_with_ties_broken_by_strings():
    import random

    import polars as pl

    from correlate.frames.sorting import sorted_for_output
    from correlate.schema import TABLES

    rng = random.Random(3)
    n = 5000
    df = pl.DataFrame({
        "time_ns": [rng.choice([None, *range(300)]) for _ in range(n)],
        "side": [rng.choice(["scheduler", "worker"]) for _ in range(n)],
        "key": [rng.choice(["a", "b", "c", None]) for _ in range(n)],
        "start": [rng.choice(["x", "y"]) for _ in range(n)],
        "finish": [rng.choice(["p", "q", None]) for _ in range(n)],
        "row": range(n)})
    keys = list(TABLES["events"].sort_by)
    for frame in (df, df.drop_nulls(), df.with_columns(side=pl.lit("worker"))):
        expected = frame.sort(keys, nulls_last=True, maintain_order=True)
        assert sorted_for_output(frame, TABLES["events"]).equals(expected)
    segments = pl.DataFrame({"host": ["h"] * n, "pid": [rng.randrange(3) for _ in range(n)],
                             "thread_id": [rng.randrange(4) for _ in range(n)],
                             "start_ns": [rng.randrange(100) for _ in range(n)],
                             "seg_id": range(n)})
    one_process = segments.with_columns(pid=pl.lit(7))  # constant leading keys are skipped
    for frame in (segments, one_process, one_process.with_columns(
            thread_id=pl.when(pl.col("seg_id") % 5 == 0).then(pl.col("thread_id")))):
        expected = frame.sort(TABLES["segments"].sort_by, nulls_last=True, maintain_order=True)
        assert sorted_for_output(frame, TABLES["segments"]).equals(expected)
    functions = pl.DataFrame({  # two numeric keys, then strings; few ties, some at the ends
        "execution_id": [rng.randrange(n) for _ in range(n)],
        "tsub_s": [rng.choice([0.5, 0.25, *[rng.random() for _ in range(5)]]) for _ in range(n)],
        "file": [rng.choice(["f", "g", None]) for _ in range(n)],
        "line": [rng.randrange(3) for _ in range(n)],
        "name": [rng.choice(["m", "n"]) for _ in range(n)], "row": range(n)})
    keys = list(TABLES["task_functions"].sort_by)
    for frame in (functions, functions.head(1), functions.filter(pl.col("tsub_s") < 0.3)):
        expected = frame.sort(keys, nulls_last=True, maintain_order=True)
        assert sorted_for_output(frame, TABLES["task_functions"]).equals(expected)


def test_conform_keeps_differently_chunked_columns_as_they_are():
    """Columns read from many parts can be chunked at different rows; a select then copies
    each into one chunk (11M transitions: 1 GB), so ``conform`` picks the declared columns of a
    frame that already has their dtypes without one."""
    import polars as pl

    from correlate.schema import TABLES, conform

    def chunked(name, n_parts, rows, value):
        return pl.concat([pl.Series(name, [value(i)] * rows) for i in range(n_parts)],
                         rechunk=False)

    side = TABLES["events"].column("side").polars_dtype()
    n = 12
    df = pl.DataFrame([  # 12 rows, chunked at different rows
        chunked("time_ns", 4, 3, int), chunked("key", 3, 4, str), chunked("start", 2, 6, str),
        chunked("finish", 6, 2, str), chunked("extra", 12, 1, int),
        pl.Series("side", ["worker"] * n, side), pl.Series("host", ["h"] * n),
        pl.Series("worker", ["w"] * n), pl.Series("pid", [1] * n, pl.Int64),
        pl.Series("stimulus_id", ["s"] * n)])
    assert df.get_column("key").n_chunks() == 3
    out = conform(df, TABLES["events"])
    assert out.columns == list(TABLES["events"].names)
    assert out.equals(df.select(TABLES["events"].names))
    assert [out.get_column(c).n_chunks() for c in ("time_ns", "key", "start", "finish")] == [
        4, 3, 2, 6]


def test_sort_order_packs_integer_keys_and_equals_a_full_sort():
    import numpy as np
    import polars as pl

    from correlate.frames.sorting import packed_key, sort_order

    rng = np.random.default_rng(5)
    n = 20_000
    threads = pl.Series(rng.choice([2**63 + 5, 2**40, 17], n), dtype=pl.UInt64)  # few, far apart
    times = pl.Series(rng.integers(-2**40, 2**40, n), dtype=pl.Int64)
    holes = pl.Series([None if x % 7 == 0 else int(x) for x in rng.integers(0, 2**30, n)])
    few_holes = pl.Series([None if x == 0 else int(x) for x in rng.integers(0, 4, n)],
                          dtype=pl.Int32)
    wide = pl.Series([-2**63, 2**63 - 1, *rng.integers(-2**62, 2**62, n - 2)], dtype=pl.Int64)
    cases = {
        "rank + offset, last key in row order": ({"t": threads, "s": times,
                                                 "id": pl.Series(range(n))}, True),
        "nulls ranked and offset": ({"f": few_holes, "h": holes}, True),
        "too wide: multi-column sort": ({"s": times, "s2": times.shuffle(1)}, False),
        "wide ranked, float ranked": ({"w": wide, "x": pl.Series([
            [-0.0, 0.0, 1.5, float("inf"), float("-inf"), None][i]
            for i in rng.integers(0, 6, n)], dtype=pl.Float64)}, True),
        "NaN: multi-column sort": ({"f": few_holes, "x": pl.Series([float("nan"), 1.0] * (
            n // 2))}, False),
        "ties only": ({"f": few_holes, "t": threads}, True),
    }
    for name, (columns, packs) in cases.items():
        df = pl.DataFrame(columns)
        keys = list(columns)
        assert (packed_key(df, keys[:2]) is not None) == packs, name
        expected = df.with_row_index("row").sort(keys, nulls_last=True, maintain_order=True)
        assert sort_order(df, keys).cast(pl.UInt32).equals(expected["row"]), name


def test_mostly_tied_rows_are_sorted_by_every_key_packed_as_a_full_sort():
    """The files of each task: the leading id ties on most rows, so all rows are sorted once
    by every key packed (strings by their sorted index, an Enum by its categories' order, nulls
    last); a string key too wide to pack falls back to the tie sort."""
    import random

    import polars as pl

    from correlate.frames.sorting import sort_order, sorted_for_output
    from correlate.schema import TABLES

    rng = random.Random(5)
    n = 3000
    op = TABLES["task_files"].column("op").polars_dtype()
    method = TABLES["task_files"].column("attribution").polars_dtype()
    files = pl.DataFrame({
        "execution_id": [rng.randrange(n // 6) for _ in range(n)],
        "path": [rng.choice(["/b", "/a", "/a/b", "/é", "", None]) for _ in range(n)],
        "op": pl.Series([rng.choice(["write", "read", None]) for _ in range(n)], dtype=op),
        "attribution": pl.Series([rng.choice(["helper-file", "exact-thread", None])
                                  for _ in range(n)], dtype=method),
        "row": range(n)})
    keys = list(TABLES["task_files"].sort_by)
    unique_paths = files.with_columns(pl.col("path") + pl.col("row").cast(pl.String))
    too_wide = files.with_columns(pl.col("execution_id") * (1 << 54))
    for frame in (files, files.drop_nulls(), unique_paths, too_wide):
        expected = frame.sort(keys, nulls_last=True, maintain_order=True)
        assert sorted_for_output(frame, TABLES["task_files"]).equals(expected)
        assert sort_order(frame, keys) is not None


def test_rows_already_in_output_order_are_left_as_they_are():
    """A table already sorted by its keys (task_files from its partitions) is recognised by
    comparing neighbours, nulls last, and not sorted again; any row out of place, also past the
    first 4096, is found, and the table is then sorted as before."""
    import random

    import polars as pl

    from correlate.frames.sorting import _in_order, sort_order, sorted_for_output
    from correlate.schema import TABLES

    rng = random.Random(8)
    n = 6000
    op = TABLES["task_files"].column("op").polars_dtype()
    method = TABLES["task_files"].column("attribution").polars_dtype()
    keys = list(TABLES["task_files"].sort_by)
    files = pl.DataFrame({
        "execution_id": [rng.choice([None, *range(n // 4)]) for _ in range(n)],
        "path": [rng.choice(["/b", "/a", "/a/b", "/é", "", None]) for _ in range(n)],
        "op": pl.Series([rng.choice(["write", "read", None]) for _ in range(n)], dtype=op),
        "attribution": pl.Series([rng.choice(["helper-split", "exact-thread"])
                                  for _ in range(n)], dtype=method),
        "row": range(n)})
    ordered = files.sort(keys, nulls_last=True, maintain_order=True)
    assert _in_order(ordered, keys) and sort_order(ordered, keys) is None
    assert _in_order(ordered.head(1), keys) and _in_order(ordered.clear(), keys)

    def swapped(df, i):  # rows i and i + 1 exchanged
        order = list(range(df.height))
        order[i], order[i + 1] = order[i + 1], order[i]
        return df[order]

    distinct = ordered.unique(keys, keep="first", maintain_order=True)
    late = distinct.height - 2  # past the head that is checked first
    assert late > 4096
    nulls_first = ordered.sort(keys, nulls_last=False, maintain_order=True)
    for frame in (swapped(distinct, 10), swapped(distinct, late), nulls_first,
                  ordered.reverse(), files):
        assert not _in_order(frame, keys)
        expected = frame.sort(keys, nulls_last=True, maintain_order=True)
        assert sorted_for_output(frame, TABLES["task_files"]).equals(expected)
    times = pl.DataFrame({"t": [0.5, 0.25]})
    assert not _in_order(times.sort("t"), ["t"])  # floats are not checked: NaN's order
