"""Compare correlated runs: what got slower, where, and why.

Pure functions over output tables. ``profile(tables, by)`` aggregates one run per prefix, file or
function, ``samples(tables, by)`` keeps the per-execution figures, ``mean_profile`` averages
several runs of one side; ``diff(before, after, samples_before, samples_after)`` joins two
sides, judges every row and ranks it; ``machine_change`` tells a change of the machine or the
concurrency apart from a change of one prefix; ``explanations`` turns the named rows into
``(item, plain sentence)`` pairs; ``totals_line`` sums up the job; ``setup_differences`` lists
what differs in the runs' setup, concurrency first.

How a row is judged (never by a fixed share of the run):

- Counts are facts: executions, bytes, operations, calls, spilled and transferred bytes, files
  touched. One that moved by more than ``COUNT_TOLERANCE`` (and, with several runs per side,
  by more than its run-to-run range) is always reported, ranked on its size.
- Timings are judged by their own spread: the per-execution durations, CPU, I/O time and the
  rest of the two sides go through a rank test (``compare_stats.rank_test``); with several
  runs per side every run of one side must also lie beyond every run of the other. Rows with
  fewer than ``compare_stats.MIN_EXECUTIONS`` executions on a side say so instead.
- When several prefixes take longer (or shorter) at unchanged CPU per execution, or the
  workers, threads or hosts differ, the machine or the concurrency changed: that is said once,
  and those prefixes are not named as regressions of their own.

A prefix's task time is the sum of its executions' durations (start to stop on a thread); its
change is split into thread CPU, time inside I/O calls and the rest (no source measures it:
sleeping, locks, GIL, waiting for a core). Waiting (dependencies, queue, a thread), input
transfers and spill read-back happen before an execution starts: shown beside it. Rows are
ranked by their contribution to the change of the job's span (``compare_stats.span_shares``),
with the summed task time alongside.
"""

from __future__ import annotations

import math
import re
from typing import Any

import polars as pl

from correlate.compare.stats import (  # noqa: F401
    ALPHA,
    COUNT_TOLERANCE,
    MATERIAL,
    MIN_EXECUTIONS,
    rank_test,
    runs_apart,
    span_shares,
)
from correlate.frames.scalars import integer
from correlate.timeline import endings, lost, spans


def exact_sum(s: pl.Series) -> float:
    """The sum of a column's known values, rounded once (``math.fsum``), in sorted order."""
    return math.fsum(sorted(s.fill_null(0).to_list()))


#: a timing change whose total is whose total is below this share of the job's span (nobody waits for it)
JOB_FLOOR = 0.01
#: a prefix whose thread CPU is at least this share of its task time is CPU-bound: its time
#: stretches with the cores' contention (low: on a busy machine a pure CPU task's task time
#: was seen at 8.5× its CPU)
CPU_BOUND = 0.05
DIMENSIONS = ("prefix", "span", "file", "function")
#: the dimensions that group task executions: by their prefix, or by their Dask span (its name
#: path: ``distributed.span``; compared where both runs have spans)
TASK_GROUPS = ("prefix", "span")
#: counts per dimension (facts: reported whenever they move)
COUNTS = {
    "prefix": ("executions", "read_bytes", "write_bytes", "read_ops", "write_ops",
               "transfer_bytes", "spilled_bytes", "files", "lost"),
    "span": ("executions", "read_bytes", "write_bytes", "read_ops", "write_ops",
             "transfer_bytes", "spilled_bytes", "files", "lost"),
    "file": ("executions", "read_bytes", "write_bytes", "read_ops", "write_ops"),
    "function": ("executions", "ncall"),
}
#: per-execution timings tested per dimension: name -> column of ``samples``
TIMINGS = {"prefix": ("wall", "cpu", "io", "rest"), "span": ("wall", "cpu", "io", "rest"),
           "file": ("wall",), "function": ("wall",)}
#: setup entries that change the concurrency or the machine
CONCURRENCY_KEYS = ("workers", "nthreads", "hosts", "versions")


def _sum(c: str) -> pl.Expr:
    return pl.col(c).fill_null(0).sum().alias(c)


def _with_wait(tasks: pl.DataFrame) -> pl.DataFrame:
    return tasks.with_columns(
        wait_s=pl.sum_horizontal(pl.col("wait_dependencies_s").fill_null(0),
                                 pl.col("wait_queued_s").fill_null(0),
                                 pl.col("wait_thread_s").fill_null(0),
                                 pl.col("wait_external_s").fill_null(0)))


def _with_span_share(tasks: pl.DataFrame) -> pl.DataFrame:
    if "start_ns" not in tasks.columns or tasks.is_empty():
        return tasks.with_columns(span_s=pl.lit(None, pl.Float64))
    shares, _ = span_shares(tasks["start_ns"].cast(pl.Float64).to_numpy() / 1e9,
                            tasks["stop_ns"].cast(pl.Float64).to_numpy() / 1e9)
    return tasks.with_columns(span_s=pl.Series(shares, dtype=pl.Float64).fill_nan(None))


def job_span(tables: dict[str, pl.DataFrame]) -> float | None:
    """First task start to last task end, seconds (None: no timed execution)."""
    t = tables["tasks"]
    if "start_ns" not in t.columns or t["start_ns"].drop_nulls().is_empty():
        return None
    first, last = integer(t["start_ns"].min()), integer(t["stop_ns"].max())
    return None if first is None or last is None else (last - first) / 1e9


def profile(tables: dict[str, pl.DataFrame], by: str) -> pl.DataFrame:
    """One run's metrics per ``by`` (prefix | span | file | function); the dimension column is
    ``item``."""
    tasks = _with_wait(tables["tasks"])
    if by in TASK_GROUPS:
        tasks = _with_span_share(tasks).filter(pl.col(by).is_not_null())
        files = tables["task_files"].join(tasks.select("execution_id", by),
                                          on="execution_id").group_by(by).agg(
            files=pl.col("path").n_unique().cast(pl.Float64))
        sums = [_sum(c) for c in ("cpu_s", "read_bytes", "write_bytes", "read_ops", "write_ops",
                                  "io_time_s", "transfer_bytes", "transfer_s", "wait_s",
                                  "spilled_bytes", "input_read_back_s", "awaiting_s", "span_s")]
        return (tasks.group_by(item=by).agg(
            # runs only: an execution handed back (rescheduled, cancelled) is no run
            *sums, executions=endings.is_run().sum().cast(pl.Float64),
            # runs whose result died with their worker (correlate/lost.py)
            lost=(pl.col("status") == lost.LOST).sum().cast(pl.Float64),
            wall_s=pl.col("duration_s").sum())
            .join(files.rename({by: "item"}), on="item", how="left")
            .with_columns(pl.col("files").fill_null(0.0)))
    if by == "file":
        files = tables["task_files"]
        return files.group_by(item="path").agg(
            executions=pl.col("execution_id").n_unique().cast(pl.Float64),
            wall_s=pl.col("io_time_s").sum(),
            read_bytes=pl.col("bytes").filter(pl.col("op") == "read").sum(),
            write_bytes=pl.col("bytes").filter(pl.col("op") == "write").sum(),
            read_ops=pl.col("ops").filter(pl.col("op") == "read").sum(),
            write_ops=pl.col("ops").filter(pl.col("op") == "write").sum(),
            io_time_s=pl.col("io_time_s").sum())
    if by == "function":
        return tables["task_functions"].group_by(item=_function_name()).agg(
            executions=pl.col("execution_id").n_unique().cast(pl.Float64),
            wall_s=pl.col("tsub_s").sum(), ncall=pl.col("ncall").sum(),
            ttot_s=pl.col("ttot_s").sum())
    raise ValueError(f"unknown dimension {by!r}; expected one of {DIMENSIONS}")


def _function_name() -> pl.Expr:
    return pl.concat_str(pl.col("module").fill_null("?"), pl.lit(":"), pl.col("name"))


#: the figures a run without Darshan logs did not measure
IO_FIGURES = r"^(io_time_s|read_bytes|write_bytes|read_ops|write_ops|files)_(before|after|delta|rel)$"


def io_captured(summary: dict[str, Any]) -> bool:
    """Whether the run recorded its I/O (Darshan logs were read)."""
    return (summary.get("io") or {}).get("captured", True) is not False


def without_unmeasured_io(d: pl.DataFrame) -> pl.DataFrame:
    """``d`` with its I/O figures null: unknown, where a side recorded no I/O (their sums read
    0 there, which would claim that nothing was read or written)."""
    return d.with_columns(
        pl.lit(None, pl.Float64).alias(c) for c in d.columns if re.match(IO_FIGURES, c))


def has_spans(tables: dict[str, pl.DataFrame]) -> bool:
    """Whether the run's tasks ran in Dask spans the user named (an output folder written
    before spans were recorded has no ``span`` column)."""
    return "span" in tables["tasks"].columns and spans.has_spans(tables["tasks"])


def samples(tables: dict[str, pl.DataFrame], by: str, run: int = 0) -> pl.DataFrame:
    """Per-execution figures of one run: ``item, run, wall`` (+ ``cpu, io, rest`` per prefix):
    the distributions the rank test compares."""
    if by in TASK_GROUPS:
        t = tables["tasks"].filter(pl.col(by).is_not_null())
        return t.select(item=pl.col(by), run=pl.lit(run), wall=pl.col("duration_s"),
                        cpu=pl.col("cpu_s"), io=pl.col("io_time_s").fill_null(0),
                        rest=pl.col("duration_s") - pl.col("cpu_s")
                        - pl.col("io_time_s").fill_null(0))
    if by == "file":
        return tables["task_files"].group_by(item="path", e="execution_id").agg(
            wall=pl.col("io_time_s").sum()).select("item", run=pl.lit(run), wall="wall")
    f = tables["task_functions"]
    return f.group_by(item=_function_name(), e="execution_id").agg(
        wall=pl.col("tsub_s").sum()).select("item", run=pl.lit(run), wall="wall")


def mean_profile(profiles: list[pl.DataFrame]) -> pl.DataFrame:
    """The mean of several runs' profiles of one side (an item absent from a run counts 0 there);
    ``<count>_range`` holds each count's run-to-run range (max − min)."""
    if len(profiles) == 1:
        return profiles[0]
    metrics = [c for c in profiles[0].columns if c != "item"]
    items = pl.concat([p.select("item") for p in profiles]).unique()
    full = [items.join(p, on="item", how="left").with_columns(
        [pl.col(m).fill_null(0).cast(pl.Float64) for m in metrics]) for p in profiles]
    stacked = pl.concat(full)
    counts = [c for c in metrics if any(c in v for v in COUNTS.values())]
    return stacked.group_by("item").agg(
        *[pl.col(m).mean() for m in metrics],
        *[(pl.col(m).max() - pl.col(m).min()).alias(f"{m}_range") for m in counts])


def _timing_tests(sb: pl.DataFrame | None, sa: pl.DataFrame | None,
                  timings: tuple[str, ...]) -> pl.DataFrame:
    """Per item: ``p_<t>`` (rank test p-value, null: not judged), ``<t>_changed`` for each
    timing, ``judged`` (both sides had enough executions)."""
    schema = {"item": pl.String, "judged": pl.Boolean,
              **{f"p_{t}": pl.Float64 for t in timings},
              **{f"{t}_changed": pl.Boolean for t in timings}}
    if sb is None or sa is None:
        return pl.DataFrame(schema=schema)
    by_b = {k[0]: g for k, g in sb.group_by("item")}
    by_a = {k[0]: g for k, g in sa.group_by("item")}
    rows = []
    for item in sorted(set(by_b) & set(by_a), key=str):
        b, a = by_b[item], by_a[item]
        row: dict[str, Any] = {"item": str(item), "judged": False}
        for t in timings:
            res = rank_test(b[t].drop_nulls().to_numpy(), a[t].drop_nulls().to_numpy())
            row[f"p_{t}"], row[f"{t}_changed"] = None, False
            if res is None:
                continue
            row["judged"] = True
            p, direction = res
            means_b = b.group_by("run").agg(pl.col(t).mean())[t].drop_nulls().to_list()
            means_a = a.group_by("run").agg(pl.col(t).mean())[t].drop_nulls().to_list()
            apart = runs_apart(means_b, means_a)
            row[f"p_{t}"] = p
            row[f"{t}_changed"] = bool(p < ALPHA and direction != 0 and apart is not False)
        rows.append(row)
    return pl.DataFrame(rows, schema=schema)


def _count_changes(out: pl.DataFrame, counts: tuple[str, ...]) -> pl.Expr:
    """The counts that moved beyond the tolerance and the run-to-run range, as a comma list."""
    parts = []
    for m in counts:
        if f"{m}_before" not in out.columns:
            continue
        b, a = pl.col(f"{m}_before"), pl.col(f"{m}_after")
        spread = pl.lit(0.0)
        for side in ("before", "after"):
            if f"{m}_range_{side}" in out.columns:
                spread = pl.max_horizontal(spread, pl.col(f"{m}_range_{side}").fill_null(0))
        moved = ((a - b).abs() > COUNT_TOLERANCE * pl.max_horizontal(b.abs(), a.abs()))
        parts.append(pl.when(moved & ((a - b).abs() > spread)).then(pl.lit(m)))
    return pl.concat_str(parts, separator=", ", ignore_nulls=True).replace("", None)


def diff(before: pl.DataFrame, after: pl.DataFrame, samples_before: pl.DataFrame | None = None,
         samples_after: pl.DataFrame | None = None, *, by: str = "prefix",
         exact_calls: bool = True, span_s: float | None = None) -> pl.DataFrame:
    """Join two sides' profiles; add ``<m>_delta``/``<m>_rel`` for every metric, the judgement
    (``counts_changed``, ``p_<timing>``/``<timing>_changed``, ``evidence``, ``stretched``,
    ``significant``) and ``rank``. Without samples no timing is judged: only counts speak.
    ``exact_calls=False``: the function profiles' ``ncall`` are stack samples, not a count.
    ``span_s``: the job's span; a timing change below ``JOB_FLOOR`` of it is not named."""
    out = _joined(before, after)
    counts = tuple(c for c in COUNTS[by] if exact_calls or c != "ncall")
    timings = TIMINGS[by]
    tests = _timing_tests(samples_before, samples_after, timings)
    out = out.with_columns(pl.col("item").cast(pl.String)).join(tests, on="item", how="left")
    out = out.with_columns([pl.col(f"{t}_changed").fill_null(False) for t in timings]
                           ).with_columns(judged=pl.col("judged").fill_null(False),
                                          counts_changed=_count_changes(out, counts))
    nb, na = pl.col("executions_before"), pl.col("executions_after")
    few = (~pl.col("judged") & (nb > 0) & (na > 0) & (pl.col("wall_s_delta") != 0))
    out = out.with_columns(evidence=pl.when(few).then(
        pl.format("too few executions to judge timing ({} → {}; a rank test needs {} a side)",
                  nb.cast(pl.Int64), na.cast(pl.Int64), pl.lit(MIN_EXECUTIONS))))
    out = _material(out, by, timings, span_s)
    timing_changed = pl.any_horizontal(
        [pl.col(f"{t}_changed") for t in timings if t in PER_EXECUTION])
    out = out.with_columns(*_stretched(by))
    contention = pl.col("stretched") & pl.col("cpu_bound")
    out = out.with_columns(
        significant=pl.col("counts_changed").is_not_null() | (timing_changed & ~contention),
        evidence=pl.when(contention).then(pl.lit(
            "CPU per execution unchanged: a CPU-bound prefix waiting longer or shorter for a "
            "core, which the machine's load and the concurrency decide, not this prefix"))
        .otherwise(pl.col("evidence")))
    return rank(out, by)


def _joined(before: pl.DataFrame, after: pl.DataFrame) -> pl.DataFrame:
    """The two sides' profiles side by side (``<m>_before``, ``<m>_after``; an item one side
    lacks has 0 there) with ``<m>_delta`` and ``<m>_rel`` (null: nothing before)."""
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
    return out.drop([c for c in out.columns if "_range" in c and not c.endswith(
        ("_range_before", "_range_after"))])


#: timing -> the summed column its per-execution change is taken from ("rest" is computed)
PER_EXECUTION = {"wall": "wall_s", "cpu": "cpu_s", "io": "io_time_s"}


def _material(out: pl.DataFrame, by: str, timings: tuple[str, ...], span_s: float | None
              ) -> pl.DataFrame:
    """``<t>_changed`` kept where the change per execution is material to the row's own time
    per execution (a 0.1 ms shift of a 100 ms task is real, but nobody waits for it) and the
    total is above ``JOB_FLOOR`` of the job's span."""
    nb, na = pl.col("executions_before"), pl.col("executions_after")
    if by in TASK_GROUPS:
        out = out.with_columns(rest_b=pl.col("wall_s_before") - pl.col("cpu_s_before")
                               - pl.col("io_time_s_before"),
                               rest_a=pl.col("wall_s_after") - pl.col("cpu_s_after")
                               - pl.col("io_time_s_after"))
    wall_b = pl.col("wall_s_before") / pl.when(nb > 0).then(nb).otherwise(None)

    def moved(t: str) -> pl.Expr:
        if t == "rest":
            b, a = pl.col("rest_b"), pl.col("rest_a")
        else:
            b, a = pl.col(f"{PER_EXECUTION[t]}_before"), pl.col(f"{PER_EXECUTION[t]}_after")
        d = a / pl.when(na > 0).then(na).otherwise(None) - b / pl.when(nb > 0).then(nb
                                                                                ).otherwise(None)
        total = a - b if t == "rest" else pl.col(f"{PER_EXECUTION[t]}_delta")
        floor = JOB_FLOOR * (span_s or 0.0)
        return ((d.abs() > MATERIAL * wall_b) & (total.abs() > floor)).fill_null(False)

    out = out.with_columns([(pl.col(f"{t}_changed") & moved(t)).alias(f"{t}_changed")
                            for t in timings])
    return out.drop("rest_b", "rest_a") if by in TASK_GROUPS else out


def _stretched(by: str) -> tuple[pl.Expr, pl.Expr]:
    """``stretched``: longer or shorter at unchanged CPU per execution, counts and I/O time;
    ``cpu_bound``: CPU at least ``CPU_BOUND`` of the task time. Both, for a prefix: waiting for
    a core, which the machine's load or the concurrency decide (over all rows, by
    ``machine_change``), never this prefix's own change (a coroutine suspended longer on the
    event loop is not waiting for a core)."""
    if by not in TASK_GROUPS:
        return pl.lit(False).alias("stretched"), pl.lit(False).alias("cpu_bound")
    stretched = (pl.col("wall_changed") & ~pl.col("cpu_changed") & ~pl.col("io_changed")
                 & pl.col("counts_changed").is_null()
                 & (pl.col("awaiting_s_delta").abs() < 0.5 * pl.col("wall_s_delta").abs()))
    wall = pl.col("wall_s_before")
    cpu_bound = pl.when(wall > 0).then(pl.col("cpu_s_before") / wall >= CPU_BOUND
                                        ).otherwise(False)
    return stretched.alias("stretched"), cpu_bound.alias("cpu_bound")


def rank(d: pl.DataFrame, by: str) -> pl.DataFrame:
    """Named rows first, then by contribution to the job span's change (prefixes), the summed
    time's change, the bytes' change; ``rank`` from 1."""
    keys = [pl.col("significant").not_()]
    if "span_s_delta" in d.columns:
        keys.append(pl.col("span_s_delta").abs().neg())
    keys.append(pl.col("wall_s_delta").abs().neg())
    if "read_bytes_delta" in d.columns:
        keys.append((pl.col("read_bytes_delta").abs() + pl.col("write_bytes_delta").abs()).neg())
    d = d.drop("rank") if "rank" in d.columns else d
    return d.sort([*keys, pl.col("item")]).with_row_index("rank", offset=1)


def concurrency_differences(setup: list[str]) -> list[str]:
    return [s for s in setup if s.split(":", 1)[0].split(".", 1)[0] in CONCURRENCY_KEYS]


#: the host was more (less) loaded in AFTER when the processes runnable per CPU rose (fell) by
#: at least this many: a busy process more per CPU (the job's own threads are among them, so a
#: step that waits more moves them by a fraction: 1.4 -> 1.9 with a planted sleep)
RUNNABLE_PER_CPU = 1.0
#: ... or other processes' CPU rose (fell) by at least this share of the host's CPUs (0.62 ->
#: 0.96 cores of 2 came and went with the other tests of a suite)
OTHER_CPU_SHARE = 0.25


def _side_load(summaries: list[dict[str, Any]]) -> dict[str, float] | None:
    """One side's host load, the mean of its runs (hosts added up): processes runnable per
    CPU, other processes' CPU (cores and share of the CPUs), load average per CPU; None when
    a run recorded none (an older collector, an imported run)."""
    runs = []
    for s in summaries:
        hosts = [h for h in s.get("host_load") or [] if h.get("cpus")]
        if not hosts:
            return None
        cpus = sum(h["cpus"] for h in hosts)
        fig: dict[str, float] = {"cpus": cpus}
        for name, key in (("runnable", "runnable_mean"), ("other_cores", "other_cores"),
                          ("load1", "load1_mean")):
            vals = [h.get(key) for h in hosts]
            if all(v is not None for v in vals):
                fig[name] = float(sum(vals))
        runs.append(fig)
    return {k: sum(r[k] for r in runs) / len(runs) for k in runs[0]
            if all(k in r for r in runs)}


def load_change(before: list[dict[str, Any]], after: list[dict[str, Any]]
                ) -> tuple[int, str] | None:
    """How the hosts' load moved from BEFORE to AFTER (from the runs' summaries): ``(+1: more
    loaded, -1: less, 0: about the same; a clause with the figures)``; None when a side did
    not record it."""
    b, a = _side_load(before), _side_load(after)
    if b is None or a is None:
        return None
    parts, ways = [], []
    if "runnable" in b and "runnable" in a:
        rb, ra = b["runnable"] / b["cpus"], a["runnable"] / a["cpus"]
        parts.append(f"processes runnable per CPU {rb:.1f} → {ra:.1f}")
        ways.append(0 if abs(ra - rb) < RUNNABLE_PER_CPU else (1 if ra > rb else -1))
    if "other_cores" in b and "other_cores" in a:
        ob, oa = b["other_cores"], a["other_cores"]
        parts.append(f"CPU of other processes {ob:.2f} → {oa:.2f} cores of {a['cpus']:.0f}")
        share = oa / a["cpus"] - ob / b["cpus"]
        ways.append(0 if abs(share) < OTHER_CPU_SHARE else (1 if share > 0 else -1))
    if "load1" in b and "load1" in a:
        parts.append(f"load average {b['load1']:.1f} → {a['load1']:.1f}")
    if not parts:
        return None
    way = 1 if 1 in ways and -1 not in ways else (-1 if -1 in ways and 1 not in ways else 0)
    return way, "; ".join(parts)


def machine_change(d: pl.DataFrame, setup: list[str], load: tuple[int, str] | None = None
                   ) -> tuple[pl.DataFrame, str | None]:
    """Whether the machine or the concurrency changed rather than one prefix: two or more
    prefixes whose executions take longer (or shorter) at unchanged CPU per execution, counts
    and I/O time, a setup difference in workers, threads, hosts or versions, or (``load``:
    ``load_change``) a host more or less loaded while prefixes' timings moved that way alone.
    Returns the prefix diff with those rows no longer ``significant`` (they are the
    machine's, column ``machine``) and one sentence, or the diff unchanged and None."""
    conc = concurrency_differences(setup)
    cpu = d.filter(pl.col("stretched") & pl.col("cpu_bound"))
    up = cpu.filter(pl.col("wall_s_delta") > 0).height
    way = 1 if up >= cpu.height - up else -1
    loaded = load is not None and load[0] != 0
    if load is not None and loaded:
        way = load[0]
    agree = cpu.filter(pl.col("wall_s_delta") * way > 0).height
    # timings alone (counts and CPU per execution unchanged) that moved the way the load did
    timing_only = (pl.col("counts_changed").is_null() & ~pl.col("cpu_changed")
                   & (pl.col("significant") | pl.col("stretched")))
    moved = d.filter(timing_only & (pl.col("wall_s_delta") * way > 0)).height
    if agree < 2 and not conc and not (loaded and moved):
        return d.with_columns(machine=pl.lit(False)), None
    # with the machine changed, a row whose task time moved the same way, at unchanged counts
    # and CPU per execution, by no more than the least stretched CPU-bound prefix, cannot be
    # told apart from the machine (sleeps and I/O waits wake later on a loaded machine: a
    # throttled read was seen 2.4x as long beside CPU burners); it is counted with it and named
    # in its line. One that moved further (a sleep three times as long) is still named. With
    # the host's load recorded and moved that way, no timing alone can be told apart from it.
    reach = cpu.filter(pl.col("wall_s_delta") * way > 0)["wall_s_rel"].abs().min()
    same_way = (pl.col("stretched") & pl.col("cpu_bound")) | (timing_only if loaded else (
        pl.col("counts_changed").is_null() & ~pl.col("cpu_changed")
        & (pl.col("wall_s_rel").abs() <= (reach if reach is not None else 0.0))))
    stretched = d.filter(same_way & (pl.col("wall_s_delta") * way > 0)).sort(
        pl.col("span_s_delta").abs(), pl.col("wall_s_delta").abs(), descending=True)
    parts = []
    if loaded and load is not None:
        parts.append(f"the hosts were {'more' if way > 0 else 'less'} loaded ({load[1]})")
    if conc:
        parts.append("the setup differs in " + "; ".join(conc))
    if stretched.height:
        names = ", ".join(map(str, stretched["item"].head(6).to_list()))
        more = f" and {stretched.height - 6} more" if stretched.height > 6 else ""
        parts.append(
            f"{stretched.height} unrelated prefix(es) ({names}{more}) take "
            f"{'longer' if way > 0 else 'less time'} per execution "
            f"at unchanged counts and CPU per execution (task time "
            f"{exact_sum(stretched['wall_s_delta']):+.3f} s, CPU {exact_sum(stretched['cpu_s_delta']):+.3f}"
            f" s, job span share {exact_sum(stretched['span_s_delta']):+.3f} s)")
        if not conc and load is None:
            parts.append("host load is not recorded: other processes on the machine, more "
                         "threads per core, a different CPU or versions stretch every "
                         "CPU-bound task alike")
        elif not conc and not loaded and load is not None:
            parts.append(f"host load about the same ({load[1]}): more threads per core, a "
                         "different CPU or versions stretch every CPU-bound task alike")
    text = "The machine or the concurrency changed, not one prefix: " + "; ".join(parts) + "."
    d = d.with_columns(machine=pl.col("item").is_in(stretched["item"].to_list()))
    d = d.with_columns(significant=pl.col("significant") & ~pl.col("machine"))
    return rank(d, "prefix"), text


# concurrency and the machine first: they change the meaning of every other line
SETUP_KEYS = ("workers", "nthreads", "hosts", "versions", "collector_options", "darshan",
              "dask_config", "command", "job_environment")


def setup_differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Differences in setup (from summary.json) that change the meaning of the comparison."""
    out = []
    if before.get("source_format") != after.get("source_format"):
        out.append(f"input format: {before.get('source_format')} → {after.get('source_format')}")
    fb, fa = before.get("facts", {}), after.get("facts", {})
    for k in SETUP_KEYS:
        out += _changes(k, fb.get(k), fa.get(k))
    mb = set(before.get("io", {}).get("segments_by_method", {}))
    ma = set(after.get("io", {}).get("segments_by_method", {}))
    if mb != ma:
        out.append(f"I/O attribution methods: {', '.join(sorted(mb)) or 'no DXT'} → "
                   f"{', '.join(sorted(ma)) or 'no DXT'}")
    return out


def _changes(name: str, b: Any, a: Any) -> list[str]:
    """``name: before → after``; for two mappings one line per changed entry (``versions.dask:
    2026.8.0 → 2026.9.0``), not the whole of both."""
    if b == a:
        return []
    if isinstance(b, dict) and isinstance(a, dict):
        return [line for k in sorted(set(b) | set(a), key=str)
                for line in _changes(f"{name}.{k}", b.get(k), a.get(k))]
    tb, ta = _text(b), _text(a)
    if max(len(tb), len(ta)) > SETUP_TEXT_LIMIT:  # long commands: from the first word that differs
        same = _common_words(tb, ta)
        tb, ta = ("… " * bool(same) + " ".join(t.split()[same:]) for t in (tb, ta))
    return [f"{name}: {_short(tb)} → {_short(ta)}"]


SETUP_TEXT_LIMIT = 120


def _common_words(b: str, a: str) -> int:
    n = 0
    for wb, wa in zip(b.split(), a.split(), strict=False):
        if wb != wa:
            break
        n += 1
    return n


def _text(v: Any) -> str:
    """A setup value as text: lists joined, no Python brackets or quotes."""
    if v is None:
        return "(none)"
    if isinstance(v, list | tuple):
        return " ".join(map(str, v))
    if isinstance(v, dict):
        return ", ".join(f"{k}={x}" for k, x in v.items()) or "(empty)"
    return str(v)


def _short(s: str) -> str:
    return s if len(s) <= SETUP_TEXT_LIMIT else s[: SETUP_TEXT_LIMIT - 1] + "…"


def exact_call_counts(summary: dict[str, Any]) -> bool:
    """False when the run's function profiles came from the stack sampler (``ncall`` counts
    samples); imported runs and Yappi profiles count calls."""
    options = (summary.get("facts") or {}).get("collector_options") or {}
    return options.get("profile") != "sample"
