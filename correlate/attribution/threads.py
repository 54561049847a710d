"""Which thread ran each execution, when the source recorded no thread ids (imported runs
without ``scheduler_transition.csv``), inferred from the pthread ids of the DXT segments.

One worker process's executor threads each run one task at a time. So a segment of thread
``t`` whose midpoint lies inside the window of execution ``x`` belongs to ``x`` when ``x`` is
the only execution that could be on ``t`` at that instant: the others holding that instant are
tied to another thread, or overlap an execution already tied to ``t``. Each such segment ties
``x`` to ``t``, which in turn rules ``x`` out for the other threads and rules out, for ``t``,
every execution overlapping ``x``; this is repeated until nothing changes (segments in time
order, so the result is deterministic).

A thread is left out (its segments are not used as evidence, its ties undone) when its
segments contradict one-task-at-a-time: a segment inside some execution's window with no
execution left that could hold it on that thread (a library's helper thread serving several
running tasks, or the event loop). Both that thread and the threads whose ties took its
candidates are left out, since either may be the one that is no executor thread.

With the worker's thread count known (``nthreads``), counting adds evidence: the executions
running at one instant need a thread each (a bipartite matching over the threads they may be
on; threads that did no I/O are interchangeable slots). The main (event-loop) thread is never used: it runs Dask's
own I/O beside every task.

Attribution then (``attribute``): a segment of a thread inside an execution tied to that
thread goes to it whole (``inferred-thread``); a segment of a thread that has ties but that no
tie explains is split, as ``window-split`` does, over the executions overlapping it that could
be on its thread (not tied to another one); segments of threads without ties are left to the
helper-thread rules, as for recorded runs.
"""

from __future__ import annotations

import bisect
from collections import Counter

import numpy as np
import polars as pl

from correlate.attribution.passes import Partition, segment_pass
from correlate.attribution.shares import METHOD, IOAttribution, largest_shares, window_split
from correlate.frames.per_process import process_order

#: the columns of the per-process counts (``counts`` of ``infer``)
COUNTS = ("executions", "executions_inferred", "executions_ambiguous",
          "executions_without_evidence", "threads_inferred", "threads_left_out",
          "segments_inferred", "segments_ambiguous")


class _Threads:
    """Executions tied to each thread, as sorted disjoint intervals."""

    def __init__(self) -> None:
        self.starts: dict[int, list[int]] = {}
        self.items: dict[int, list[tuple[int, int, int]]] = {}

    def overlaps(self, t: int, s: int, e: int, x: int) -> bool:
        """Does (s, e) overlap an execution other than ``x`` tied to ``t``?"""
        starts, items = self.starts.get(t, []), self.items.get(t, [])
        # tied intervals on one thread are disjoint, so their ends are sorted too: walk back
        # from the last one starting before ``e`` while they still reach ``s``
        for j in range(bisect.bisect_right(starts, e) - 1, -1, -1):
            _a, b, y = items[j]
            if b < s:
                break
            if y != x:
                return True
        return False

    def tie(self, t: int, s: int, e: int, x: int) -> None:
        starts, items = self.starts.setdefault(t, []), self.items.setdefault(t, [])
        i = bisect.bisect_right(starts, s)
        starts.insert(i, s)
        items.insert(i, (s, e, x))


def _pairs(seg: pl.DataFrame, ex: pl.DataFrame) -> pl.DataFrame:
    """row, thread_id, mid, execution_id of every segment midpoint inside an execution."""
    return seg.join_where(ex.select("execution_id", w_start="local_start_ns",
                                    w_stop="local_stop_ns"),
                          pl.col("mid") >= pl.col("w_start"), pl.col("mid") <= pl.col("w_stop")
                          ).select("row", "thread_id", "mid", "execution_id")


def _propagate(cands: list[tuple[int, int, int, list[int]]],
               window: dict[int, tuple[int, int]], known: dict[int, int], excluded: set[int],
               nthreads: int | None = None
               ) -> tuple[dict[int, int], dict[int, int], set[int], Counter[int]]:
    """(ties, resolved segment rows → execution, pending rows, contradictions per thread).
    ``cands``: (row, thread, midpoint, executions whose window holds it), by midpoint."""
    tied = dict(known)
    threads = _Threads()
    for x, t in known.items():
        threads.tie(t, *window[x], x)
    banned: dict[int, set[int]] = {}
    resolved: dict[int, int] = {}
    pending = {row for row, t, _m, _xs in cands if t not in excluded}
    contradictions: Counter[int] = Counter()
    longest = max((e - s for s, e in window.values()), default=0)
    observed = sorted({t for _r, t, _m, _xs in cands if t not in excluded} | set(known.values()))

    def admissible(t: int, xs: list[int]) -> list[int]:
        return [x for x in xs if tied.get(x, t) == t and x not in banned.get(t, ())
                and not threads.overlaps(t, *window[x], x)]

    changed = True
    while changed:
        changed = False
        for row, t, _mid, xs in cands:
            if row not in pending:
                continue
            ok = admissible(t, xs)
            mine = [x for x in ok if tied.get(x) == t]
            if mine:
                resolved[row] = mine[0]
            elif len(ok) == 1:
                tied[ok[0]] = t
                threads.tie(t, *window[ok[0]], ok[0])
                resolved[row] = ok[0]
                changed = True
            elif not ok:
                # no execution left for it: this thread, or the one whose tie took its
                # candidates, is not running one task at a time (either may be the culprit)
                contradictions[t] += 1
                for x in xs:
                    if x in tied and tied[x] != t:
                        contradictions[tied[x]] += 1
            else:
                continue
            pending.discard(row)
        if not changed:
            changed = _look_ahead(cands, pending, window, longest, admissible, banned)
        if not changed and nthreads:
            changed = _pigeonhole(window, tied, banned, threads, observed, nthreads)
    return tied, resolved, pending, contradictions


def _look_ahead(cands: list[tuple[int, int, int, list[int]]], pending: set[int],
                window: dict[int, tuple[int, int]], longest: int, admissible, banned
                ) -> bool:
    """Rule ``x`` out for thread ``t`` when, were ``x`` on ``t``, another segment of ``t``
    outside ``x``'s window would have no execution left (every candidate it has overlaps
    ``x``). True when something was ruled out."""
    rows: dict[int, list[tuple[int, list[int]]]] = {}
    for row, t, mid, xs in cands:
        if row in pending:
            rows.setdefault(t, []).append((mid, xs))
    found = False
    for t, segs in rows.items():
        mids = [m for m, _ in segs]
        for x in sorted({x for _m, xs in segs for x in admissible(t, xs)}):
            a, b = window[x]
            lo, hi = bisect.bisect_left(mids, a - longest), bisect.bisect_right(mids, b + longest)
            for m, xs in segs[lo:hi]:
                if a <= m <= b:
                    continue
                ok = admissible(t, xs)
                if ok and all(window[y][0] <= b and window[y][1] >= a for y in ok):
                    banned.setdefault(t, set()).add(x)
                    found = True
                    break
    return found


def _matching(options: dict[int, list[int]], slots: int) -> bool:
    """Can every execution of ``options`` (execution → threads it may be on; -1 = any of
    ``slots`` threads that did no I/O) get its own thread? (augmenting paths)"""
    owner: dict[int, int] = {}
    silent = list(range(-slots, 0))  # the silent threads, interchangeable

    def place(x: int, seen: set[int]) -> bool:
        for t in options[x]:
            for slot in (silent if t == SILENT else [t]):
                if slot in seen:
                    continue
                seen.add(slot)
                if slot not in owner or place(owner[slot], seen):
                    owner[slot] = x
                    return True
        return False

    return all(place(x, set()) for x in options)


#: a thread that did no I/O (the worker has more threads than the segments show)
SILENT = 0


def _pigeonhole(window: dict[int, tuple[int, int]], tied: dict[int, int],
                banned: dict[int, set[int]], threads: _Threads, observed: list[int],
                nthreads: int) -> bool:
    """With the worker's thread count known, the executions running at one instant need one
    thread each: rule out a thread for an execution when, were it there, the others running at
    some instant of its window could not all be placed; tie it when one thread is left. True
    when something changed."""
    slots = nthreads - len(observed)
    if slots < 0:  # more threads did I/O than the worker has: the count is not this process's
        return False
    starts = sorted((s, x) for x, (s, _e) in window.items())
    changed = False
    active: list[int] = []
    for s, _x in starts:
        active = [y for y in active if window[y][1] >= s] + [_x]
        if len(active) < nthreads or all(y in tied for y in active):
            continue  # a spare thread at this instant: nothing follows from counting

        def options(y: int) -> list[int]:
            if y in tied:
                return [tied[y]]
            own = [t for t in observed if y not in banned.get(t, ())
                   and not threads.overlaps(t, *window[y], y)]
            return own + ([SILENT] if slots else [])

        opts = {y: options(y) for y in active}
        if not _matching(opts, slots):
            return changed  # inconsistent data at this instant: learn nothing from it
        for y in active:
            if y in tied:
                continue
            for t in [t for t in opts[y] if t != SILENT]:
                if not _matching({**opts, y: [t]}, slots):
                    banned.setdefault(t, set()).add(y)
                    changed = True
            left = options(y)
            if len(left) == 1 and left[0] != SILENT:
                tied[y] = left[0]
                threads.tie(left[0], *window[y], y)
                changed = True
            opts[y] = left
    return changed


def infer(segments: pl.DataFrame, executions: pl.DataFrame, main_thread_id: int | None,
          nthreads: int | None = None) -> tuple[pl.DataFrame, dict[str, int]]:
    """One process's executions with ``thread_id`` filled where inferred and
    ``thread_inferred`` (True there), and the counts of each case (``COUNTS``). Executions
    with a recorded thread id keep it (and fix that thread for the others). Nothing is
    inferred when the segments carry no thread ids or every execution has one."""
    ex = executions.with_columns(thread_inferred=pl.lit(False))
    missing = ex.get_column("thread_id").is_null()
    if (not missing.any() or segments.is_empty()
            or segments.get_column("thread_id").null_count() == segments.height):
        return ex, {}
    seg = segments.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"), "thread_id",
                          mid=(pl.col("host_start_ns") + pl.col("host_stop_ns")) // 2
                          ).filter(pl.col("thread_id").is_not_null())
    if main_thread_id is not None:
        seg = seg.filter(pl.col("thread_id") != main_thread_id)
    pairs = _pairs(seg, ex).sort("mid", "row", "execution_id")
    cands = [(row, t, mid, xs) for row, t, mid, xs in pairs.group_by(
        "row", "thread_id", "mid", maintain_order=True).agg("execution_id").iter_rows()]
    window = {x: (s, e) for x, s, e in ex.select("execution_id", "local_start_ns",
                                                  "local_stop_ns").iter_rows()}
    known = {x: t for x, t in ex.filter(~missing).select("execution_id", "thread_id")
             .iter_rows()}
    excluded: set[int] = set()
    while True:  # leave out the threads that contradict one task at a time, then redo
        tied, resolved, pending, contradictions = _propagate(cands, window, known, excluded,
                                                             nthreads)
        bad = {t for t, n in contradictions.items() if t not in known.values()}
        if not bad:
            break
        excluded |= bad
    inferred = {x: t for x, t in tied.items() if x not in known}
    ambiguous = {x for row, _t, _m, xs in cands if row in pending for x in xs} - set(tied)
    need = set(ex.filter(missing).get_column("execution_id").to_list())
    out = ex.with_columns(
        thread_id=pl.coalesce("thread_id", pl.col("execution_id").replace_strict(
            inferred, default=None, return_dtype=ex.schema["thread_id"])),
        thread_inferred=pl.col("execution_id").is_in(list(inferred)))
    counts = {
        "executions": len(need),
        "executions_inferred": len(inferred),
        "executions_ambiguous": len(ambiguous & need),
        "executions_without_evidence": len(need - set(inferred) - ambiguous),
        "threads_inferred": len(set(inferred.values())),
        "threads_left_out": len(excluded),
        "segments_inferred": sum(1 for x in resolved.values() if x in inferred),
        "segments_ambiguous": len(pending),
    }
    return out, counts


def _process_rows(df: pl.DataFrame, host: str | None, pid: int | None) -> pl.Series:
    """Which rows of ``df`` are the process's (host, pid)."""
    return df.select(pl.col("host").eq_missing(pl.lit(host, pl.String))
                     & pl.col("pid").eq_missing(pl.lit(pid, pl.Int64))).to_series()


def _threads_of(processes: pl.DataFrame, host: str | None, pid: int | None
                ) -> tuple[int | None, int | None]:
    """The process's main (event-loop) thread id and executor thread count, when known."""
    row = processes.filter(_process_rows(processes, host, pid))
    if not row.height:
        return None, None
    main = row.get_column("main_thread_id").drop_nulls()
    n = (row.get_column("nthreads").drop_nulls() if "nthreads" in row.columns
         else pl.Series(dtype=pl.Int64))
    return (main[0] if main.len() else None), (int(n[0]) if n.len() else None)


def infer_processes(segments: pl.DataFrame, executions: pl.DataFrame, processes: pl.DataFrame
                    ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``infer`` for each process of ``executions`` that has executions without a thread id
    (a no-op when threads are known): the executions with ``thread_id`` filled where inferred
    and ``thread_inferred``, and ``inferred_table`` of those processes."""
    ex = executions.with_columns(thread_inferred=pl.lit(False))
    missing = ex.filter(pl.col("thread_id").is_null()).select("host", "pid").unique()
    tables: list[pl.DataFrame] = []
    tied: dict[int, int] = {}
    for host, pid in sorted(missing.iter_rows(), key=process_order):
        own = _process_rows(ex, host, pid)
        out, counts = infer(segments.filter(_process_rows(segments, host, pid)),
                            executions.filter(own), *_threads_of(processes, host, pid))
        tables.append(inferred_table(out, counts, host, pid))
        tied.update(out.filter(pl.col("thread_inferred")).select("execution_id", "thread_id")
                    .iter_rows())
    if tied:
        ex = ex.with_columns(
            thread_id=pl.coalesce("thread_id", pl.col("execution_id").replace_strict(
                tied, default=None, return_dtype=ex.schema["thread_id"])),
            thread_inferred=pl.col("execution_id").is_in(list(tied)))
    return ex, (pl.concat(tables) if tables else inferred_table(ex, {}, None, None))


def attribute(att: IOAttribution, executions: pl.DataFrame) -> IOAttribution:
    """Relabel and complete an attribution made with inferred thread ids (``executions`` from
    ``infer``): whole segments of inferred executions become ``inferred-thread``; segments of a
    thread with inferred ties that no tie explains are split over the executions of its
    process that could be on that thread (``window-split``). Each process on its own."""
    if "thread_inferred" not in executions.columns or not executions.get_column(
            "thread_inferred").any():
        return att
    seg = att.segments
    ids = executions.filter(pl.col("thread_inferred")).get_column("execution_id")
    method = seg.get_column("attribution")
    whole = (method == "exact-thread") & seg.get_column("execution_id").is_in(ids.implode())
    splits = [att.split]
    tied = executions.filter(pl.col("thread_inferred")).select("host", "pid").unique()
    for host, pid in sorted(tied.iter_rows(), key=process_order):
        mine = _process_rows(seg, host, pid)
        own = executions.filter(_process_rows(executions, host, pid))
        tied_threads = own.filter(pl.col("thread_inferred")).get_column("thread_id").unique()
        loose = ((method == "exact-thread") & seg.get_column("execution_id").is_null() & mine
                 & seg.get_column("thread_id").is_in(tied_threads.implode()))
        for t in seg.filter(loose).get_column("thread_id").unique().sort().to_list():
            could = own.filter(pl.col("thread_id").is_null() | (pl.col("thread_id") == t))
            splits.append(window_split(seg, loose & (seg.get_column("thread_id") == t), could))
        if (own.get_column("thread_id").is_not_null().sum()
                == own.get_column("thread_inferred").sum()):
            # no thread was recorded in this process: what its segments allow is inference
            whole = whole | ((method == "exact-thread") & mine)
    new = pl.concat(splits[1:]) if len(splits) > 1 else None
    seg = seg.with_columns(attribution=pl.when(whole).then(pl.lit("inferred-thread", METHOD))
                           .otherwise(pl.col("attribution")))
    if new is None or new.is_empty():
        return IOAttribution(segments=seg, split=att.split)
    at, weight, best = largest_shares(new, seg.height)
    shared = np.zeros(seg.height, dtype=bool)
    shared[at] = True
    seg = seg.with_columns(
        seg.get_column("execution_id").scatter(at, best),
        seg.get_column("attributed_weight").scatter(at, weight),
        attribution=pl.when(pl.Series(shared)).then(pl.lit("window-split", METHOD))
        .otherwise(pl.col("attribution")))
    return IOAttribution(segments=seg, split=pl.concat([att.split, new]))


def inferred_table(executions: pl.DataFrame, counts: dict[str, int], host: str | None,
                   pid: int | None) -> pl.DataFrame:
    """The partition's answer: execution_id → inferred thread_id, with the process's counts
    on every row (``counts_of`` sums them once per process)."""
    rows = (executions.filter(pl.col("thread_inferred")).select("execution_id", "thread_id")
            if "thread_inferred" in executions.columns
            else pl.DataFrame(schema={"execution_id": pl.Int64, "thread_id": pl.UInt64}))
    if not counts:
        return rows.clear().with_columns(host=pl.lit(None, pl.String),
                                         pid=pl.lit(None, pl.Int64),
                                         **{c: pl.lit(None, pl.Int64) for c in COUNTS})
    return pl.concat([rows.with_columns(host=pl.lit(host, pl.String), pid=pl.lit(pid, pl.Int64),
                                        **{c: pl.lit(counts[c], pl.Int64) for c in COUNTS}),
                      # a row without an execution carries the counts when nothing was tied
                      pl.DataFrame({"execution_id": [None], "thread_id": [None]},
                                   schema=rows.schema).with_columns(
                          host=pl.lit(host, pl.String), pid=pl.lit(pid, pl.Int64),
                          **{c: pl.lit(counts[c], pl.Int64) for c in COUNTS})])


def counts_of(table: pl.DataFrame) -> dict[str, int]:
    """Run totals of the per-process counts (empty when nothing was inferred anywhere)."""
    per = table.drop_nulls("executions").unique(["host", "pid"])
    if per.is_empty():
        return {}
    return {"processes": per.height, **{c: int(per.get_column(c).sum()) for c in COUNTS}}


@segment_pass("inferred-thread")
def inferred_pass(att: IOAttribution, given: Partition) -> IOAttribution:
    """``attribute`` as the attribution's pass."""
    return attribute(att, given.executions)
