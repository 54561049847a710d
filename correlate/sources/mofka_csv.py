"""Mofka-Dask coupler CSV folders → canonical ``RunFrames`` (formats: ../shared/fixtures/README).

- Keys are Python ``str()`` of tuples: parsed with ``ast.literal_eval`` (never ``eval``) and
  re-rendered by ``keys.key_str``; unparseable text stays plain text.
- Executions: ``worker_transition.csv`` windows (``*->executing`` … the next transition out of
  executing/long-running, worker clock); thread ids from the scheduler's processing->memory row.
  Workers without worker transitions fall back to the scheduler's ``begins``/``ends`` (the
  *first* startstops entry, shifted by scheduler_delay, possibly a transfer) — flagged.
- Workers ↔ Darshan logs: by thread id (exact), else by how well a process's DXT thread
  segments fall inside one worker's windows; the method is in ``processes.match``.
- ``worker_transfer.csv`` rows re-sent by the plugin bug are dropped and counted as rejects.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import polars as pl

from correlate.keys import key_str, parse_key_text
from correlate.schema import TABLES, conform
from correlate.sources import darshan_logs
from correlate.sources.frames import RunFrames, make_rejects

FILES = ("scheduler_transition.csv", "worker_transition.csv", "worker_transfer.csv",
         "worker.csv", "workers.csv", "client.csv", "graph.csv")
SOURCE = "mofka-csv"


def looks_like(path: Path) -> bool:
    return any((path / f).is_file() for f in ("scheduler_transition.csv",
                                              "worker_transition.csv"))


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
    return (pl.col(col).cast(pl.Float64, strict=False) * 1e9).round().cast(pl.Int64)


def _keys(df: pl.DataFrame, col: str = "key") -> pl.DataFrame:
    mapping = {k: parse_key_text(k) for k in df[col].unique().drop_nulls().to_list()}
    return df.with_columns(pl.col(col).replace_strict(mapping, default=None,
                                                      return_dtype=pl.String))


def _valid_times(df: pl.DataFrame, reader: _Reader, file: str) -> pl.DataFrame:
    df = df.with_columns(local_time_ns=_ns("time"))
    bad = df.filter(pl.col("local_time_ns").is_null() | pl.col("key").is_null())
    if bad.height:
        reader.reject(file, "row without a key or a parseable time (truncated file?)",
                      bad.height)
    return df.filter(pl.col("local_time_ns").is_not_null() & pl.col("key").is_not_null())


def _transitions(sched: pl.DataFrame | None, work: pl.DataFrame | None) -> pl.DataFrame:
    parts = []
    if sched is not None:
        parts.append(sched.select(
            "key", "start", "finish", "stimulus_id", "worker", "local_time_ns",
            side=pl.lit("scheduler"),
            thread_id=pl.col("thread").cast(pl.Float64, strict=False).cast(pl.UInt64),
            nbytes=pl.col("size").cast(pl.Float64, strict=False).cast(pl.Int64)))
    if work is not None:
        parts.append(work.select("key", "start", "finish", "local_time_ns",
                                 side=pl.lit("worker"), worker="called_from"))
    frames = [conform(p, TABLES["transitions"]) for p in parts]
    return pl.concat(frames) if frames else TABLES["transitions"].empty()


def _worker_windows(work: pl.DataFrame) -> pl.DataFrame:
    """(key, worker, local_start_ns, local_stop_ns) from worker transitions."""
    w = work.select("key", worker="called_from", t="local_time_ns", start="start",
                    finish="finish").sort("t")
    starts = w.filter(pl.col("finish") == "executing").select("key", "worker", s="t")
    ends = w.filter(pl.col("start").is_in(["executing", "long-running"])
                    & (pl.col("finish") != "long-running")).select("key", "worker", e="t")
    return (starts.sort("s").join_asof(ends.sort("e"), left_on="s", right_on="e",
                                       by=["key", "worker"], strategy="forward",
                                       check_sortedness=False)
            .filter(pl.col("e").is_not_null())
            .select("key", "worker", local_start_ns="s", local_stop_ns="e",
                    window_source=pl.lit("worker-transitions")))


def _executions(sched: pl.DataFrame | None, work: pl.DataFrame | None,
                reader: _Reader) -> pl.DataFrame:
    done = (sched.filter((pl.col("start") == "processing") & (pl.col("finish") == "memory"))
            if sched is not None else None)
    threads = (done.select("key", "worker", thread_id=pl.col("thread").cast(
        pl.Float64, strict=False).cast(pl.UInt64), prefix="prefix", group="group")
        .unique(["key", "worker"]) if done is not None else None)
    windows = _worker_windows(work) if work is not None else None
    covered = set(windows["worker"].unique().to_list()) if windows is not None else set()
    parts = []
    if windows is not None:
        parts.append(windows.join(threads, on=["key", "worker"], how="left")
                     if threads is not None else windows)
    if done is not None:
        fallback = done.filter(~pl.col("worker").is_in(list(covered))).select(
            "key", "worker", "prefix", "group",
            thread_id=pl.col("thread").cast(pl.Float64, strict=False).cast(pl.UInt64),
            local_start_ns=_ns("begins"), local_stop_ns=_ns("ends"),
            window_source=pl.lit("startstops"))
        if fallback.height:
            reader.warnings.append(
                f"{fallback['worker'].n_unique()} worker(s) have no worker transitions: their "
                f"{fallback.height} execution windows come from the scheduler's begins/ends "
                "(the first startstops entry, shifted by scheduler_delay; may be a transfer)")
            parts.append(fallback)
    frames = [conform(p, TABLES["executions"]) for p in parts]
    ex = pl.concat(frames) if frames else TABLES["executions"].empty()
    return ex.filter(pl.col("local_start_ns").is_not_null())


def _transfers(df: pl.DataFrame | None, reader: _Reader) -> tuple[pl.DataFrame, pl.DataFrame]:
    if df is None:
        return TABLES["transfers"].empty(), TABLES["transfer_keys"].empty()
    ident = ["type", "called_from", "who", "start", "stop", "keys"]
    unique = df.unique(ident, keep="first", maintain_order=True)
    if df.height - unique.height:
        reader.reject("worker_transfer.csv", "duplicate row (Mofka plugin re-send bug)",
                      df.height - unique.height)
    t = unique.with_row_index("transfer_id").with_columns(pl.col("transfer_id").cast(pl.Int64))
    transfers = t.select(
        "transfer_id", worker="called_from", peer="who",
        direction=pl.col("type").str.replace("_transfer", ""),
        total_bytes=pl.col("total").cast(pl.Float64, strict=False).cast(pl.Int64),
        compressed_bytes=pl.col("compressed").cast(pl.Float64, strict=False).cast(pl.Int64),
        reported_start_ns=_ns("start"), reported_stop_ns=_ns("stop"))
    rows, bad = [], 0
    for tid, text in t.select("transfer_id", "keys").iter_rows():
        try:
            parsed = ast.literal_eval(text) if text else {}
        except (ValueError, SyntaxError):
            bad += 1
            continue
        rows += [(tid, key_str(k), int(v)) for k, v in parsed.items()]
    if bad:
        reader.reject("worker_transfer.csv", "unparseable keys literal", bad)
    keys = pl.DataFrame(rows, schema=["transfer_id", "key", "nbytes"], orient="row")
    return conform(transfers, TABLES["transfers"]), conform(keys, TABLES["transfer_keys"])


def _dependencies(df: pl.DataFrame | None, reader: _Reader) -> pl.DataFrame:
    if df is None:
        return TABLES["dependencies"].empty()
    rows, bad = [], 0
    for client, deps, t in df.select("client", "dependencies", "time").iter_rows():
        try:
            parsed: dict[Any, Any] = ast.literal_eval(deps) if deps else {}
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            bad += 1
            continue
        t_ns = int(float(t) * 1e9) if t else None
        rows += [(key_str(k), key_str(d), client, t_ns) for k, ds in parsed.items() for d in ds]
    if bad:
        reader.reject("graph.csv", "unparseable dependencies literal", bad)
    out = pl.DataFrame(rows, schema=["key", "depends_on", "client", "local_time_ns"],
                       orient="row")
    return conform(out, TABLES["dependencies"]).unique(["key", "depends_on"])


def _match_workers(ex: pl.DataFrame, io: pl.DataFrame, workers: list[str]
                   ) -> dict[str, tuple[str, int, str]]:
    """worker address -> (host, pid, how matched)."""
    out: dict[str, tuple[str, int, str]] = {}
    if io.is_empty():
        return out
    threads = io.select("host", "pid", "thread_id").unique().drop_nulls()
    by_thread = (ex.filter(pl.col("thread_id").is_not_null()).select("worker", "thread_id")
                 .unique().join(threads, on="thread_id"))
    for (worker,), g in by_thread.group_by("worker"):
        procs = g.select("host", "pid").unique()
        if procs.height == 1:
            out[worker] = (procs["host"][0], int(procs["pid"][0]), "thread-id")
    rest = [w for w in workers if w not in out]
    if rest:
        out.update(_match_by_overlap(ex.filter(pl.col("worker").is_in(rest)), io,
                                     taken={(h, p) for h, p, _ in out.values()}))
    return out


def _match_by_overlap(ex: pl.DataFrame, io: pl.DataFrame, taken: set[tuple[str, int]]
                      ) -> dict[str, tuple[str, int, str]]:
    """Share of each process's DXT segments whose midpoint falls inside a worker's windows;
    accept a pairing only when clearly best for both (≥ 90 % and 20 points ahead)."""
    seg = io.select("host", "pid", mid=(pl.col("local_start_ns") + pl.col("local_stop_ns")) // 2)
    seg = seg.filter(~pl.struct("host", "pid").is_in([{"host": h, "pid": p} for h, p in taken]))
    if seg.is_empty() or ex.is_empty():
        return {}
    win = ex.select("worker", s="local_start_ns", e="local_stop_ns")
    inside = seg.join(win, how="cross").filter(
        (pl.col("mid") >= pl.col("s")) & (pl.col("mid") <= pl.col("e")))
    score = (inside.unique(["host", "pid", "mid", "worker"]).group_by("host", "pid", "worker")
             .len().join(seg.group_by("host", "pid").len(), on=["host", "pid"], suffix="_all")
             .with_columns(share=pl.col("len") / pl.col("len_all")))
    out = {}
    for (worker,), g in score.group_by("worker"):
        g = g.sort("share", descending=True)
        second = g["share"][1] if g.height > 1 else 0.0
        if g["share"][0] >= 0.9 and g["share"][0] - second >= 0.2:
            out[worker] = (g["host"][0], int(g["pid"][0]),
                           f"time-overlap ({g['share'][0]:.0%} of DXT inside its windows)")
    return out


def load(folder: Path) -> RunFrames:
    reader = _Reader(folder)
    sched = reader.csv("scheduler_transition.csv")
    work = reader.csv("worker_transition.csv")
    sched = _valid_times(_keys(sched), reader, "scheduler_transition.csv") if sched is not None \
        else None
    work = _valid_times(_keys(work), reader, "worker_transition.csv") if work is not None \
        else None
    if sched is None:
        reader.warnings.append("scheduler_transition.csv missing or empty: no thread ids, so "
                               "I/O can only be split by time window")
    worker_csv = reader.csv("worker.csv")
    worker_csv = worker_csv if worker_csv is not None else reader.csv("workers.csv")
    workers = sorted(set(worker_csv["worker"].drop_nulls()) if worker_csv is not None else set())
    ex = _executions(sched, work, reader)
    workers = sorted(set(workers) | set(ex["worker"].drop_nulls()))
    io = darshan_logs.load([folder]) if any(folder.glob("*.darshan*")) else None
    segs = io.io_segments if io is not None else TABLES["io_segments"].empty()
    matches = _match_workers(ex, segs, workers)
    ex = _attach_processes(ex, matches)
    transfers, transfer_keys = _transfers(reader.csv("worker_transfer.csv"), reader)
    frames = RunFrames(
        processes=_processes(workers, matches, io), executions=ex,
        transitions=_transitions(sched, work),
        startstops=_startstops(sched), transfers=transfers, transfer_keys=transfer_keys,
        dependencies=_dependencies(reader.csv("graph.csv"), reader),
        io_segments=segs,
        io_file_counters=io.io_file_counters if io else TABLES["io_file_counters"].empty(),
        darshan_logs=io.darshan_logs if io else TABLES["darshan_logs"].empty(),
        rejects=make_rejects(reader.rejects), source_format=SOURCE,
        facts={"workers": len(workers), "hosts": sorted({m[0] for m in matches.values()}),
               "matched_workers": {w: m[2] for w, m in sorted(matches.items())},
               "unmatched_workers": [w for w in workers if w not in matches]},
        warnings=tuple(reader.warnings + list(io.warnings if io else ())
                       + _match_warnings(workers, matches, io)))
    return frames


def _attach_processes(ex: pl.DataFrame, matches: dict[str, tuple[str, int, str]]
                      ) -> pl.DataFrame:
    if not matches:
        return ex
    m = pl.DataFrame([(w, h, p) for w, (h, p, _) in matches.items()],
                     schema=["worker", "m_host", "m_pid"], orient="row")
    return ex.join(m, on="worker", how="left").with_columns(
        host=pl.coalesce("host", "m_host"), pid=pl.coalesce("pid", "m_pid")).drop("m_host",
                                                                                  "m_pid")


def _startstops(sched: pl.DataFrame | None) -> pl.DataFrame:
    if sched is None:
        return TABLES["startstops"].empty()
    s = sched.filter(pl.col("begins").is_not_null() & (pl.col("finish") == "memory"))
    return conform(s.select("key", "worker", action=pl.lit("first-entry (action not recorded)"),
                            reported_start_ns=_ns("begins"), reported_stop_ns=_ns("ends")),
                   TABLES["startstops"])


def _processes(workers: list[str], matches: dict[str, tuple[str, int, str]],
               io: darshan_logs.DarshanFrames | None) -> pl.DataFrame:
    rows = [{"worker": w, "role": "worker", "host": matches.get(w, ("?",))[0],
             "pid": matches[w][1] if w in matches else None,
             "match": matches[w][2] if w in matches else "unmatched"} for w in workers]
    known = {(m[0], m[1]) for m in matches.values()}
    if io is not None:
        for log in io.darshan_logs.iter_rows(named=True):
            if (log["host"], log["pid"]) not in known:
                rows.append({"host": log["host"] or "?", "pid": log["pid"], "role": "other",
                             "name": (log["exe"] or "").split(" ")[0], "match": "darshan log"})
    return conform(pl.DataFrame(rows, infer_schema_length=None), TABLES["processes"])


def _match_warnings(workers: list[str], matches: dict[str, Any],
                    io: darshan_logs.DarshanFrames | None) -> list[str]:
    if io is None:
        return ["no Darshan logs in the folder: no I/O attribution"]
    missing = [w for w in workers if w not in matches]
    return ([f"{len(missing)} of {len(workers)} worker(s) not matched to a Darshan log: their "
             "I/O cannot be attributed"] if missing else [])
