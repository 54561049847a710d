"""Mofka-Dask coupler CSV folders → canonical ``RunFrames`` (formats: ../shared/fixtures/README).

Contract (every record is used or counted in ``rejects`` with a reason):

- Keys are Python ``str()`` of tuples: parsed with ``ast.literal_eval`` (never ``eval``) and
  re-rendered by ``keys.key_str``; unparseable text stays plain text. Unknown task states and
  unknown CSV columns are kept (extra transition columns ride along after the canonical ones).
- ``executions``: ``worker_transition.csv`` windows (``*->executing`` … the next transition out
  of executing/long-running for the same key and worker, worker clock; a task that ran twice
  gives two rows), thread ids from the scheduler's ``processing->memory`` row. Workers without
  worker transitions fall back to the scheduler's ``begins``/``ends`` (the *first* startstops
  entry, shifted by scheduler_delay, possibly a transfer) with ``window_source="startstops"``
  and a warning.
- Workers ↔ Darshan logs (``processes.match`` says how, per worker), in this order:
  ``thread-id`` (a scheduler thread id is a DXT pthread id of exactly one process), ``worker.e
  local directory`` (an unambiguous ``Start worker at``/``Local Directory`` pair in the
  distributed log + the ``worker-<id>/…`` name records of the process), ``elimination`` (the
  last unmatched worker and worker process of one host), ``time-overlap`` (DXT segments of a
  process inside one worker's windows, accepted only when clearly best), else ``host only`` or
  ``unmatched``. Worker IPs get a host name from matched siblings or a single-host run.
- ``clock_samples``: no scheduler_delay is recorded, so one row per matched worker carries an
  *estimate* of scheduler clock − worker clock bounded NTP-style by the two message directions:
  ``max(sched send − worker receive) ≤ offset ≤ min(sched processing->memory − worker
  executing->memory)``; ``scheduler_delay_s`` is the midpoint, ``latency_s`` the bound width
  (estimates with bounds wider than 100 ms are dropped).
- ``worker_transfer.csv`` rows re-sent by the plugin bug are dropped and counted as rejects.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from correlate.frames.keys import key_str, parse_key_text
from correlate.frames.mappers import Mapper, local_map
from correlate.schema import TABLES, conform
from correlate.sources import darshan_logs, matching
from correlate.sources.frames import RunFrames, make_rejects
from correlate.sources.matching import Match

FILES = ("scheduler_transition.csv", "worker_transition.csv", "worker_transfer.csv",
         "worker.csv", "workers.csv", "client.csv", "graph.csv")
SOURCE = "mofka-csv"
#: distributed logs that may pair worker addresses with local directories
WORKER_LOGS = ("worker.e", "worker.err", "worker.log")
_LOCAL_DIR = r"^(.*/worker-[^/]+)/.+"
#: clock estimates whose bounds are wider than this are not used (worker clock kept as is)
MAX_CLOCK_BOUND_NS = 100_000_000
_LITERAL_ERRORS = (ValueError, SyntaxError, TypeError, MemoryError, RecursionError)


def looks_like(path: Path) -> bool:
    return any((path / f).is_file() for f in ("scheduler_transition.csv",
                                              "worker_transition.csv", "graph.csv"))


class _Reader:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.rejects: list[tuple[str, str | None, str, int]] = []
        self.warnings: list[str] = []

    def csv(self, name: str) -> pl.DataFrame | None:
        path = self.folder / name
        if not path.is_file():
            return None
        if path.stat().st_size <= 3:  # pandas writes an empty frame as '""\n'
            return None
        try:
            df = pl.read_csv(path, infer_schema=False, truncate_ragged_lines=True)
        except pl.exceptions.PolarsError as err:
            self.warnings.append(f"{path}: unreadable CSV ({err}); skipped")
            return None
        first = df.columns[0]
        if first in ("", "_duplicated_0") or first.startswith("column_"):
            df = df.drop(first)
        return df

    def reject(self, file: str, reason: str, count: int) -> None:
        self.rejects.append((SOURCE, str(self.folder / file), reason, count))


def _ns(col: str) -> pl.Expr:
    """Epoch seconds as ns; null where the text is no number or not a finite time that fits
    (``1e400``, ``nan``), so that the row is rejected rather than failing the cast."""
    ns = pl.col(col).cast(pl.Float64, strict=False) * 1e9
    return pl.when(ns.is_finite() & (ns.abs() < 2.0**62)).then(ns.round().cast(pl.Int64))


def _col(df: pl.DataFrame, name: str) -> pl.Expr:
    """A column that may be missing from older plugin generations (null then)."""
    return pl.col(name) if name in df.columns else pl.lit(None, pl.String).alias(name)


def _keys(df: pl.DataFrame, col: str = "key") -> pl.DataFrame:
    if col not in df.columns:
        return df.with_columns(pl.lit(None, pl.String).alias(col))
    mapping = {k: parse_key_text(k) for k in df[col].unique().drop_nulls().to_list()}
    return df.with_columns(pl.col(col).replace_strict(mapping, default=None,
                                                      return_dtype=pl.String))


def _valid_rows(df: pl.DataFrame, reader: _Reader, file: str,
                needed: tuple[str, ...]) -> pl.DataFrame:
    """Rows with a key, a parseable time and the needed columns; the rest become rejects."""
    df = df.with_columns(local_time_ns=_ns("time") if "time" in df.columns
                         else pl.lit(None, pl.Int64))
    for c in needed:
        if c not in df.columns:
            df = df.with_columns(pl.lit(None, pl.String).alias(c))
    ok = pl.all_horizontal(pl.col("key", "local_time_ns", *needed).is_not_null())
    bad = df.filter(~ok).height
    if bad:
        reader.reject(file, "row without a key, a state or a parseable time (truncated file?)",
                      bad)
    return df.filter(ok)


def _thread(col: str = "thread") -> pl.Expr:
    return pl.col(col).cast(pl.Float64, strict=False).cast(pl.UInt64, strict=False)


# ---------------------------------------------------------------- transitions and executions

_SCHED_KNOWN = ("key", "thread", "worker", "prefix", "group", "start", "finish", "stimulus_id",
                "called_from", "begins", "ends", "duration", "size", "time", "local_time_ns")


def _transitions(sched: pl.DataFrame | None, work: pl.DataFrame | None) -> pl.DataFrame:
    """Both sides; the scheduler side keeps begins/ends, the source address and any unknown
    CSV column (after the canonical columns) for the lifecycle view."""
    parts = []
    if sched is not None:
        extra = [c for c in sched.columns if c not in _SCHED_KNOWN]
        s = sched.select(
            "key", "start", "finish", "stimulus_id", "worker", "local_time_ns", *extra,
            side=pl.lit("scheduler"), thread_id=_thread(),
            nbytes=_col(sched, "size").cast(pl.Float64, strict=False).cast(pl.Int64),
            begins_ns=_ns("begins") if "begins" in sched.columns else pl.lit(None, pl.Int64),
            ends_ns=_ns("ends") if "ends" in sched.columns else pl.lit(None, pl.Int64),
            source=_col(sched, "called_from"), prefix=_col(sched, "prefix"),
            group=_col(sched, "group"))
        parts.append(conform(s, TABLES["transitions"], extra="keep"))
    if work is not None:
        extra = [c for c in work.columns
                 if c not in ("key", "start", "finish", "called_from", "time", "local_time_ns")]
        w = work.select("key", "start", "finish", "local_time_ns", *extra,
                        side=pl.lit("worker"), worker="called_from")
        parts.append(conform(w, TABLES["transitions"], extra="keep"))
    if not parts:
        return TABLES["transitions"].empty()
    return pl.concat(parts, how="diagonal_relaxed")


def _worker_windows(work: pl.DataFrame) -> pl.DataFrame:
    """(key, worker, local_start_ns, local_stop_ns, status) from worker transitions."""
    w = work.select("key", worker="called_from", t="local_time_ns", start="start",
                    finish="finish")
    starts = w.filter(pl.col("finish") == "executing").select("key", "worker", s="t")
    ends = w.filter(pl.col("start").is_in(["executing", "long-running"])
                    & (pl.col("finish") != "long-running")).select(
        "key", "worker", e="t", end_state="finish")
    status = (pl.when(pl.col("end_state") == "memory").then(pl.lit("ok"))
              .otherwise(pl.col("end_state")))
    return (starts.sort("s").join_asof(ends.sort("e"), left_on="s", right_on="e",
                                       by=["key", "worker"], strategy="forward",
                                       check_sortedness=False)
            .filter(pl.col("e").is_not_null())
            .select("key", "worker", local_start_ns="s", local_stop_ns="e", status=status,
                    window_source=pl.lit("worker-transitions")))


def _executions(sched: pl.DataFrame | None, work: pl.DataFrame | None,
                reader: _Reader) -> pl.DataFrame:
    done = (sched.filter((pl.col("start") == "processing") & (pl.col("finish") == "memory")
                         & pl.col("worker").is_not_null())
            if sched is not None else None)
    threads = (done.select("key", "worker", thread_id=_thread(), prefix=_col(done, "prefix"),
                           group=_col(done, "group")).unique(["key", "worker"], keep="last")
               if done is not None else None)
    windows = _worker_windows(work) if work is not None else None
    covered = windows["worker"].unique().to_list() if windows is not None else []
    parts = []
    if windows is not None:
        parts.append(windows.join(threads, on=["key", "worker"], how="left")
                     if threads is not None else windows)
    if done is not None:
        fallback = done.filter(~pl.col("worker").is_in(covered)).select(
            "key", "worker", prefix=_col(done, "prefix"), group=_col(done, "group"),
            thread_id=_thread(), local_start_ns=_ns("begins"), local_stop_ns=_ns("ends"),
            status=pl.lit("ok"), window_source=pl.lit("startstops"))
        bad = fallback.filter(pl.col("local_start_ns").is_null()
                              | pl.col("local_stop_ns").is_null()).height
        if bad:
            reader.reject("scheduler_transition.csv",
                          "processing->memory row without begins/ends (no execution window)",
                          bad)
        if fallback.height - bad:
            reader.warnings.append(
                f"{fallback['worker'].n_unique()} worker(s) have no worker transitions: their "
                f"{fallback.height - bad} execution windows come from the scheduler's "
                "begins/ends (the first startstops entry, shifted by scheduler_delay; may be a "
                "transfer)")
            parts.append(fallback)
    frames = [conform(p, TABLES["executions"]) for p in parts]
    ex = pl.concat(frames) if frames else TABLES["executions"].empty()
    return ex.filter(pl.col("local_start_ns").is_not_null()
                     & pl.col("local_stop_ns").is_not_null())


def _startstops(sched: pl.DataFrame | None) -> pl.DataFrame:
    if sched is None or "begins" not in sched.columns:
        return TABLES["startstops"].empty()
    s = sched.filter(pl.col("begins").is_not_null() & (pl.col("finish") == "memory"))
    return conform(s.select("key", "worker", action=pl.lit("first-entry (action not recorded)"),
                            reported_start_ns=_ns("begins"), reported_stop_ns=_ns("ends")),
                   TABLES["startstops"])


# ---------------------------------------------------------------- transfers and graph

def _literal(text: str | None) -> Any:
    """``ast.literal_eval`` of CSV literal text (never ``eval``); ``set()`` is allowed."""
    if not text:
        return None
    if text.strip() == "set()":
        return set()
    return ast.literal_eval(text)


def _transfers(df: pl.DataFrame | None, reader: _Reader) -> tuple[pl.DataFrame, pl.DataFrame]:
    if df is None:
        return TABLES["transfers"].empty(), TABLES["transfer_keys"].empty()
    ident = [c for c in ("type", "called_from", "who", "start", "stop", "keys")
             if c in df.columns]
    unique = df.unique(ident, keep="first", maintain_order=True)
    if df.height - unique.height:
        reader.reject("worker_transfer.csv", "duplicate row (Mofka plugin re-send bug)",
                      df.height - unique.height)
    t = unique.with_row_index("transfer_id").with_columns(pl.col("transfer_id").cast(pl.Int64))
    transfers = t.select(
        "transfer_id", worker=_col(t, "called_from"), peer=_col(t, "who"),
        direction=_col(t, "type").str.replace("_transfer", ""),
        total_bytes=_col(t, "total").cast(pl.Float64, strict=False).cast(pl.Int64),
        compressed_bytes=_col(t, "compressed").cast(pl.Float64, strict=False).cast(pl.Int64),
        reported_start_ns=_ns("start"), reported_stop_ns=_ns("stop"))
    bad_dir = transfers.filter(pl.col("direction").is_null()
                               | ~pl.col("direction").is_in(["incoming", "outgoing"]))
    if bad_dir.height:
        reader.reject("worker_transfer.csv", "transfer without a known type (truncated row?)",
                      bad_dir.height)
        transfers = transfers.filter(pl.col("direction").is_in(["incoming", "outgoing"]))
    rows, bad = [], 0
    for tid, text in t.select("transfer_id", _col(t, "keys")).iter_rows():
        try:
            parsed = _literal(text) or {}
            rows += [(tid, key_str(k), int(v)) for k, v in parsed.items()]
        except (*_LITERAL_ERRORS, AttributeError):
            bad += 1
    if bad:
        reader.reject("worker_transfer.csv", "unparseable keys literal", bad)
    keys = pl.DataFrame(rows, schema=["transfer_id", "key", "nbytes"], orient="row")
    return conform(transfers, TABLES["transfers"]), conform(keys, TABLES["transfer_keys"])


def _seconds_ns(text: Any) -> int | None:
    try:
        ns = float(text) * 1e9
    except (TypeError, ValueError):
        return None
    return round(ns) if math.isfinite(ns) and abs(ns) < 2.0**62 else None


def _graph(df: pl.DataFrame | None, reader: _Reader) -> tuple[pl.DataFrame, set[str], int]:
    """Dependency edges, every task key of every update_graph, and the number of entries
    summed over update_graph calls (a key resubmitted in a later call counts again)."""
    if df is None:
        return TABLES["dependencies"].empty(), set(), 0
    rows, bad, untimed, entries = [], 0, 0, 0
    keys: set[str] = set()
    for client, deps, t in df.select(_col(df, "client"), _col(df, "dependencies"),
                                     _col(df, "time")).iter_rows():
        try:
            parsed: dict[Any, Any] = _literal(deps) or {}
            edges = [(key_str(k), key_str(d)) for k, ds in parsed.items() for d in ds]
        except (*_LITERAL_ERRORS, AttributeError):
            bad += 1
            continue
        t_ns = _seconds_ns(t)
        if t and t_ns is None:
            untimed += 1
        keys.update(key_str(k) for k in parsed)
        entries += len(parsed)
        rows += [(k, d, client, t_ns) for k, d in edges]
    if bad:
        reader.reject("graph.csv", "unparseable dependencies literal", bad)
    if untimed:
        reader.reject("graph.csv", "time is not a finite number (its edges kept, without a "
                      "submit time)", untimed)
    out = pl.DataFrame(rows, schema=["key", "depends_on", "client", "local_time_ns"],
                       orient="row")
    deps = conform(out, TABLES["dependencies"]).unique(["key", "depends_on"], keep="first",
                                                       maintain_order=True)
    return deps, keys, entries


# ---------------------------------------------------------------- Darshan processes

def _log_processes(io: darshan_logs.DarshanFrames) -> pl.DataFrame:
    """One row per Darshan log: host, pid, role, name, local_directory, main_thread_id."""
    logs = io.darshan_logs.select("host", "pid", exe=pl.col("exe").fill_null(""))
    local = (io.io_file_counters.select("host", "pid", d=pl.col("path").str.extract(_LOCAL_DIR))
             .drop_nulls("d").unique().group_by("pid")
             .agg(local_directory=pl.col("d").first(), n=pl.len())
             .filter(pl.col("n") == 1).drop("n"))
    first_thread = (io.segments().drop_nulls("thread_id").sort("local_start_ns")
                    .group_by("pid").agg(main_thread_id=pl.col("thread_id").first()))
    hosts = io.darshan_logs["host"].drop_nulls().unique()
    first = pl.col("exe").str.extract(r"^(\S+)").str.extract(r"([^/]+)$")
    name = (pl.when(pl.col("exe").str.contains("resource_tracker")).then(pl.lit("resource_tracker"))
            .when(pl.col("exe").str.contains("multiprocessing.spawn"))
            .then(pl.lit("multiprocessing spawn"))
            .when(first.str.starts_with("python") & pl.col("exe").str.contains(r"dask[ -]worker"))
            .then(pl.lit("dask worker")).otherwise(first))
    role = (pl.when(pl.col("local_directory").is_not_null()).then(pl.lit("worker"))
            .when(pl.col("name") == "dask worker").then(pl.lit("nanny"))
            .otherwise(pl.lit("other")))
    out = (logs.join(local, on="pid", how="left").join(first_thread, on="pid", how="left")
           .with_columns(name=name)
           .with_columns(role=role,
                         host=pl.col("host").fill_null(pl.lit(hosts[0] if hosts.len() == 1 else None,
                                                               pl.String))))
    return out.with_columns(main_thread_id=pl.when(pl.col("role") == "worker")
                            .then(pl.col("main_thread_id")))


def _log_pairs(folder: Path) -> dict[str, str]:
    """worker address → local directory, from the distributed log, only where a single
    ``Start worker at`` line is followed by a single ``Local Directory`` line (8 workers write
    the same file interleaved, so longer runs are ambiguous)."""
    runs: list[tuple[str, list[str]]] = []
    for name in WORKER_LOGS:
        path = folder / name
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            m = re.search(r"Start worker at:\s+(\S+)|Local Directory:\s+(\S+)", line)
            if not m:
                continue
            kind, value = ("start", m.group(1)) if m.group(1) else ("dir", m.group(2))
            if runs and runs[-1][0] == kind:
                runs[-1][1].append(value)
            else:
                runs.append((kind, [value]))
    return {a[1][0]: b[1][0] for a, b in zip(runs, runs[1:], strict=False)
            if a[0] == "start" and b[0] == "dir" and len(a[1]) == 1 and len(b[1]) == 1}


def _log_threads(folder: Path) -> int | None:
    """Executor threads per worker from the distributed log's ``Threads:`` lines, when every
    worker printed the same count (the log does not say which worker printed which)."""
    counts = set()
    for name in WORKER_LOGS:
        path = folder / name
        if path.is_file():
            counts |= set(re.findall(r"Threads:\s+(\d+)", path.read_text(errors="replace")))
    return int(next(iter(counts))) if len(counts) == 1 else None


def _match_workers(ex: pl.DataFrame, io: darshan_logs.DarshanFrames | None, procs: pl.DataFrame,
                   workers: list[str], folder: Path
                   ) -> tuple[dict[str, Match], dict[tuple[str, int], str]]:
    if io is None:
        return {w: Match(None, None, "unmatched (no Darshan logs)") for w in workers}, {}
    return matching.match_workers(ex, io.segments(), procs, workers, _log_pairs(folder))


def _processes(workers: list[str], matches: dict[str, Match], procs: pl.DataFrame,
               left: dict[tuple[str, int], str], nthreads: int | None) -> pl.DataFrame:
    rows = [{"worker": w, "role": "worker", "host": m.host or "?", "pid": m.pid,
             "match": m.how} for w, m in ((w, matches.get(w, Match(None, None, "unmatched")))
                                          for w in workers)]
    wdf = pl.DataFrame(rows, schema={"worker": pl.String, "role": pl.String, "host": pl.String,
                                     "pid": pl.Int64, "match": pl.String})
    wdf = wdf.join(procs.select("host", "pid", "name", "local_directory", "main_thread_id"),
                   on=["host", "pid"], how="left")
    matched = {(m.host, m.pid) for m in matches.values() if m.pid is not None}
    why = pl.DataFrame([(h, p, r) for (h, p), r in left.items()],
                       schema={"host": pl.String, "pid": pl.Int64, "why": pl.String},
                       orient="row")
    others = procs.filter(~pl.struct("host", "pid").is_in(
        [{"host": h, "pid": p} for h, p in matched])).join(
        why, on=["host", "pid"], how="left").with_columns(
        host=pl.col("host").fill_null("?"),
        match=pl.when(pl.col("role") == "worker")
        .then(pl.concat_str(pl.lit("worker process not matched to an address: "),
                            pl.col("why").fill_null("no worker host known")))
        .otherwise(pl.lit("darshan log")))
    out = pl.concat([conform(wdf, TABLES["processes"]), conform(others, TABLES["processes"])])
    if nthreads is None:
        return out
    return out.with_columns(nthreads=pl.when(pl.col("role") == "worker")
                            .then(pl.lit(nthreads, pl.Int64)))


def _attach(df: pl.DataFrame, matches: dict[str, Match], worker_col: str = "worker"
            ) -> pl.DataFrame:
    """Fill host/pid of rows recorded by a worker from its match."""
    if not matches or df.is_empty():
        return df
    m = pl.DataFrame([(w, x.host, x.pid) for w, x in matches.items()],
                     schema={worker_col: pl.String, "m_host": pl.String, "m_pid": pl.Int64},
                     orient="row")
    return df.join(m, on=worker_col, how="left").with_columns(
        host=pl.coalesce("host", "m_host"), pid=pl.coalesce("pid", "m_pid")).drop("m_host",
                                                                                  "m_pid")


# ---------------------------------------------------------------- clocks

def _clock_estimates(transitions: pl.DataFrame, matches: dict[str, Match]) -> pl.DataFrame:
    """scheduler clock − worker clock per matched worker, bounded by both message directions
    (see the module doc). Workers whose bounds cross or are wider than MAX_CLOCK_BOUND_NS are
    left out: their clock is used as is (Polaris node clocks agree to about 1 ms)."""
    sched = transitions.filter(pl.col("side") == "scheduler")
    work = transitions.filter(pl.col("side") == "worker")
    if sched.is_empty() or work.is_empty():
        return TABLES["clock_samples"].empty()
    done_s = sched.filter((pl.col("start") == "processing") & (pl.col("finish") == "memory")
                          ).select("key", "worker", s_done="local_time_ns")
    send_s = (sched.filter(pl.col("finish") == "processing").group_by("key")
              .agg(s_send=pl.col("local_time_ns").max()))
    done_w = (work.filter(pl.col("start").is_in(["executing", "long-running"])
                          & (pl.col("finish") == "memory"))
              .group_by("key", "worker").agg(w_done=pl.col("local_time_ns").max()))
    recv_w = work.group_by("key", "worker").agg(w_recv=pl.col("local_time_ns").min())
    pairs = (done_s.join(done_w, on=["key", "worker"]).join(send_s, on="key")
             .join(recv_w, on=["key", "worker"]))
    bounds = pairs.group_by("worker").agg(
        upper=(pl.col("s_done") - pl.col("w_done")).min(),
        lower=(pl.col("s_send") - pl.col("w_recv")).max(),
        time=pl.col("w_done").min()).filter(
        (pl.col("lower") <= pl.col("upper"))
        & (pl.col("upper") - pl.col("lower") <= MAX_CLOCK_BOUND_NS))
    rows = [(m.host, m.pid, t, (lo + up) / 2e9, (up - lo) / 1e9)
            for w, lo, up, t in bounds.select("worker", "lower", "upper", "time").iter_rows()
            if (m := matches.get(w)) is not None and m.host and m.pid is not None]
    df = pl.DataFrame(rows, schema=["host", "pid", "local_time_ns", "scheduler_delay_s",
                                    "latency_s"], orient="row")
    return conform(df, TABLES["clock_samples"])


# ---------------------------------------------------------------- load

def _read_transitions(reader: _Reader) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    sched = reader.csv("scheduler_transition.csv")
    work = reader.csv("worker_transition.csv")
    if sched is not None:
        sched = _valid_rows(_keys(sched), reader, "scheduler_transition.csv",
                            ("start", "finish"))
    if work is not None:
        work = _valid_rows(_keys(work), reader, "worker_transition.csv",
                           ("start", "finish", "called_from"))
    if sched is None:
        reader.warnings.append("scheduler_transition.csv missing or empty: no thread ids, so "
                               "each execution's thread is inferred from the DXT pthread ids "
                               "where the data allow, and the rest of the I/O split by time "
                               "window (summary: thread_inference)")
    if work is None:
        reader.warnings.append("worker_transition.csv missing or empty: execution windows "
                               "come from the scheduler's begins/ends")
    return sched, work


def _workers(reader: _Reader, ex: pl.DataFrame, work: pl.DataFrame | None) -> list[str]:
    csv = reader.csv("worker.csv")
    csv = csv if csv is not None else reader.csv("workers.csv")
    listed = set(csv["worker"].drop_nulls()) if csv is not None and "worker" in csv.columns \
        else set()
    seen = set(ex["worker"].drop_nulls())
    if work is not None:
        seen |= set(work["called_from"].drop_nulls())
    return sorted(listed | seen)


def load(folder: Path, mapper: Mapper = local_map) -> RunFrames:
    reader = _Reader(folder)
    sched, work = _read_transitions(reader)
    ex = _executions(sched, work, reader)
    workers = _workers(reader, ex, work)
    io = darshan_logs.load([folder], mapper) if any(folder.glob("*.darshan*")) else None
    procs = _log_processes(io) if io is not None else pl.DataFrame(
        schema={"host": pl.String, "pid": pl.Int64, "role": pl.String, "name": pl.String,
                "local_directory": pl.String, "main_thread_id": pl.UInt64})
    matches, left = _match_workers(ex, io, procs, workers, folder)
    transitions = _attach(_transitions(sched, work), matches).with_columns(
        host=pl.when(pl.col("side") == "worker").then(pl.col("host")),
        pid=pl.when(pl.col("side") == "worker").then(pl.col("pid")))
    transfers, transfer_keys = _transfers(reader.csv("worker_transfer.csv"), reader)
    deps, graph_keys, graph_entries = _graph(reader.csv("graph.csv"), reader)
    ex = _attach(ex, matches)
    clock = _clock_estimates(transitions, matches)
    warnings = reader.warnings + _coverage_warnings(workers, ex, work, graph_keys)
    return RunFrames(
        processes=_processes(workers, matches, procs, left, _log_threads(folder)), executions=ex, transitions=transitions,
        startstops=_startstops(sched), transfers=_attach(transfers, matches),
        transfer_keys=transfer_keys, dependencies=deps, clock_samples=clock,
        io_segments=io.io_segments if io else TABLES["io_segments"].empty(),
        io_file_counters=io.io_file_counters if io else TABLES["io_file_counters"].empty(),
        darshan_logs=io.darshan_logs if io else TABLES["darshan_logs"].empty(),
        rejects=make_rejects(reader.rejects), source_format=SOURCE,
        facts={**_facts(workers, matches, graph_keys, clock), "graph_entries": graph_entries,
               "unmatched_worker_processes": {f"{h}:{p}": r for (h, p), r in
                                              sorted(left.items())}},
        warnings=tuple(warnings + list(io.warnings if io else ())
                       + _match_warnings(workers, matches, io, clock)))


def _facts(workers: list[str], matches: dict[str, Match], graph_keys: set[str],
           clock: pl.DataFrame) -> dict[str, Any]:
    return {
        "workers": len(workers),
        "graph_tasks": len(graph_keys),
        "hosts": sorted({m.host for m in matches.values() if m.host}),
        "matched_workers": {w: m.how for w, m in sorted(matches.items())},
        # each decision with its evidence (matching.match_workers)
        "worker_matches": {w: {"host": m.host, "pid": m.pid, "how": m.how, **m.evidence}
                           for w, m in sorted(matches.items())},
        "unmatched_workers": [w for w in workers if matches.get(w, Match(None, None, "")).pid
                              is None],
        "clock_method": ("worker clock → scheduler clock estimated from message bounds "
                         "(mofka_csv._clock_estimates)" if clock.height else
                         "none (no scheduler_delay in the CSVs; worker clocks used as is)"),
    }


def _coverage_warnings(workers: list[str], ex: pl.DataFrame, work: pl.DataFrame | None,
                       graph_keys: set[str]) -> list[str]:
    out = []
    silent = sorted(set(workers) - set(ex["worker"].drop_nulls()))
    if silent:
        out.append(f"{len(silent)} of {len(workers)} worker(s) have no execution record "
                   f"(no worker transitions, no scheduler completion): {', '.join(silent)}")
    if graph_keys:
        missing = len(graph_keys - set(ex["key"]))
        if missing:
            out.append(f"{missing:,} of {len(graph_keys):,} task(s) in graph.csv have no "
                       "execution window (ran on a worker that reported nothing, or never ran)")
    return out


def _match_warnings(workers: list[str], matches: dict[str, Match],
                    io: darshan_logs.DarshanFrames | None, clock: pl.DataFrame) -> list[str]:
    if io is None:
        return ["no Darshan logs in the folder: no I/O attribution"]
    out = []
    missing = [w for w in workers if matches.get(w, Match(None, None, "")).pid is None]
    if missing:
        out.append(f"{len(missing)} of {len(workers)} worker(s) not matched to a Darshan "
                   f"process: their I/O cannot be attributed per task ({', '.join(missing)})")
    for w in matching.contradicted(matches):
        ev = matches[w].evidence
        out.append(f"{w} matched to pid {matches[w].pid} ({matches[w].how}) but only "
                   f"{ev['inside_windows']} of its {ev['executor_segments']} executor-thread "
                   "segments fall inside the worker's task windows: check the match or clocks")
    if clock.height:
        out.append(f"worker clocks: no scheduler_delay recorded; {clock.height} worker "
                   "offset(s) estimated from transition message bounds (latency_s = bound "
                   "width)")
    return out
