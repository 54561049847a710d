"""Output order: every table written sorted by its identifying columns (``Table.sort_by``),
so that the same run gives the same files; sorting large frames is costly, so rows already in
order are detected and numeric keys are packed into one where they fit.
"""

from __future__ import annotations

from typing import Any

from correlate.schema import Table


def _in_order(df: Any, keys: list[str]) -> bool:
    """Whether ``df``'s rows already follow ``keys`` (nulls last), checked neighbour by
    neighbour: first on a head of 4096 rows, so that an unsorted table costs nearly nothing
    (``task_files`` comes sorted from its partitions: a check instead of a sort). Only keys
    whose ``<`` is their sort order are checked
    (integers, strings, Enums); otherwise False."""
    import polars as pl

    if not all(df.schema[k].is_integer() or df.schema[k] == pl.String
               or isinstance(df.schema[k], pl.Enum) for k in keys):
        return False
    follows = pl.lit(True)
    for k in reversed(keys):  # row ≤ next row by keys[i:], built from the last key
        this, after = pl.col(k), pl.col(k).shift(-1)
        before = (pl.when(this.is_null()).then(False).when(after.is_null()).then(True)
                  .otherwise(this < after))
        follows = before | (this.eq_missing(after) & follows)
    return all(part.select(follows.all()).item() for part in (df.head(4096), df))


def _is_numeric(df: Any, column: str) -> bool:
    return df.schema[column].is_numeric() or df.schema[column].is_temporal()


def _stable_sort(df: Any, by: list[str]) -> Any:
    """Stable sort, nulls last; ``nulls_last`` only when there are nulls (it doubles the time
    of polars' multi-column sort)."""
    nulls = any(df[k].null_count() for k in by)
    return df.sort(by, nulls_last=nulls, maintain_order=True)


def _numeric_order(df: Any, keys: list[str]) -> Any:
    """Row numbers of ``df`` stably sorted by numeric ``keys``, nulls last. A last key already
    in row order is left to the stable sort; keys that fit together in 64 bits (``packed_key``)
    are sorted as one key: polars' multi-column sort compares row by row and takes 2-3× longer."""
    last = df.get_column(keys[-1])
    if len(keys) > 1 and not last.null_count() and last.is_sorted():
        keys = keys[:-1]
    packed = packed_key(df, keys) if len(keys) > 1 else None
    if packed is None:
        return _stable_sort(df.select(*keys).with_row_index("row"), keys)["row"]
    return order_of(packed)


def order_of(key: Any) -> Any:
    """Row numbers of ``key`` (a Series) in stable sorted order."""
    import polars as pl

    return key.alias("key").to_frame().select(pl.arg_sort_by("key", maintain_order=True)
                                              ).to_series()


def packed_key(df: Any, keys: list[str]) -> Any:
    """One UInt64 per row ordered as ``keys`` (nulls last), or None when they do not fit: an
    integer key as its offset from its minimum (times, ids), or as its index among its distinct
    values when a sample shows few (thread ids); a float key, or an integer one too wide, as
    its dense rank; a string as its index among its distinct values in sorted order, an Enum
    as its category's."""
    import polars as pl

    codes, widths = [], []
    for k in keys:
        col = df.get_column(k)
        nulls = int(col.null_count() > 0)
        if col.null_count() == col.len():
            code, width = pl.Series([0], dtype=pl.UInt64).new_from_index(0, col.len()), 0
        elif col.dtype.is_float():
            if col.is_nan().any():
                return None
            code, width = _dense_rank(col, nulls)
        elif isinstance(col.dtype, pl.Enum):  # sorts in the order of its categories
            code = col.to_physical().cast(pl.UInt64).fill_null(len(col.dtype.categories))
            width = (len(col.dtype.categories) - 1 + nulls).bit_length()
        elif col.dtype == pl.String:
            distinct = col.drop_nulls().unique().sort()
            code = col.replace_strict(distinct, pl.int_range(distinct.len(), dtype=pl.UInt64,
                                                             eager=True), default=distinct.len())
            width = (distinct.len() - 1 + nulls).bit_length()
        elif not col.dtype.is_integer():
            return None
        elif col.gather_every(max(1, col.len() // 4096)).n_unique() <= 256:
            distinct = col.drop_nulls().unique().sort()
            code = distinct.search_sorted(col.fill_null(distinct[-1])).cast(pl.UInt64)
            width = (distinct.len() - 1 + nulls).bit_length()
            if nulls:
                code = pl.select(pl.when(col.is_null()).then(distinct.len()).otherwise(code)
                                 .cast(pl.UInt64)).to_series()
        else:
            lo, hi = col.min(), col.max()
            width = (hi - lo + nulls).bit_length()
            if width > 63:
                code, width = _dense_rank(col, nulls)
            else:
                code = (col - lo).cast(pl.UInt64).fill_null(hi - lo + 1)
        codes.append(code)
        widths.append(width)
    if sum(widths) > 64:
        return None
    key, shift = codes[-1], widths[-1]
    for code, width in zip(codes[-2::-1], widths[-2::-1], strict=True):
        if width:
            key = key + code * pl.Series([1 << shift], dtype=pl.UInt64)
        shift += width
    return key


def _dense_rank(col: Any, nulls: int) -> tuple[Any, int]:
    """0-based dense rank of ``col`` (nulls after every value) and its width in bits."""
    import polars as pl

    rank = col.rank("dense").cast(pl.UInt64)
    top = int(rank.max())
    return (rank - 1).fill_null(top), (top - 1 + nulls).bit_length()


def has_repeats(values: Any) -> bool:
    """Whether a value is in more than one row: where the values are sorted (a run's
    per-execution tables, in execution order) its neighbours are compared, without the hash
    table ``is_duplicated`` builds (a big run's ids are tens of millions)."""
    if values.len() < 2:
        return False
    if not values.has_nulls() and values.is_sorted():
        return bool((values.slice(1) == values.slice(0, values.len() - 1)).any())
    return bool(values.is_duplicated().any())


def sorted_for_output(df: Any, table: Table) -> Any:
    """Sort by the table's identifying columns so output is deterministic (``output_order``)."""
    rows = output_order(df, table)
    if rows is None:
        return df
    if max(df.n_chunks("all"), default=1) > 1:  # a gather across chunks is slow
        df = df.rechunk()
    return df[rows]


def output_order(df: Any, table: Table) -> Any:
    """Row numbers of ``df`` in output order (None: already in it): ``sort_order`` by the
    table's sort keys that ``df`` has."""
    return sort_order(df, [k for k in table.sort_by if k in df.columns])


def sort_order(df: Any, keys: list[str]) -> Any:
    """Row numbers of ``df`` sorted by ``keys`` (None: already in it), the same order as
    ``df.sort(keys, maintain_order=True)`` with nulls last, faster: multi-column sorts that
    include strings are slow, so leading keys with a single value (host and
    pid in a per-process part) are left out, rows are sorted by the leading numeric keys, and
    the string keys only break ties among the rows whose numeric keys are duplicated (usually
    few; found as equal neighbours once sorted, not by hashing)."""
    import polars as pl

    while keys and df.select(
            (pl.col(keys[0]).min() == pl.col(keys[0]).max()).fill_null(True)
            & (pl.col(keys[0]).null_count().is_in([0, df.height]))).item():
        keys = keys[1:]
    if not keys or _in_order(df, keys):
        return None
    lead = []
    for k in keys:
        if not _is_numeric(df, k):
            break
        lead.append(k)
    if not lead:
        return _stable_sort(df.select(*keys).with_row_index("row"), keys)["row"]
    rows = _numeric_order(df, lead)
    if len(lead) == len(keys):
        return rows
    same_as_previous = pl.all_horizontal(pl.col(k).eq_missing(pl.col(k).shift(1)) for k in lead)
    tied = pl.DataFrame([df.get_column(k).gather(rows) for k in lead]).select(
        same_as_previous | same_as_previous.shift(-1).fill_null(False)).to_series()
    if tied.any():
        # the tied rows sit in runs of equal lead, runs in lead order: sorting them all by the
        # full keys and putting them back into the same positions orders each run
        at = tied.arg_true()
        packed = packed_key(df, keys) if 2 * at.len() > df.height else None
        if packed is not None:  # mostly ties (the files of each task): one sort of all rows
            return order_of(packed)  # by every key, packed
        tied_rows = rows.gather(at)
        ties = _stable_sort(pl.DataFrame([tied_rows.alias("row"), *(
            df.get_column(k).gather(tied_rows) for k in keys)]), keys)
        rows = rows.clone().scatter(at, ties["row"])
    return rows
