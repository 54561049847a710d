"""Compare two correlated runs: what got slower, where, and why.

Pure functions over output tables. ``profile(tables, by)`` aggregates one run per prefix, file or
function; ``diff(before, after)`` joins two profiles and ranks rows by their contribution to the
change in total wall time; ``explanations(diff_frame, by)`` turns the top significant rows into
``(item, plain sentence)`` pairs (``explain`` into Markdown lines); ``totals_line`` sums up the
whole run; ``setup_differences(summary_a, summary_b)`` lists what makes the comparison less
meaningful.

A prefix's wall time is the sum of its executions' durations (start to stop on a thread); its
change is split into thread CPU, time inside I/O calls and the rest, which no source measures
(sleeping, locks, GIL, external calls). Waiting and input transfers happen before an execution
starts: they are shown as context, never as the cause of a wall change.

Noise: a row's change counts only when it is larger than ``REL_NOISE`` of its own value *and*
larger than ``ABS_NOISE_SHARE`` of the dimension's total (``dimension_total``: task wall time
for prefixes, I/O time for files, exclusive time for functions).
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from correlate.reports.aggregate import destinations
from correlate.reports.fmt import human_bytes
from correlate.reports.markdown import code

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
                                  "io_time_s", "transfer_bytes", "transfer_s", "wait_s",
                                  "spilled_bytes", "input_read_back_s", "awaiting_s")]
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


def dimension_total(before: pl.DataFrame, after: pl.DataFrame) -> float:
    """The larger of the two profiles' summed ``wall_s``: task wall time per prefix, I/O time
    per file, exclusive time per function. The absolute noise floor is a share of it."""
    return max(math.fsum(sorted(p["wall_s"].fill_null(0).to_list())) for p in (before, after))


def diff(before: pl.DataFrame, after: pl.DataFrame, *,
         total_wall_s: float | None = None) -> pl.DataFrame:
    """Join two profiles; add ``<m>_delta``/``<m>_rel`` for every metric, ``significant`` and
    ``rank`` (by |wall_s_delta|). ``total_wall_s`` defaults to ``dimension_total``: a file is
    judged against all I/O time, a function against all profiled time, so a change spread over
    many files is not lost under the run's task wall time."""
    if total_wall_s is None:
        total_wall_s = dimension_total(before, after)
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


def _bytes_change(b: float, a: float) -> str:
    """``+100% (16.0 MiB → 32.0 MiB)``; ``unchanged (…)``; ``32.0 MiB, none before``."""
    if not b:
        return f"{human_bytes(a)}, none before" if a else "none moved"
    rel = (a - b) / b
    if abs(rel) <= REL_NOISE:
        return f"unchanged ({human_bytes(b)} → {human_bytes(a)})"
    return f"{rel:+.0%} ({human_bytes(b)} → {human_bytes(a)})"


def _per_exec(row: dict[str, Any], m: str, side: str) -> float:
    n = row[f"executions_{side}"]
    return row[f"{m}_{side}"] / n if n else 0.0


def _other(row: dict[str, Any], side: str) -> float:
    """Wall time of one side that is neither thread CPU nor time inside I/O calls."""
    return row[f"wall_s_{side}"] - row[f"cpu_s_{side}"] - row[f"io_time_s_{side}"]


def _prefix_reasons(row: dict[str, Any]) -> str:
    """Why one prefix's summed execution wall time changed. The wall delta is split into CPU,
    I/O time and the rest (no source measures it); a part is named when it carries more than a
    quarter of the change. Waiting and input transfers happen before an execution starts, so
    they are reported apart, as context, never as the cause of a wall change; so are the
    results spilled to disk and the inputs read back from it."""
    dwall = row["wall_s_delta"]
    part = 0.25 * abs(dwall)
    nb, na = row["executions_before"], row["executions_after"]
    if not nb:
        return f"wall {dwall:+.3f} s — new in this run ({na} executions)"
    if not na:
        return f"wall {dwall:+.3f} s — absent from this run ({nb} executions before)"
    reasons = []
    more = abs(na / nb - 1) > REL_NOISE
    if more:
        reasons.append(f"{na / nb:.1f}× the executions ({nb} → {na})")
    dio, io_rel = row["io_time_s_delta"], row["io_time_s_rel"]
    bytes_b = row["read_bytes_before"] + row["write_bytes_before"]
    bytes_a = row["read_bytes_after"] + row["write_bytes_after"]
    same_bytes = bool(bytes_b) and abs(bytes_a - bytes_b) <= REL_NOISE * bytes_b
    if abs(dio) > part and (io_rel is None or abs(io_rel) > REL_NOISE):
        io = f"I/O time {_pct(io_rel)} ({dio:+.3f} s)"
        if same_bytes:
            reasons.append(f"{io} while bytes are unchanged: slower storage, not more data")
        else:
            reasons.append(f"{io} with bytes {_bytes_change(bytes_b, bytes_a)}")
    elif bytes_b != bytes_a and not same_bytes:
        reasons.append(f"bytes read and written {_bytes_change(bytes_b, bytes_a)}, I/O time "
                       "about the same")
    dcpu = row["cpu_s_delta"]
    cpu_b, cpu_a = _per_exec(row, "cpu_s", "before"), _per_exec(row, "cpu_s", "after")
    if cpu_b and abs(cpu_a / cpu_b - 1) > REL_NOISE and abs(dcpu) > part:
        reasons.append(f"CPU per execution {cpu_a / cpu_b - 1:+.0%} ({dcpu:+.3f} s in all)")
    elif not cpu_b and abs(dcpu) > part:
        reasons.append(f"CPU {dcpu:+.3f} s (none measured before)")
    elif cpu_b and more:
        reasons.append("CPU per execution unchanged")
    other_b, other_a = _other(row, "before"), _other(row, "after")
    dother = other_a - other_b
    per_exec_same = (more and other_b > 0
                     and abs((other_a / na) / (other_b / nb) - 1) <= REL_NOISE)
    if abs(dother) > part and not per_exec_same:
        amount = ("none of it is CPU or I/O" if abs(dother - dwall) <= REL_NOISE * abs(dwall)
                  else f"{dother:+.3f} s of it is neither CPU nor I/O")
        reasons.append(f"{amount}: time inside the task that no source explains (sleeping, "
                       "locks, GIL, external calls)")
    if not reasons:
        reasons.append("spread over CPU, I/O and unmeasured time, no part dominating")
    context = []
    dwait = row["wait_s_delta"]
    if abs(dwait) > part:
        context.append(f"waiting {dwait:+.3f} s")
    tb, ta = row["transfer_bytes_before"], row["transfer_bytes_after"]
    if tb != ta and not (tb and abs(ta - tb) <= REL_NOISE * tb):
        context.append(f"input transfers {_bytes_change(tb, ta)}")
    sb, sa = row["spilled_bytes_before"], row["spilled_bytes_after"]
    if sb != sa and not (sb and abs(sa - sb) <= REL_NOISE * sb):
        context.append(f"results spilled to disk {_bytes_change(sb, sa)}")
    dawait = row["awaiting_s_delta"]
    if abs(dawait) > part:  # coroutine tasks: inside wall, but suspended, not running
        reasons.append(f"awaiting {dawait:+.3f} s of it (coroutine tasks suspended on the "
                       "event loop)")
    dback = row["input_read_back_s_delta"]
    if abs(dback) > part:
        context.append(f"reading spilled inputs back {dback:+.3f} s")
    text = f"wall {dwall:+.3f} s ({_pct(row['wall_s_rel'])}) — " + "; ".join(reasons)
    if context:
        text += ". Before the executions, not in wall: " + "; ".join(context) + "."
    return text


def _file_reasons(row: dict[str, Any]) -> str:
    dio = row["io_time_s_delta"]
    bytes_b = row["read_bytes_before"] + row["write_bytes_before"]
    bytes_a = row["read_bytes_after"] + row["write_bytes_after"]
    text = f"I/O time {dio:+.3f} s ({_pct(row['io_time_s_rel'])})"
    if bytes_b and abs(bytes_a - bytes_b) <= REL_NOISE * bytes_b:
        return text + " while bytes are unchanged: slower storage, not more data"
    return text + f" with bytes {_bytes_change(bytes_b, bytes_a)}"


def _function_reasons(row: dict[str, Any], call_counts: bool = True) -> str:
    text = f"exclusive time {row['wall_s_delta']:+.3f} s ({_pct(row['wall_s_rel'])})"
    cb, ca = row["ncall_before"], row["ncall_after"]
    if call_counts and cb and ca and abs(ca / cb - 1) > REL_NOISE:
        text += f", {ca / cb:.1f}× the calls ({cb:,.0f} → {ca:,.0f})"
    return text


def explanations(d: pl.DataFrame, by: str, *, top: int = 5,
                 call_counts: bool = True) -> list[tuple[str, str]]:
    """``(item, why)`` for the significant top rows (empty: nothing beyond noise).
    ``call_counts=False``: the function profiles' ``ncall`` are stack samples (``--profile
    sample``), not calls, so no sentence mentions them."""
    rows = d.filter(pl.col("significant")).head(top).iter_rows(named=True)
    if by == "function":
        return [(str(r["item"]), _function_reasons(r, call_counts)) for r in rows]
    reasons = {"prefix": _prefix_reasons, "file": _file_reasons}[by]
    return [(str(r["item"]), reasons(r)) for r in rows]


def exact_call_counts(summary: dict[str, Any]) -> bool:
    """False when the run's function profiles came from the stack sampler (``ncall`` counts
    samples); imported runs and Yappi profiles count calls."""
    options = (summary.get("facts") or {}).get("collector_options") or {}
    return options.get("profile") != "sample"


def explain(d: pl.DataFrame, by: str, *, top: int = 5, call_counts: bool = True) -> list[str]:
    """Plain-language Markdown lines for the significant top rows (empty list: nothing beyond
    noise); the item is a code span."""
    return [f"{code(item)}: {why}"
            for item, why in explanations(d, by, top=top, call_counts=call_counts)]


def totals_line(before: pl.DataFrame, after: pl.DataFrame, d: pl.DataFrame) -> str:
    """One sentence on the whole run: summed execution wall time before → after, and how much of
    the change the significant rows carry. ``before``/``after`` are prefix profiles."""
    wb, wa = (math.fsum(sorted(p["wall_s"].fill_null(0).to_list())) for p in (before, after))
    nb, na = int(before["executions"].sum()), int(after["executions"].sum())
    text = (f"Task wall time summed over all executions: {wb:.3f} s → {wa:.3f} s "
            f"({wa - wb:+.3f} s, {_pct((wa - wb) / wb if wb else None)}); executions "
            f"{nb:,} → {na:,}.")
    sig = d.filter(pl.col("significant"))
    if sig.height and wa != wb:
        share = float(sig["wall_s_delta"].sum()) / (wa - wb)
        text += f" Significant per-prefix changes carry {share:.0%} of the difference."
    return text


def destinations_line(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Where the I/O went in each run (tasks, P2P shuffles, spill, known I/O of no task,
    unexplained), before → after; empty when either summary has no ``io.by_destination``.
    Shuffles are compared in total: a shuffle's id is a token of its graph, different in
    each run."""
    b, a = destinations(before), destinations(after)
    if not b or not a:
        return ""
    got = dict((name, bytes_) for name, bytes_, _share in a)
    parts = [f"{name} {_bytes_change(x or 0, got.get(name) or 0)}" for name, x, _s in b
             if name in got and (x or got.get(name))]
    return ("Where the I/O went: " + ", ".join(parts) + ".") if parts else ""


SETUP_KEYS = ("command", "workers", "nthreads", "hosts", "versions", "collector_options",
              "darshan", "dask_config", "job_environment")


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
