"""Recup MiniApp outputs (``Reports/``) → canonical ``RunFrames``.

Uses what they carry: ``task_stream.yaml`` (Dask's task-finished messages: key, worker, thread,
every startstops entry), Yappi's ``yappi_pstat.prof`` (+ the pid and command from
``yappi_callgrind.prof``), ``distributed.yaml`` and the Darshan logs beside them. Reports what
they lack: the Yappi stats were taken in one process over all threads, without thread or task
tags, so they cannot be split per task; the stock Darshan logs have no DXT, so I/O is known per
file and process only.

YAML is read with a safe loader (C when available); the Polaris variant's ``!!python/tuple`` tag
is accepted as a plain tuple (no arbitrary object construction). The folder may be ``Reports/``
itself or the run folder holding it.

Mapping: each ``compute`` startstops entry → one ``executions`` row (``window_source
"task-stream"``; times are Dask's reported ones = worker clock + scheduler_delay, ≈ the worker
clock for an in-process LocalCluster); every entry → ``startstops``; the pid comes from the
``inproc://IP/pid/n`` worker address (host: the Darshan log of that pid, else the IP). Entries
without a key, or startstops without start/stop, are rejected with a reason. No transitions, no
graph and no transfers exist in these outputs: the summary says so.
"""

from __future__ import annotations

import pstats
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from correlate.errors import InputError
from correlate.frames.keys import key_str, parse_key_text
from correlate.frames.mappers import Mapper, local_map
from correlate.schema import TABLES, conform
from correlate.sources import darshan_logs
from correlate.sources.frames import RunFrames, make_rejects
from correlate.sources.matching import hosts_by_pid, pid_of

SOURCE = "miniapp"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# the base is chosen at import (libyaml's loader when PyYAML was built with it), which mypy
# cannot take as a class base
class _TupleLoader(_Loader):  # type: ignore[misc, valid-type]
    """Safe loader that also reads ``!!python/tuple`` (as a tuple, nothing else)."""


_TupleLoader.add_constructor("tag:yaml.org,2002:python/tuple",
                             lambda loader, node: tuple(loader.construct_sequence(node)))


def _reports(path: Path) -> Path:
    return path / "Reports" if (path / "Reports" / "task_stream.yaml").is_file() else path


def looks_like(path: Path) -> bool:
    return (_reports(path) / "task_stream.yaml").is_file()


def _key(k: Any) -> str:
    return parse_key_text(k) if isinstance(k, str) else key_str(k)


def _ns(value: Any) -> int | None:
    return round(float(value) * 1e9) if isinstance(value, int | float) else None


def _task_stream(path: Path) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, int]]:
    try:
        with path.open("rb") as fh:
            msgs = yaml.load(fh, Loader=_TupleLoader) or []
    except yaml.YAMLError as err:  # includes tags a safe loader refuses to construct
        raise InputError(path, f"not readable as a task stream: {err}".splitlines()[0]) from None
    ex, ss = [], []
    bad = {"entry without a key": 0, "startstops entry without start/stop": 0}
    for m in msgs if isinstance(msgs, list | tuple) else [msgs]:
        if not isinstance(m, dict) or "key" not in m:
            bad["entry without a key"] += 1
            continue
        key, worker = _key(m["key"]), m.get("worker")
        for s in m.get("startstops") or ():
            start, stop = (_ns(s.get("start")), _ns(s.get("stop"))) if isinstance(s, dict) \
                else (None, None)
            if start is None or stop is None:
                bad["startstops entry without start/stop"] += 1
                continue
            row = {"key": key, "worker": worker, "action": s.get("action"),
                   "source": s.get("source"), "reported_start_ns": start,
                   "reported_stop_ns": stop}
            ss.append(row)
            if s.get("action") == "compute":
                ex.append({"key": key, "worker": worker, "pid": pid_of(worker),
                           "thread_id": m.get("thread"), "status": m.get("status"),
                           "local_start_ns": start, "local_stop_ns": stop,
                           "window_source": "task-stream"})
    executions = pl.DataFrame(ex, infer_schema_length=None) if ex else TABLES[
        "executions"].empty()
    startstops = pl.DataFrame(ss, infer_schema_length=None) if ss else TABLES[
        "startstops"].empty()
    return (conform(executions, TABLES["executions"]), conform(startstops, TABLES["startstops"]),
            bad)


def _callgrind_header(path: Path) -> dict[str, str]:
    head: dict[str, str] = {}
    if path.is_file():
        with path.open() as fh:
            for line in fh:
                if line.startswith("fl=") or line.startswith("fn="):
                    break
                if ":" in line:
                    k, v = line.split(":", 1)
                    head[k.strip()] = v.strip()
    return head


def _yappi(folder: Path, warnings: list[str]) -> tuple[pl.DataFrame, int | None]:
    path = folder / "yappi_pstat.prof"
    if not path.is_file():
        return TABLES["func_stats"].empty(), None
    head = _callgrind_header(folder / "yappi_callgrind.prof")
    pid = int(head["pid"]) if head.get("pid", "").isdigit() else None
    clock = "cpu" if "--yappi=cpu" in head.get("cmd", "") else "wall"
    try:
        # typeshed's Stats does not declare the dict it fills (no public getter gives it as is)
        stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    except Exception as err:  # marshal/pstats raise many types on a damaged file
        warnings.append(f"{path}: unreadable pstats file ({type(err).__name__}); skipped")
        return TABLES["func_stats"].empty(), pid
    rows = [{"pid": pid, "file": file, "line": line, "name": func,
             "module": Path(file).stem if file else None, "ncall": nc, "tsub_s": tt,
             "ttot_s": ct, "clock": clock, "ncall_kind": "calls"}
            for (file, line, func), (_cc, nc, tt, ct, _callers) in stats.items()]
    warnings.append(f"Yappi stats ({len(rows):,} functions, {clock} clock) come from process "
                    f"{pid} aggregated over all threads without task tags: they cannot be split "
                    "per task (shown per run only)")
    return conform(pl.DataFrame(rows, infer_schema_length=None), TABLES["func_stats"]), pid


def _with_host(df: pl.DataFrame, hosts: dict[int, str]) -> pl.DataFrame:
    return df.with_columns(host=pl.coalesce(
        pl.col("host"), pl.col("pid").replace_strict(hosts, default=None,
                                                     return_dtype=pl.String)))


def _lacks(executions: pl.DataFrame, io: darshan_logs.DarshanFrames | None,
           yappi_pid: int | None) -> list[str]:
    out = ["MiniApp outputs carry no transitions, task graph or transfer log: waits, "
           "dependencies and transfers are unknown; lifecycles hold executions and startstops"]
    if io is None:
        out.append("no Darshan logs in the folder: no I/O data")
    elif io.segments().is_empty():
        out.append("the Darshan logs have no DXT traces: I/O is known exactly per file and "
                   "process only; per task it is estimated from the POSIX counters' first/last "
                   "call times (and HEATMAP bins) over the tasks running then (counter-window)")
    if yappi_pid is not None and yappi_pid not in set(executions["pid"].drop_nulls()):
        out.append(f"Yappi ran in process {yappi_pid}, which ran no task (the client): its "
                   "profile says nothing about task code")
    return out


def load(folder: Path, mapper: Mapper = local_map) -> RunFrames:
    folder = _reports(folder)
    warnings: list[str] = []
    executions, startstops, bad = _task_stream(folder / "task_stream.yaml")
    io = darshan_logs.load([folder], mapper) if any(folder.glob("*.darshan*")) else None
    func_stats, yappi_pid = _yappi(folder, warnings)
    hosts = hosts_by_pid(executions, io.darshan_logs if io else None)
    executions = _with_host(executions, hosts)
    workers = executions.select("worker", "pid", "host").unique().drop_nulls("worker")
    processes = workers.with_columns(role=pl.lit("worker"), match=pl.lit("pid in inproc address"))
    procs = set(workers["pid"].drop_nulls())
    extra = [{"pid": p, "host": hosts.get(p, "?"), "role": "client" if p == yappi_pid else "other",
              "name": (exe or "").split(" ")[0], "match": "darshan log"}
             for p, exe in (io.darshan_logs.select("pid", "exe").iter_rows() if io else [])
             if p not in procs]
    if yappi_pid is not None and yappi_pid not in procs and yappi_pid not in hosts:
        extra.append({"pid": yappi_pid, "host": "?", "role": "client", "match": "yappi"})
    if extra:
        processes = pl.concat([conform(processes, TABLES["processes"]),
                               conform(pl.DataFrame(extra), TABLES["processes"])])
    func_stats = _with_host(func_stats, hosts)
    config = folder / "distributed.yaml"
    try:
        dask_config = (yaml.load(config.read_text(), Loader=_TupleLoader)
                       if config.is_file() else None)
    except yaml.YAMLError as err:
        warnings.append(f"{config}: unreadable YAML ({err.__class__.__name__}); ignored")
        dask_config = None
    file = str(folder / "task_stream.yaml")
    return RunFrames(
        processes=conform(processes, TABLES["processes"]).with_columns(
            pl.col("host").fill_null("?")),
        executions=executions, startstops=startstops, func_stats=func_stats,
        io_segments=_with_host(io.segments(), hosts) if io else TABLES["io_segments"].empty(),
        io_file_counters=(_with_host(io.io_file_counters, hosts) if io
                          else TABLES["io_file_counters"].empty()),
        darshan_logs=_with_host(io.darshan_logs, hosts) if io else TABLES["darshan_logs"].empty(),
        rejects=make_rejects([(SOURCE, file, reason, n) for reason, n in bad.items()]),
        source_format=SOURCE,
        warnings=tuple(warnings + _lacks(executions, io, yappi_pid)
                       + list(io.warnings if io else ())),
        facts={"workers": workers.height, "tasks": executions["key"].n_unique(),
               "yappi_pid": yappi_pid, "dask_config": dask_config,
               "matched_workers": {w: "pid in inproc address"
                                   for w in workers["worker"].to_list()}})
