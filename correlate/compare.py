"""Compare two correlated runs: what got slower, where, and why.

Pure functions over output tables. ``profile(tables, by)`` aggregates one run per prefix, file or
function; ``diff(before, after)`` joins two profiles and ranks rows by their contribution to the
change in total wall time; ``explain(diff_frame, ...)`` turns the top rows into plain sentences;
``setup_differences(summary_a, summary_b)`` lists what makes the comparison less meaningful.

Noise: a row's change counts only when it is larger than ``REL_NOISE`` of its own value *and*
larger than ``ABS_NOISE_SHARE`` of the run's total wall time.
"""

from __future__ import annotations

from typing import Any

import polars as pl

REL_NOISE = 0.10
ABS_NOISE_SHARE = 0.03
DIMENSIONS = ("prefix", "file", "function")


def _sum(c: str) -> pl.Expr:
    return pl.col(c).fill_null(0).sum().alias(c)


def profile(tables: dict[str, pl.DataFrame], by: str) -> pl.DataFrame:
    """One run's metrics per ``by`` (prefix | file | function); the dimension column is ``item``."""
    tasks = tables["tasks"].with_columns(
        wait_s=pl.sum_horizontal(pl.col("wait_dependencies_s").fill_null(0),
                                 pl.col("wait_queued_s").fill_null(0),
                                 pl.col("wait_thread_s").fill_null(0),
                                 pl.col("wait_external_s").fill_null(0)))
    if by == "prefix":
        sums = [_sum(c) for c in ("cpu_s", "read_bytes", "write_bytes", "read_ops", "write_ops",
                                  "io_time_s", "transfer_bytes", "transfer_s", "wait_s")]
        return tasks.group_by(item="prefix").agg(
            *sums, executions=pl.len(), wall_s=pl.col("duration_s").sum())
    if by == "file":
        files = tables["task_files"].join(tasks.select("execution_id", "duration_s"),
                                          on="execution_id")
        return files.group_by(item="path").agg(
            executions=pl.col("execution_id").n_unique(),
            wall_s=pl.col("io_time_s").sum(),
            read_bytes=pl.col("bytes").filter(pl.col("op") == "read").sum(),
            write_bytes=pl.col("bytes").filter(pl.col("op") == "write").sum(),
            read_ops=pl.col("ops").filter(pl.col("op") == "read").sum(),
            write_ops=pl.col("ops").filter(pl.col("op") == "write").sum(),
            io_time_s=pl.col("io_time_s").sum())
    if by == "function":
        f = tables["task_functions"]
        return f.group_by(item=pl.concat_str(pl.col("module").fill_null("?"), pl.lit(":"),
                                             pl.col("name"))).agg(
            executions=pl.col("execution_id").n_unique(), wall_s=pl.col("tsub_s").sum(),
            ncall=pl.col("ncall").sum(), ttot_s=pl.col("ttot_s").sum())
    raise ValueError(f"unknown dimension {by!r}; expected one of {DIMENSIONS}")


def diff(before: pl.DataFrame, after: pl.DataFrame, *, total_wall_s: float) -> pl.DataFrame:
    """Join two profiles; add ``<m>_delta``/``<m>_rel`` for every metric, ``per_exec`` ratios,
    ``significant`` and ``rank`` (by |wall_s_delta|)."""
    metrics = [c for c in before.columns if c != "item"]
    joined = before.join(after, on="item", how="full", coalesce=True, suffix="_after")
    joined = joined.rename({m: f"{m}_before" for m in metrics})
    cols = []
    for m in metrics:
        b, a = pl.col(f"{m}_before").fill_null(0), pl.col(f"{m}_after").fill_null(0)
        cols += [(a - b).alias(f"{m}_delta"),
                 pl.when(b != 0).then((a - b) / b).otherwise(None).alias(f"{m}_rel")]
    out = joined.with_columns(*[pl.col(f"{m}_before").fill_null(0) for m in metrics],
                              *[pl.col(f"{m}_after").fill_null(0) for m in metrics]
                              ).with_columns(cols)
    floor = ABS_NOISE_SHARE * max(total_wall_s, 1e-9)
    significant = ((pl.col("wall_s_delta").abs() > floor)
                   & ((pl.col("wall_s_rel").abs() > REL_NOISE) | pl.col("wall_s_rel").is_null()))
    return (out.with_columns(significant=significant)
            .sort(pl.col("wall_s_delta").abs(), "item", descending=[True, False])
            .with_row_index("rank", offset=1))


def _pct(x: float | None) -> str:
    return "new" if x is None else f"{x:+.0%}"


def _per_exec(row: dict[str, Any], m: str, side: str) -> float:
    n = row[f"executions_{side}"]
    return row[f"{m}_{side}"] / n if n else 0.0


def _explain_prefix(row: dict[str, Any]) -> str:
    item, dwall = row["item"], row["wall_s_delta"]
    head = f"`{item}`: wall {dwall:+.3f} s ({_pct(row['wall_s_rel'])})"
    nb, na = row["executions_before"], row["executions_after"]
    reasons = []
    if nb and na and abs(na / nb - 1) > REL_NOISE:
        reasons.append(f"{na / nb:.1f}× the executions ({nb} → {na})")
    io_rel = row["io_time_s_rel"]
    bytes_b = row["read_bytes_before"] + row["write_bytes_before"]
    bytes_a = row["read_bytes_after"] + row["write_bytes_after"]
    bytes_rel = (bytes_a - bytes_b) / bytes_b if bytes_b else None
    if abs(row["io_time_s_delta"]) > 0.25 * abs(dwall) and (io_rel is None
                                                            or abs(io_rel) > REL_NOISE):
        if bytes_rel is not None and abs(bytes_rel) <= REL_NOISE:
            reasons.append(f"I/O time {_pct(io_rel)} while bytes are unchanged: slower storage, "
                           "not more data")
        else:
            reasons.append(f"I/O time {_pct(io_rel)} with bytes {_pct(bytes_rel)}")
    elif bytes_rel is not None and abs(bytes_rel) > REL_NOISE:
        reasons.append(f"bytes moved {_pct(bytes_rel)}")
    cpu_b, cpu_a = _per_exec(row, "cpu_s", "before"), _per_exec(row, "cpu_s", "after")
    if cpu_b and abs(cpu_a / cpu_b - 1) > REL_NOISE and abs(row["cpu_s_delta"]) > 0.25 * abs(
            dwall):
        reasons.append(f"CPU per execution {cpu_a / cpu_b - 1:+.0%}")
    elif cpu_b and nb and na and abs(na / nb - 1) > REL_NOISE:
        reasons.append("CPU per execution unchanged")
    if abs(row["transfer_bytes_delta"]) > 0 and row["transfer_bytes_rel"] is not None and abs(
            row["transfer_bytes_rel"]) > REL_NOISE:
        reasons.append(f"transfer bytes {_pct(row['transfer_bytes_rel'])}")
    if abs(row["wait_s_delta"]) > 0.25 * abs(dwall):
        reasons.append(f"waiting {row['wait_s_delta']:+.3f} s")
    if not reasons:
        reasons.append("not CPU, not I/O, not transfers: time inside the task that no source "
                       "explains (sleeping, locks, GIL, external calls)")
    return head + " — " + "; ".join(reasons)


def explain(d: pl.DataFrame, by: str, *, top: int = 5) -> list[str]:
    """Plain-language lines for the significant top rows (empty list: nothing beyond noise)."""
    rows = d.filter(pl.col("significant")).head(top).iter_rows(named=True)
    if by == "prefix":
        return [_explain_prefix(r) for r in rows]
    unit = "I/O time" if by == "file" else "exclusive time"
    return [f"`{r['item']}`: {unit} {r['wall_s_delta']:+.3f} s ({_pct(r['wall_s_rel'])})"
            for r in rows]


SETUP_KEYS = ("workers", "nthreads", "hosts", "versions", "collector_options", "darshan",
              "dask_config")


def setup_differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Differences in setup (from summary.json) that change the meaning of the comparison."""
    out = []
    if before.get("source_format") != after.get("source_format"):
        out.append(f"input format: {before.get('source_format')} → {after.get('source_format')}")
    fb, fa = before.get("facts", {}), after.get("facts", {})
    for k in SETUP_KEYS:
        if fb.get(k) != fa.get(k):
            out.append(f"{k}: {_short(fb.get(k))} → {_short(fa.get(k))}")
    mb = set(before.get("io", {}).get("segments_by_method", {}))
    ma = set(after.get("io", {}).get("segments_by_method", {}))
    if mb != ma:
        out.append(f"I/O attribution methods: {sorted(mb) or 'no DXT'} → {sorted(ma) or 'no DXT'}")
    return out


def _short(v: Any, limit: int = 120) -> str:
    s = str(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"
