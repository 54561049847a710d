"""I/O through C stdio (``fread``/``fwrite``: numpy's ``tofile``/``fromfile``, C extensions):
Darshan's STDIO module counts it per file and process, but DXT traces only POSIX and MPI-IO, so
there is no segment with a thread and a time to attribute. What ties such a file to a task is
the collector's record of the Python-level opens made in each execution's context
(``file_opens``): numpy opens the file in Python and hands the descriptor to stdio.

Each STDIO record (process × file) with bytes is given, in this order of evidence:

- ``stdio-file``: whole, to the one execution of that process whose context opened the file
  in a mode that allows the operation (reads to readers, writes to writers); among several
  such openers, to the one whose window holds every such call of the file (Darshan keeps the
  times of the first and the last);
- ``stdio-split``: otherwise to the several openers, in proportion to how many times each
  opened it (the counters do not say which open moved which bytes);
- otherwise unattributed, with its reason (no task of a worker opened it; the run has no
  record of opens; or the process is not a worker).

The figures are Darshan's counters: bytes, operations and the time inside the calls, with the
times of the first and last call only. Darshan names a stream opened with ``fdopen`` from its descriptor table,
and was seen to file one stream's bytes under another file the same process had open before;
the process totals are exact. Where the record of opens and the files' sizes show whose such
bytes are (``stdio-reassigned``), they go to that execution, and under the file it opened
(``stdio-refiled``) rather than Darshan's name for them.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from correlate.attribution.passes import Run, Untraced, untraced_pass
from correlate.attribution.shares import (
    METHOD,
    darshan_records,
    not_a_tasks_reason,
    openers,
    time_shares,
)
from correlate.frames.scalars import total

#: what ``summary.io.stdio`` and the unattributed reasons call it
NOT_TRACED = "C stdio (not traced by DXT)"
#: the method of a misfiled record's bytes filed under the file their evident owner opened
REFILED = "stdio-refiled"


def _by_time(given: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Among several openers of a record, the one whose window holds every stdio call of it
    (Darshan's first and last timestamps) gets it whole; the others none. A window that holds
    them as measured wins over one that holds them only within the clock's uncertainty
    (``slack_ns``: a short task right after the one that made the calls). Records whose calls
    no single opener's window holds keep their shares."""
    def holds(slack: pl.Expr) -> pl.Expr:
        return ((pl.col("local_start_ns") - slack <= pl.col("first_ns"))
                & (pl.col("last_ns") <= pl.col("local_stop_ns") + slack)).fill_null(False)
    record = ["host", "pid", "path", "op"]
    g = given.join(windows.select("execution_id", "local_start_ns", "local_stop_ns"),
                   on="execution_id", how="left").with_columns(
        exact=holds(pl.lit(0)), near=holds(pl.col("slack_ns")))
    g = g.group_by(*given.columns, maintain_order=True).agg(  # any of its windows
        pl.col("exact").any(), pl.col("near").any()).with_columns(
        exacts=pl.col("exact").sum().over(record), nears=pl.col("near").sum().over(record))
    several = pl.col("openers") > 1
    by_exact = several & (pl.col("exacts") == 1)
    by_near = several & (pl.col("exacts") != 1) & (pl.col("nears") == 1)
    one = by_exact | by_near
    chosen = (by_exact & pl.col("exact")) | (by_near & pl.col("near"))
    return g.filter(~one | chosen).with_columns(
        weight=pl.when(one).then(1.0).otherwise(pl.col("weight")),
        openers=pl.when(one).then(1).otherwise(pl.col("openers")))


def attribute_stdio(counters: pl.DataFrame, opens: pl.DataFrame, executions: pl.DataFrame,
                    processes: pl.DataFrame, clocks: pl.DataFrame,
                    windows: pl.DataFrame | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(task_files rows without ``key``, unattributed rows) of the run's STDIO I/O;
    ``clocks`` holds the Darshan clock offset of each process (``domain`` darshan);
    ``windows`` the executions' windows as I/O attribution sees them (a coroutine's active
    slices: ``coroutines.io_windows``), by default their whole windows."""
    rec = darshan_records(counters, processes, clocks)
    files_schema = pl.Schema({"execution_id": pl.Int64, "path": pl.String, "op": pl.String,
                              "bytes": pl.Float64, "ops": pl.Float64, "io_time_s": pl.Float64,
                              "attribution": METHOD})
    if rec.is_empty():
        return pl.DataFrame(schema=files_schema), _unattributed(rec, processes, opens)
    who = openers(opens, executions)
    on = ["host", "pid", "path", "op"]
    win = executions if windows is None else windows
    given = _by_time(rec.join(who, on=on, how="inner", nulls_equal=True), win)
    odd = _inconsistent(rec, given, win)
    given = given.join(odd, on=on, how="anti", nulls_equal=True)
    files = given.select(
        "execution_id", "path", "op",
        *(pl.col(c) * pl.col("weight") for c in ("bytes", "ops", "io_time_s")),
        attribution=pl.when(pl.col("openers") == 1).then(pl.lit("stdio-file"))
        .otherwise(pl.lit("stdio-split")).cast(METHOD))
    # a record that some task opened, but in another mode only, is inconsistent too
    other_mode = (rec.join(who.select(on).unique(), on=on, how="anti", nulls_equal=True)
                  .join(_any_opener(opens, executions), on=["host", "pid", "path"],
                        nulls_equal=True).select(on))
    odd = pl.concat([odd.with_columns(why=pl.lit(INCONSISTENT)),
                     other_mode.with_columns(why=pl.lit(OTHER_MODE))]).unique(on)
    # (file sizes are needed only for inconsistent records: most runs have none)
    sizes = _sizes(counters if not odd.is_empty() else counters.head(0), processes, clocks, odd)
    fixed, odd_left = _resolve(rec.join(odd, on=on, nulls_equal=True), opens, executions,
                               win, files, sizes,
                               rec.join(odd, on=on, how="anti", nulls_equal=True))
    left = rec.join(who.select(on).unique(), on=on, how="anti", nulls_equal=True).join(
        odd, on=on, how="anti", nulls_equal=True)
    return (pl.concat([files.cast(files_schema), fixed.cast(files_schema)]),
            pl.concat([_unattributed(left, processes, opens),
                       _unattributed(odd_left, processes, opens)]))


#: why the part of an inconsistent record no task's window explains stays unattributed
INCONSISTENT = ("Darshan's record is inconsistent with the record of opens (its calls fall "
                "outside the windows of the tasks that opened the file for it)")
#: … and when the tasks that opened the file opened it only for the other operation
OTHER_MODE = ("Darshan's record is inconsistent with the record of opens (the tasks that "
              "opened the file opened it only for the other operation)")


def _inconsistent(rec: pl.DataFrame, given: pl.DataFrame, windows: pl.DataFrame
                  ) -> pl.DataFrame:
    """Records (host, pid, path, op) whose first or last call lies in no window of the
    executions they were given to, even within the clock's slack: Darshan filed another
    stream's calls under this file (the calls in between may fall between the windows of
    several openers: the counters keep no time of them)."""
    on = ["host", "pid", "path", "op"]
    slack = pl.col("slack_ns")

    def inside(t: str) -> pl.Expr:
        return ((pl.col("local_start_ns") - slack <= pl.col(t))
                & (pl.col(t) <= pl.col("local_stop_ns") + slack)).fill_null(True)
    w = given.select(*on, "execution_id", "first_ns", "last_ns", "slack_ns").join(
        windows.select("execution_id", "local_start_ns", "local_stop_ns"), on="execution_id")
    return w.group_by(on).agg(first=inside("first_ns").any(), last=inside("last_ns").any()
                              ).filter(~(pl.col("first") & pl.col("last"))).select(on)


def _any_opener(opens: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    """(host, pid, path) that some execution opened, in any mode."""
    ex = executions.filter(pl.col("execution_seq").is_not_null()).select(
        "host", "pid", "execution_seq")
    return opens.join(ex, on=["host", "pid", "execution_seq"], nulls_equal=True).select(
        "host", "pid", "path").unique()


def _picks(r: dict, starts: np.ndarray, stops: np.ndarray, ids: np.ndarray
           ) -> list[list[int]]:
    """The candidates that may have moved an inconsistent record's bytes: those running
    during its span, and those whose window holds its first or last call."""
    slack, first, last = r["slack_ns"], r["first_ns"], r["last_ns"]
    during = (starts - slack <= last) & (first <= stops + slack)
    ends = (((starts - slack <= first) & (first <= stops + slack))
            | ((starts - slack <= last) & (last <= stops + slack)))
    return [sorted({int(e) for e in ids[pick]}) for pick in (during, ends)]


def _by_size(r: dict, starts: np.ndarray, stops: np.ndarray, ids: np.ndarray,
             expected: dict[tuple[int, str], float]) -> dict[int, float]:
    """Shares of an inconsistent record when the candidates' own file sizes account for its
    bytes exactly: those of a pick (``_picks``) whose expected bytes (``_expected``) add up to
    the record's, each its size. Else empty."""
    for who in _picks(r, starts, stops, ids):
        sizes = [n for e in who if (n := expected.get((e, r["op"]))) is not None]
        if who and len(sizes) == len(who) and sum(sizes) == r["bytes"]:
            return {e: n / r["bytes"] for e, n in zip(who, sizes, strict=True)}
    return {}


def _rests(r: dict, starts: np.ndarray, stops: np.ndarray, ids: np.ndarray,
           expected: dict[tuple[int, str], float], own: set[int]) -> set[float]:
    """What an inconsistent record leaves to its own file: for each pick (``_picks``) with
    exactly one opener of the record's file and every other candidate's size known, its
    bytes less the others' sizes (the record is its file's stream plus misfiled ones)."""
    got = set()
    for who in _picks(r, starts, stops, ids):
        mine = [e for e in who if e in own]
        others = [expected.get((e, r["op"])) for e in who if e not in own]
        known = [n for n in others if n is not None]
        if len(mine) == 1 and len(known) == len(others) and r["bytes"] - sum(known) > 0:
            got.add(r["bytes"] - sum(known))
    return got


def _derived(rests: dict[tuple, set[float]]) -> pl.DataFrame:
    """Sizes of files whose records of both operations in a process are inconsistent (no
    consistent record says how big the file is): where the read record and the write record
    leave their file the same single rest (``_rests``), that is its size, two records of
    Darshan agreeing to the byte."""
    rows = []
    for (host, pid, path, op), got in rests.items():
        if op != "read":
            continue
        both = got & rests.get((host, pid, path, "write"), set())
        if len(both) == 1:
            size = both.pop()
            rows += [(host, pid, path, o, size) for o in ("read", "write")]
    return pl.DataFrame(rows, schema={"host": pl.String, "pid": pl.Int64, "path": pl.String,
                                      "op": pl.String, "bytes": pl.Float64}, orient="row")


def _sizes(counters: pl.DataFrame, processes: pl.DataFrame, clocks: pl.DataFrame,
           odd: pl.DataFrame) -> pl.DataFrame:
    """host, pid, path, op, bytes of every record of the logs (all modules) but the
    inconsistent STDIO ones (``odd``): a record Darshan filled with another stream's bytes says
    nothing of its own file's size."""
    on = ["host", "pid", "path", "op"]
    modules = counters.get_column("module").cast(pl.String).unique().sort().to_list()
    recs = [darshan_records(counters, processes, clocks, m).select(*on, "bytes")
            for m in modules]
    if not recs:
        return pl.DataFrame(schema={"host": pl.String, "pid": pl.Int64, "path": pl.String,
                                    "op": pl.String, "bytes": pl.Float64})
    stdio = modules.index("STDIO") if "STDIO" in modules else None
    if stdio is not None:
        recs[stdio] = recs[stdio].join(odd, on=on, how="anti", nulls_equal=True)
    return pl.concat(recs)


def _expected(sizes: pl.DataFrame, opens: pl.DataFrame, executions: pl.DataFrame
              ) -> dict[tuple[int, str], float]:
    """(execution_id, op) → the bytes its own files say it moved: for reads, the sizes of the
    files it opened for reading (the most any consistent record wrote to each), for writes,
    the most any consistent record read back of the files it opened for writing (``_sizes``).
    Absent when a file's size is unknown (no such record of the other operation)."""
    flip = pl.when(pl.col("op") == "read").then(pl.lit("write")).otherwise(pl.lit("read"))
    known = sizes.filter(pl.col("bytes") > 0).group_by("path", op=flip).agg(
        size=pl.col("bytes").max())
    per = openers(opens, executions).select("path", "op", "execution_id").unique().join(
        known, on=["path", "op"], how="left")
    known = per.group_by("execution_id", "op").agg(
        pl.col("size").sum(), unknown=pl.col("size").is_null().any()).filter(~pl.col("unknown"))
    return {(e, op): float(n) for e, op, n, _u in known.rows()}


def _resolve(odd: pl.DataFrame, opens: pl.DataFrame, executions: pl.DataFrame,
             windows: pl.DataFrame, files: pl.DataFrame, sizes: pl.DataFrame,
             consistent: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(task_files rows, unattributed rest) of the inconsistent records. Candidates: the
    record's openers and the executions of its process that opened some file for the same
    operation whose record there is missing or inconsistent too (``consistent``: the STDIO
    records that are not) and got no stdio bytes from a consistent record (an owner whose own
    record Darshan misfiled). One candidate whose window holds the whole span gets the record
    whole (``stdio-reassigned``), or those whose sizes account for its bytes each their size
    (``_by_size``; ``sizes`` of the files from the consistent records, and ``_derived``);
    otherwise it is shared by time among the candidates running
    during its span (``inconsistent-split``, ``shares.time_shares``), the rest
    unattributed. The bytes an evident owner gets of a record of a file it did not open are
    its own file's (the one file it opened for that operation whose record is missing or
    inconsistent): filed under that file (``stdio-refiled``), not under Darshan's name."""
    on = ["host", "pid", "path", "op"]
    schema = {"execution_id": pl.Int64, "path": pl.String, "op": pl.String,
              "bytes": pl.Float64, "ops": pl.Float64, "io_time_s": pl.Float64,
              "attribution": METHOD}
    if odd.is_empty():
        return pl.DataFrame(schema=schema), odd
    own = openers(opens, executions).select(*on, "execution_id")
    cand, refile = _candidates(odd, own, windows, files, consistent)
    groups = cand.partition_by(*on, as_dict=True)
    own_ids = {k: set(g["execution_id"].to_list()) for k, g in odd.select(on).join(
        own, on=on, nulls_equal=True).partition_by(*on, as_dict=True).items()}
    expected = _expected(sizes, opens, executions)
    rests = {}
    records = {tuple(r[c] for c in on): r for r in odd.iter_rows(named=True)}
    for k, of_k in groups.items():
        if records[k]["first_ns"] is not None:
            rests[k] = _rests(records[k], of_k["local_start_ns"].to_numpy(),
                              of_k["local_stop_ns"].to_numpy(), of_k["execution_id"].to_numpy(),
                              expected, own_ids.get(k, set()))
    derived = _derived(rests)
    if not derived.is_empty():
        expected = _expected(pl.concat([sizes, derived]), opens, executions)
    rows, rest = [], []
    for r in odd.iter_rows(named=True):
        g = groups.get(tuple(r[c] for c in on))
        share, method = (_share(r, g, expected) if g is not None and r["first_ns"] is not None
                         else ({}, "inconsistent-split"))
        mine = own_ids.get(tuple(r[c] for c in on), set())
        for e, w in share.items():
            if w <= 0:
                continue
            # an evident owner that did not open the record's file moved its own file's
            # bytes: filed under that file, as the record of opens shows, when it is one
            path, how = r["path"], method
            if method == "stdio-reassigned" and e not in mine:
                path = refile.get((r["host"], r["pid"], r["op"], e), path)
                how = REFILED if path != r["path"] else method
            rows.append({"execution_id": e, "path": path, "op": r["op"],
                         "bytes": r["bytes"] * w, "ops": r["ops"] * w,
                         "io_time_s": r["io_time_s"] * w, "attribution": how})
        left = max(0.0, 1.0 - sum(share.values()))
        if left > 1e-12:
            rest.append({**r, **{c: r[c] * left for c in ("bytes", "ops", "io_time_s")}})
    return (pl.DataFrame(rows, schema=schema),
            pl.DataFrame(rest, schema=odd.schema) if rest else odd.head(0))


def _candidates(odd: pl.DataFrame, own: pl.DataFrame, windows: pl.DataFrame,
                files: pl.DataFrame, consistent: pl.DataFrame
                ) -> tuple[pl.DataFrame, dict[tuple, str]]:
    """Per inconsistent record, the executions that may own it, with their windows: its
    openers (``own``), and each opener of a file whose own record is missing or inconsistent
    too and that got no stdio bytes (``files``): its bytes may be the ones Darshan misfiled
    (one whose file's record was consistent, given to another opener of it, moved none of
    them); and where each such opener's bytes belong (``_refile_to``)."""
    on = ["host", "pid", "path", "op"]
    served = files.select("execution_id", "op").unique()
    orphan_files = (own.join(consistent.select(on), on=on, how="anti", nulls_equal=True)
                    .join(served, on=["execution_id", "op"], how="anti"))
    orphans = orphan_files.select("host", "pid", "op", "execution_id").unique()
    cand = pl.concat([odd.select(on).join(orphans, on=["host", "pid", "op"],
                                          nulls_equal=True).select(*on, "execution_id"),
                      odd.select(on).join(own, on=on, nulls_equal=True)]).unique()
    return (cand.join(windows.select("execution_id", "local_start_ns", "local_stop_ns"),
                      on="execution_id"), _refile_to(orphan_files))


def _share(r: dict, g: pl.DataFrame, expected: dict[tuple[int, str], float]
           ) -> tuple[dict[int, float], str]:
    """An inconsistent record's shares among its candidates ``g``: whole to the one whose
    window holds its calls, or by the sizes that account for its bytes (``stdio-reassigned``),
    else by time (``inconsistent-split``)."""
    st, sp = g["local_start_ns"].to_numpy(), g["local_stop_ns"].to_numpy()
    ids, slack = g["execution_id"].to_numpy(), r["slack_ns"]
    holds = np.unique(ids[(st - slack <= r["first_ns"]) & (r["last_ns"] <= sp + slack)])
    if len(holds) == 1:
        return {int(holds[0]): 1.0}, "stdio-reassigned"
    by_size = _by_size(r, st, sp, ids, expected)
    if by_size:
        return by_size, "stdio-reassigned"
    share: dict[int, float] = {}
    for e, w in zip(ids, time_shares(r["first_ns"], r["last_ns"], st, sp, None), strict=True):
        share[int(e)] = share.get(int(e), 0.0) + float(w)
    return share, "inconsistent-split"


def _refile_to(orphan_files: pl.DataFrame) -> dict[tuple, str]:
    """(host, pid, op, execution_id) → the one file that execution opened for ``op`` whose own
    record is missing or inconsistent (``_resolve``'s orphans): where its bytes belong. An
    execution with several such files is left out (nothing says which of them)."""
    one = (orphan_files.group_by("host", "pid", "op", "execution_id")
           .agg(pl.col("path").unique()).filter(pl.col("path").list.len() == 1))
    return {(h, p, op, e): paths[0] for h, p, op, e, paths in one.rows()}


def _unattributed(rec: pl.DataFrame, processes: pl.DataFrame, opens: pl.DataFrame
                  ) -> pl.DataFrame:
    """``unattributed`` rows of STDIO records no execution opened, with why."""
    procs = processes.select("host", "pid", pl.col("role").cast(pl.String),
                             "local_directory").unique(["host", "pid"])
    rem = rec.join(procs, on=["host", "pid"], how="left", nulls_equal=True)
    usual = pl.lit("the run has no record of the files tasks opened" if opens.is_empty()
                   else "no task opened the file for it in Python")
    why = pl.col("why").fill_null(usual) if "why" in rem.columns else usual
    reason = not_a_tasks_reason(pl.concat_str(pl.lit(f"{NOT_TRACED}: "), why))
    return rem.select("host", "pid", role=pl.col("role").fill_null("unknown"),
                      thread_kind=pl.lit("no-thread-id"), reason=reason, path="path",
                      op="op", bytes="bytes", ops="ops", io_time_s="io_time_s")


def stdio_totals(counters: pl.DataFrame) -> dict[str, float]:
    """bytes, ops and time of every STDIO record (the part of the run's I/O DXT lacks)."""
    stdio = counters.filter(pl.col("module") == "STDIO")
    return {"bytes": total(stdio["read_bytes"]) + total(stdio["write_bytes"]),
            "ops": total(stdio["read_ops"]) + total(stdio["write_ops"]),
            "io_time_s": (total(stdio["read_time_s"].fill_null(0))
                          + total(stdio["write_time_s"].fill_null(0)))}


@untraced_pass("stdio-file")
def stdio_pass(given: Run) -> Untraced:
    """``attribute_stdio`` as the attribution's pass."""
    frames = given.frames
    return Untraced(*attribute_stdio(frames.io_file_counters, frames.file_opens,
                                     given.executions, frames.processes, given.clocks,
                                     given.windows))
