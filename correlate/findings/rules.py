"""The findings' rules: each a pure function over the output tables and the critical path,
returning rows of the ``findings`` table (docs/findings.md says each rule's evidence, threshold,
cost and advice).

A finding's ``cost_s`` is what removing the problem would shorten the task window by, bounded
by what it contributes to the critical path: work off the path saves nothing that the path does
not wait for, so only the path's links (and, for a serial section, the window itself) count.
A finding whose cost is below ``MIN_COST_SHARE`` of the window (or ``MIN_COST_S``) is not
reported: a job without problems has none above that. A rule whose evidence is missing (no I/O
captured, no CPU measured) stays silent; one whose evidence is partial says so in ``partial``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from correlate.scalars import integer, number, rounded
from correlate.schema import TABLES, conform

#: findings below this share of the task window, or below MIN_COST_S, are not reported
MIN_COST_SHARE = 0.05
MIN_COST_S = 0.01
#: how many keys and files a finding names
SHOWN = 5


@dataclass(frozen=True)
class Evidence:
    """What the run captured, beyond the tables: whether its Darshan logs were read at all
    (``io_captured``) and whether they traced operations (``dxt``)."""

    io_captured: bool
    dxt: bool


@dataclass(frozen=True)
class Context:
    tasks: pl.DataFrame  # timed executions only
    task_files: pl.DataFrame
    path: pl.DataFrame
    evidence: Evidence
    window_start_ns: int
    window_s: float


def _finding(kind: str, cost_s: float | None, prefixes: list[str], keys: list[str],
             files: list[str], evidence: str, advice: str, partial: str | None = None
             ) -> dict[str, Any]:
    return {"kind": kind, "cost_s": cost_s, "prefixes": sorted(set(prefixes)),
            "keys": keys[:SHOWN], "files": files[:SHOWN], "evidence": evidence,
            "advice": advice, "partial": partial}


def _on_path(ctx: Context) -> pl.DataFrame:
    """The path's links with their task figures (one row per link)."""
    return ctx.path.select("execution_id", "wait_s")


# --- serial-section ----------------------------------------------------------------------

def running_counts(tasks: pl.DataFrame) -> pl.DataFrame:
    """The task window cut at every start and stop: each piece (``t0``, ``t1``) with how many
    executions ran in it (``running``)."""
    ev = pl.concat([tasks.select(t="start_ns", d=pl.lit(1, pl.Int64)),
                    tasks.select(t="stop_ns", d=pl.lit(-1, pl.Int64))])
    ev = ev.group_by("t").agg(pl.col("d").sum()).sort("t")
    return ev.select(t0="t", t1=pl.col("t").shift(-1),
                     running=pl.col("d").cum_sum()).drop_nulls("t1")


def serial_section(ctx: Context) -> list[dict[str, Any]]:
    """Parts of the window where a single execution ran while the cluster had more threads: the
    prefixes that ran alone there. Cost: the time they ran alone (had that work run beside the
    rest, the window would have been shorter by at most that)."""
    threads = ctx.tasks.select("host", "pid", "thread_id").unique().height
    if threads < 2:
        return []
    alone = running_counts(ctx.tasks).filter(pl.col("running") == 1)
    if alone.is_empty():
        return []
    # which execution ran in each lone piece: the one whose window holds the piece
    ex = ctx.tasks.select("execution_id", "key", "prefix", "start_ns", "stop_ns").sort(
        "start_ns")
    pieces = alone.sort("t0").join_asof(ex, left_on="t0", right_on="start_ns",
                                        strategy="backward")
    pieces = pieces.filter(pl.col("stop_ns") >= pl.col("t1"))
    per = (pieces.group_by("prefix").agg(
        alone_s=((pl.col("t1") - pl.col("t0")).sum() * 1e-9),
        keys=pl.col("key").unique(maintain_order=True),
        executions=pl.col("execution_id").n_unique())
        .sort("alone_s", "prefix", descending=[True, False]))
    out = []
    for r in per.iter_rows(named=True):
        cost = r["alone_s"]
        out.append(_finding(
            "serial-section", cost, [r["prefix"]], r["keys"], [],
            f"{r['prefix']} ran alone for {cost:.3f} s of the {ctx.window_s:.3f} s task window "
            f"({cost / ctx.window_s:.0%}; {r['executions']} execution(s)), while {threads - 1} "
            "other thread(s) of the cluster were idle",
            "split this work into parallel tasks, or start independent work earlier so that it "
            "overlaps (submit it before the chain, or raise its priority)"))
    return out


# --- straggler ---------------------------------------------------------------------------

#: an execution is a straggler when it takes more than STRAGGLER_FACTOR × its prefix's median
#: and more than the median + STRAGGLER_MADS median absolute deviations
STRAGGLER_FACTOR = 2.0
STRAGGLER_MADS = 5.0
STRAGGLER_MIN_RUNS = 5


def straggler(ctx: Context) -> list[dict[str, Any]]:
    """Executions far beyond their prefix's spread; the cost is what each would have saved on
    the critical path had it taken its prefix's median (off the path: nothing, not reported)."""
    t = ctx.tasks
    stats = (t.group_by("prefix").agg(runs=pl.len(), median=pl.col("duration_s").median(),
                                      mad=(pl.col("duration_s") - pl.col("duration_s")
                                           .median()).abs().median())
             .filter(pl.col("runs") >= STRAGGLER_MIN_RUNS))
    slow = (t.join(stats, on="prefix")
            .filter((pl.col("duration_s") > STRAGGLER_FACTOR * pl.col("median"))
                    & (pl.col("duration_s") > pl.col("median") + STRAGGLER_MADS * pl.col("mad")))
            .join(ctx.path.select("execution_id", on_path=pl.lit(True)), on="execution_id",
                  how="left")
            .with_columns(excess_s=pl.col("duration_s") - pl.col("median"),
                          saved_s=pl.when(pl.col("on_path")).then(
                              pl.col("duration_s") - pl.col("median")).otherwise(0.0)))
    out = []
    for prefix, rows in sorted(slow.partition_by("prefix", as_dict=True).items(),
                               key=lambda kv: str(kv[0][0])):
        rows = rows.sort("saved_s", "excess_s", descending=True)
        first = rows.row(0, named=True)
        why = _why(first)
        out.append(_finding(
            "straggler", rounded(number(rows.get_column("saved_s").sum())), [str(prefix[0])],
            rows.get_column("key").to_list(), [],
            f"{rows.height} of {first['runs']} {prefix[0]} executions took over "
            f"{STRAGGLER_FACTOR:g}× the median {first['median']:.3f} s; the slowest, "
            f"{first['key']}, {first['duration_s']:.3f} s on {first['worker']} ({why})"
            + ("" if first["on_path"] else "; off the critical path"),
            "look at what this execution does differently (its input, its worker, its I/O): "
            "split skewed partitions, or give the task's work a size like its siblings'"))
    return out


def _why(r: dict[str, Any]) -> str:
    """Where a straggler's time went: CPU, I/O, the rest, inputs read back."""
    parts = [f"{name} {v:.3f} s" for name, v in (
        ("CPU", r.get("cpu_s")), ("I/O", r.get("io_time_s")),
        ("inputs read back", r.get("input_read_back_s"))) if v]
    known = sum(v for v in (r.get("cpu_s"), r.get("io_time_s")) if v is not None)
    if r.get("cpu_s") is not None and r.get("io_time_s") is not None:
        parts.append(f"other {r['duration_s'] - known:.3f} s")
    return ", ".join(parts) or "CPU and I/O not captured"


RULES: tuple[Callable[[Context], list[dict[str, Any]]], ...] = (serial_section, straggler)


def findings(tasks: pl.DataFrame, task_files: pl.DataFrame, path: pl.DataFrame,
             evidence: Evidence) -> pl.DataFrame:
    """The ``findings`` table: every rule's findings above the threshold, costliest first."""
    timed = tasks.filter(pl.col("start_ns").is_not_null() & pl.col("stop_ns").is_not_null())
    if timed.is_empty() or path.is_empty():
        return TABLES["findings"].empty()
    start = integer(timed.get_column("start_ns").min()) or 0
    window = ((integer(timed.get_column("stop_ns").max()) or 0) - start) * 1e-9
    ctx = Context(timed, task_files, path, evidence, start, window)
    floor = max(MIN_COST_S, MIN_COST_SHARE * window)
    rows = [f for rule in RULES for f in rule(ctx)
            if f["cost_s"] is not None and f["cost_s"] >= floor]
    rows.sort(key=lambda f: (-f["cost_s"], f["kind"], f["prefixes"]))
    if not rows:
        return TABLES["findings"].empty()
    df = pl.DataFrame(rows).with_row_index("rank", offset=1)
    return conform(df, TABLES["findings"], path="findings")


def as_json(found: pl.DataFrame) -> list[dict[str, Any]]:
    """``summary.json`` ``findings``: the table's rows, costliest first."""
    return [{**r, "cost_s": rounded(r["cost_s"])} for r in found.iter_rows(named=True)]


def evidence_json(found: pl.DataFrame) -> str:
    return json.dumps(as_json(found), sort_keys=True)
