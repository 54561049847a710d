"""Group-by aggregations whose float sums are the same in every run.

polars splits a large group between threads and adds the parts in no fixed order, so a float
sum over a few big groups (per worker, per prefix) can change in its last bits from one run to
the next (docs/performance.md), and reports and summaries that promise
the same bytes for the same tables do not keep it. Sorted by the keys and flagged as sorted,
each group is one slice of rows, aggregated in row order."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from correlate.frames.rows import kept

_GROUP = "__group"


def group_agg(df: pl.DataFrame, keys: Sequence[str], where: pl.Expr | None = None,
              **aggs: pl.Expr) -> pl.DataFrame:
    """``df.filter(where).group_by(keys).agg(**aggs)``, each group's rows taken in their
    order in ``df`` (groups come out in key order, nulls last)."""
    keys = list(keys)
    # only the columns the aggregations read are filtered and put in order (filtering or
    # sorting every column of a wide or long table, such as the tasks of ten million
    # executions or task_files with its keys and paths, copied all of it)
    if not any(agg.meta.has_multiple_outputs() for agg in aggs.values()):  # (no wildcards)
        used = {name for e in (*aggs.values(), *([where] if where is not None else []))
                for name in e.meta.root_names()}
        df = df.select(*keys, *(c for c in df.columns if c in used and c not in keys))
    if where is not None:
        df = kept(df, df.select(where.fill_null(False)).to_series())
    if any(agg.meta.has_multiple_outputs() for agg in aggs.values()):
        ordered = df.sort(keys, nulls_last=True, maintain_order=True).with_columns(
            pl.struct(keys).rle_id().alias(_GROUP)).set_sorted(_GROUP)
        return ordered.group_by(_GROUP, maintain_order=True).agg(
            pl.col(keys).first(), **aggs).drop(_GROUP)
    # the rows' order found once, and each aggregation given only its own columns in that
    # order: the same rows in the same order as the whole frame sorted (the same sums), without
    # every column of a big table sorted at once
    order = df.select(pl.arg_sort_by(keys, nulls_last=True, maintain_order=True)).to_series()
    keyed = df.select(keys).gather(order)
    group = keyed.select(pl.struct(keys).rle_id().alias(_GROUP)).to_series().set_sorted()
    out = keyed.with_columns(group).group_by(_GROUP, maintain_order=True).agg(
        pl.col(keys).first())
    del keyed
    for name, agg in aggs.items():
        read = list(dict.fromkeys(agg.meta.root_names()))  # (none: a count of rows)
        rows = df.select(read).gather(order).with_columns(group) if read else group.to_frame()
        out = out.with_columns(rows.group_by(_GROUP, maintain_order=True).agg(agg.alias(name))
                               .get_column(name))
    return out.drop(_GROUP)


def measured_sum(column: str | pl.Expr) -> pl.Expr:
    """The sum of a column's measured values, null when none of them was measured: polars sums
    nulls to 0, which would report an unmeasured quantity (CPU of a source that records none,
    I/O of a run without Darshan) as measured to be nothing."""
    c = pl.col(column) if isinstance(column, str) else column
    return pl.when(c.is_not_null().any()).then(c.sum())


def mean_request(bytes_col: str, ops_col: str) -> pl.Expr:
    """The mean request size, bytes ÷ operations; null where no operation was counted (I/O
    not captured, or no request of that kind: there is no mean to state, and 0 B would be a
    measured size)."""
    return pl.when(pl.col(ops_col) > 0).then(pl.col(bytes_col) / pl.col(ops_col))


def request_sums() -> dict[str, pl.Expr]:
    """Bytes and operations read and written, summed over the tasks of a group
    (``measured_sum``: null where I/O was not captured)."""
    return {c: measured_sum(c) for c in ("read_bytes", "write_bytes", "read_ops", "write_ops")}


def request_means() -> dict[str, pl.Expr]:
    """``read_mean_bytes`` and ``write_mean_bytes`` of rows holding ``request_sums``."""
    return {"read_mean_bytes": mean_request("read_bytes", "read_ops"),
            "write_mean_bytes": mean_request("write_bytes", "write_ops")}
