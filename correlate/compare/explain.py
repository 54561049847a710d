"""Plain-language explanations of a comparison (``correlate.compare.changes``)'s named rows, and the job's totals line.

``explanations(d, by)`` turns the named rows of a ``correlate.compare.changes.diff`` frame into
``(item, sentence)`` pairs: a prefix's counts first (facts), then CPU per execution, I/O time
(with bytes, or "slower storage" when bytes are unchanged), then the rest of its task time,
split into waiting for a core at the contention before, the machine (when a machine change was
found) and what no source explains; waiting, transfers and spill beside it. ``totals_line``
sums up the job: span, summed task time, executions.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from correlate.compare.changes import exact_sum
from correlate.compare.stats import COUNT_TOLERANCE, MATERIAL
from correlate.reports.cells import code
from correlate.reports.fmt import human_bytes
from correlate.summary import destinations

#: a part of a change is named when it carries more than this share of it
PART = 0.25


def _pct(x: float | None) -> str:
    return "new" if x is None else f"{x:+.0%}"


def _same(b: float, a: float) -> bool:
    return abs(a - b) <= COUNT_TOLERANCE * max(abs(a), abs(b))


def _bytes_change(b: float, a: float) -> str:
    """``+100% (16.0 MiB → 32.0 MiB)``; ``unchanged (…)``; ``32.0 MiB, none before``."""
    if not b:
        return f"{human_bytes(a)}, none before" if a else "none moved"
    if _same(b, a):
        return f"unchanged ({human_bytes(b)} → {human_bytes(a)})"
    return f"{(a - b) / b:+.0%} ({human_bytes(b)} → {human_bytes(a)})"


def _per_exec(row: dict[str, Any], m: str, side: str) -> float:
    n = row[f"executions_{side}"]
    return row[f"{m}_{side}"] / n if n else 0.0


def _other(row: dict[str, Any], side: str) -> float:
    """Task time of one side that is neither thread CPU nor time inside I/O calls."""
    return row[f"wall_s_{side}"] - row[f"cpu_s_{side}"] - row[f"io_time_s_{side}"]


def _n(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def _count_reasons(row: dict[str, Any]) -> list[str]:
    changed = set((row.get("counts_changed") or "").split(", ")) - {""}
    out = []
    nb, na = row["executions_before"], row["executions_after"]
    if "executions" in changed:
        out.append(f"{na / nb:.1f}× the executions ({_n(nb)} → {_n(na)})")
    for m, what in (("read_bytes", "bytes read"), ("write_bytes", "bytes written")):
        if m in changed:
            out.append(f"{what} {_bytes_change(row[f'{m}_before'], row[f'{m}_after'])}")
    if "files" in changed:
        out.append(f"files touched {_n(row['files_before'])} → {_n(row['files_after'])}")
    if "lost" in changed:
        out.append(f"executions lost with a worker that died {_n(row['lost_before'])} → "
                   f"{_n(row['lost_after'])} (their results recomputed)")
    return out


def _context(row: dict[str, Any], part: float) -> list[str]:
    """What happens before an execution starts: waiting, input transfers, spill read-back."""
    changed = set((row.get("counts_changed") or "").split(", "))
    out = []
    if abs(row["wait_s_delta"]) > part:
        out.append(f"waiting (dependencies, queue, a thread, data from outside Dask) "
                   f"{row['wait_s_delta']:+.3f} s")
    if "transfer_bytes" in changed or abs(row["transfer_s_delta"]) > part:
        out.append("input transfers " + _bytes_change(row["transfer_bytes_before"],
                                                      row["transfer_bytes_after"])
                   + f", {row['transfer_s_delta']:+.3f} s")
    if "spilled_bytes" in changed:
        out.append("results spilled to disk "
                   + _bytes_change(row["spilled_bytes_before"], row["spilled_bytes_after"]))
    if abs(row["input_read_back_s_delta"]) > part:
        out.append(f"Dask's disk-read (inputs out of the store) {row['input_read_back_s_delta']:+.3f} s")
    return out


def _prefix_reasons(row: dict[str, Any], machine: bool = False, io_known: bool = True) -> str:
    """Why one prefix changed: its counts first (facts), then CPU, I/O time and the rest of its
    task time, each named when the rank test says it changed or it carries more than ``PART``
    of the change; the rest is split into contention (the same wall per CPU second as before,
    for a prefix whose CPU grew), the machine (when ``machine``) and what no source explains."""
    dwall = row["wall_s_delta"]
    part = max(PART * abs(dwall), MATERIAL * row["wall_s_before"], 1e-3)
    nb, na = row["executions_before"], row["executions_after"]
    head = f"task time {dwall:+.3f} s ({_pct(row['wall_s_rel'])})"
    if row.get("span_s_delta") is not None:
        head = f"job span share {row['span_s_delta']:+.3f} s, " + head
    if not nb:
        return f"{head} — new in this run ({_n(na)} executions)"
    if not na:
        return f"{head} — absent from this run ({_n(nb)} executions before)"
    reasons = _count_reasons(row)
    more = "executions" in (row.get("counts_changed") or "")
    cpu_named = _named(row, "cpu", part)
    reasons += _cpu_reasons(row, cpu_named, more)
    reasons += _io_reasons(row, part, reasons)
    contention = _contention(row, cpu_named)
    if contention > max(MATERIAL * row["wall_s_before"], 1e-3):
        reasons.append(f"{contention:+.3f} s more waiting for a core at the same contention "
                       "as before (its task time is CPU stretched by the threads sharing "
                       "the cores)")
    reasons += _rest_reasons(row, part, contention, more, machine=machine, io_known=io_known)
    if abs(row.get("awaiting_s_delta") or 0.0) > part:  # coroutines: in wall, but suspended
        reasons.append(f"awaiting {row['awaiting_s_delta']:+.3f} s of it (coroutine tasks "
                       "suspended on the event loop)")
    if not reasons:
        reasons.append("spread over CPU, I/O and unmeasured time, no part dominating")
    text = f"{head} — " + "; ".join(reasons)
    if row.get("evidence"):
        text += f" ({row['evidence']})"
    context = _context(row, part)
    if context:
        text += ". Before the executions, not in task time: " + "; ".join(context) + "."
    return text


def _named(row: dict[str, Any], timing: str, part: float) -> bool:
    """Whether a timing's change is named: the rank test says it changed or, where it could
    not judge, it carries more than ``part``."""
    delta = row[{"cpu": "cpu_s_delta", "io": "io_time_s_delta"}[timing]]
    return bool(row.get(f"{timing}_changed")) or (not row.get("judged") and abs(delta) > part)


def _cpu_reasons(row: dict[str, Any], named: bool, more: bool) -> list[str]:
    dcpu = row["cpu_s_delta"]
    cpu_b, cpu_a = _per_exec(row, "cpu_s", "before"), _per_exec(row, "cpu_s", "after")
    if named and cpu_b:
        return [f"CPU per execution {cpu_a / cpu_b - 1:+.0%} ({dcpu:+.3f} s in all)"]
    if named:
        return [f"CPU {dcpu:+.3f} s (none measured before)"]
    return ["CPU per execution unchanged"] if cpu_b and more else []


def _io_reasons(row: dict[str, Any], part: float, reasons: list[str]) -> list[str]:
    """The I/O time's change, with the bytes' unless ``reasons`` (the counts') name them."""
    dio, io_rel = row["io_time_s_delta"], row["io_time_s_rel"]
    bytes_b = row["read_bytes_before"] + row["write_bytes_before"]
    bytes_a = row["read_bytes_after"] + row["write_bytes_after"]
    if _named(row, "io", part):
        io = f"I/O time {_pct(io_rel)} ({dio:+.3f} s)"
        if bytes_b and _same(bytes_b, bytes_a):
            io += " while bytes are unchanged: slower storage, not more data"
        elif not any(r.startswith("bytes") for r in reasons):
            io += f" with bytes {_bytes_change(bytes_b, bytes_a)}"
        return [io]
    if any(r.startswith("bytes") for r in reasons):
        return [f"I/O time about the same ({dio:+.3f} s)"]
    return []


def _contention(row: dict[str, Any], cpu_named: bool) -> float:
    """The rest's growth a CPU-bound task's new CPU explains: it shares cores, so its wall per
    CPU second before, applied to the new CPU (0: not such a case)."""
    dcpu, other_b = row["cpu_s_delta"], _other(row, "before")
    dother = _other(row, "after") - other_b
    if not (cpu_named and dcpu > 0 and _per_exec(row, "cpu_s", "before") and other_b > 0
            and row.get("cpu_bound", True)):
        return 0.0
    return float(min(max(other_b / row["cpu_s_before"] * dcpu, 0.0), max(dother, 0.0)))


def _rest_reasons(row: dict[str, Any], part: float, contention: float, more: bool, *,
                  machine: bool, io_known: bool) -> list[str]:
    """The rest of the task time, less ``contention``: the machine's (when ``machine``), a
    core's wait beyond the contention before, or time no source explains."""
    nb, na, dwall = row["executions_before"], row["executions_after"], row["wall_s_delta"]
    other_b = _other(row, "before")
    residual = _other(row, "after") - other_b - contention
    per_exec_same = (more and other_b > 0
                     and abs((_other(row, "after") / na) / (other_b / nb) - 1) <= 0.1)
    rest_named = (bool(row.get("rest_changed")) or not row.get("judged")) and abs(residual) > part
    if not rest_named or per_exec_same:
        return []
    whole = abs(residual - dwall) <= 0.1 * abs(dwall)
    # without Darshan the time inside I/O calls is in this rest, unmeasured
    if io_known:
        amount = "none of it is CPU or I/O" if whole else (
            f"{residual:+.3f} s of it is neither CPU nor I/O")
    else:
        amount = "none of it is CPU (I/O was not captured)" if whole else (
            f"{residual:+.3f} s of it is not CPU (I/O was not captured)")
    if machine:
        return [f"{amount}: the machine or the concurrency changed (see its line), not this "
                "prefix"]
    if contention and residual > 0:  # CPU-bound, and its CPU grew: still a core's wait
        return [f"{amount}: more waiting for a core than the contention before gives "
                "(the machine's load or the concurrency grew)"]
    return [f"{amount}: time inside the task that no source explains "
            "(sleeping, locks, GIL, external calls)"]


def _file_reasons(row: dict[str, Any]) -> str:
    dio = row["io_time_s_delta"]
    bytes_b = row["read_bytes_before"] + row["write_bytes_before"]
    bytes_a = row["read_bytes_after"] + row["write_bytes_after"]
    text = f"I/O time {dio:+.3f} s ({_pct(row['io_time_s_rel'])})"
    if bytes_b and _same(bytes_b, bytes_a):
        return text + " while bytes are unchanged: slower storage, not more data"
    return text + f" with bytes {_bytes_change(bytes_b, bytes_a)}"


def _function_reasons(row: dict[str, Any], call_counts: bool = True) -> str:
    text = f"exclusive time {row['wall_s_delta']:+.3f} s ({_pct(row['wall_s_rel'])})"
    cb, ca = row["ncall_before"], row["ncall_after"]
    if call_counts and cb and ca and not _same(cb, ca):
        text += f", {ca / cb:.1f}× the calls ({cb:,.0f} → {ca:,.0f})"
    return text


def explanations(d: pl.DataFrame, by: str, *, top: int = 5, call_counts: bool = True,
                 machine: bool = False, io_known: bool = True) -> list[tuple[str, str]]:
    """``(item, why)`` for the named top rows (empty: nothing beyond noise).
    ``call_counts=False``: ``ncall`` are stack samples (``--profile sample``), not calls.
    ``machine``: a machine or concurrency change was found (the rest of a row's change is
    blamed on it). ``io_known=False``: a side recorded no I/O (no Darshan logs)."""
    rows = d.filter(pl.col("significant")).head(top).iter_rows(named=True)
    if by == "function":
        return [(str(r["item"]), _function_reasons(r, call_counts)) for r in rows]
    if by == "file":
        return [(str(r["item"]), _file_reasons(r)) for r in rows]
    return [(str(r["item"]), _prefix_reasons(r, machine, io_known)) for r in rows]


def explain(d: pl.DataFrame, by: str, *, top: int = 5, call_counts: bool = True) -> list[str]:
    """Plain-language Markdown lines for the named top rows (empty list: nothing beyond
    noise); the item is a code span."""
    return [f"{code(item)}: {why}"
            for item, why in explanations(d, by, top=top, call_counts=call_counts)]


def _mean(xs: list[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return math.fsum(vals) / len(vals) if vals else None


def totals_line(before: pl.DataFrame, after: pl.DataFrame, d: pl.DataFrame, *,
                spans: tuple[list[float | None], list[float | None]] = ([], []),
                runs: tuple[int, int] = (1, 1)) -> str:
    """The whole job: its span (first task start to last task end) before → after, the task
    time summed over all executions, the executions, and how much of the span's change the
    named rows carry. ``before``/``after`` are prefix profiles (means with several runs)."""
    wb, wa = (math.fsum(sorted(p["wall_s"].fill_null(0).to_list())) for p in (before, after))
    nb, na = float(before["executions"].sum()), float(after["executions"].sum())
    text = ""
    sb, sa = _mean(spans[0]), _mean(spans[1])
    if sb is not None and sa is not None:
        text = (f"Job span (first task start to last task end): {sb:.3f} s → {sa:.3f} s "
                f"({sa - sb:+.3f} s, {_pct((sa - sb) / sb if sb else None)}). ")
    text += (f"Task time summed over all executions: {wb:.3f} s → {wa:.3f} s "
             f"({wa - wb:+.3f} s, {_pct((wa - wb) / wb if wb else None)}); executions "
             f"{_n(nb)} → {_n(na)}.")
    lb, la = (float(p["lost"].sum()) if "lost" in p.columns else 0.0 for p in (before, after))
    if lb or la:
        text += (f" Of them lost with a worker that died (their results recomputed): "
                 f"{_n(lb)} → {_n(la)}.")
    if runs != (1, 1):
        text += f" Means of {runs[0]} run(s) before and {runs[1]} after."
    named = d.filter(pl.col("significant"))
    if named.height and sb is not None and sa is not None and sa != sb:
        share = exact_sum(named["span_s_delta"]) / (sa - sb)
        text += f" Named prefixes carry {share:.0%} of the span's change."
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
