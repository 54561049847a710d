"""Recup MiniApp outputs (``Reports/``) → canonical ``RunFrames``.

Uses what they carry: ``task_stream.yaml`` (Dask's task-finished messages: key, worker, thread,
every startstops entry), Yappi's ``yappi_pstat.prof`` (+ the pid and command from
``yappi_callgrind.prof``), ``distributed.yaml`` and the Darshan logs beside them. Reports what
they lack: the Yappi stats were taken in one process over all threads, without thread or task
tags, so they cannot be split per task; the stock Darshan logs have no DXT, so I/O is known per
file and process only.

YAML is read with a safe loader; the Polaris variant's ``!!python/tuple`` tag is accepted as a
plain tuple (no arbitrary object construction).
"""

from __future__ import annotations

import pstats
import re
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from correlate.keys import key_str, parse_key_text
from correlate.schema import TABLES, conform
from correlate.sources import darshan_logs
from correlate.sources.frames import RunFrames, make_rejects

SOURCE = "miniapp"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _TupleLoader(_Loader):  # type: ignore[misc, valid-type]
    """Safe loader that also reads ``!!python/tuple`` (as a tuple, nothing else)."""


_TupleLoader.add_constructor("tag:yaml.org,2002:python/tuple",
                             lambda loader, node: tuple(loader.construct_sequence(node)))


def looks_like(path: Path) -> bool:
    return (path / "task_stream.yaml").is_file()


def _key(k: Any) -> str:
    return parse_key_text(k) if isinstance(k, str) else key_str(k)


def _pid_of(worker: str | None) -> int | None:
    m = re.match(r"inproc://[^/]+/(\d+)/", worker or "")
    return int(m.group(1)) if m else None


def _task_stream(path: Path) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    with path.open("rb") as fh:
        msgs = yaml.load(fh, Loader=_TupleLoader) or []
    ex, ss, bad = [], [], 0
    for m in msgs:
        if not isinstance(m, dict) or "key" not in m:
            bad += 1
            continue
        key, worker = _key(m["key"]), m.get("worker")
        for s in m.get("startstops") or ():
            row = {"key": key, "worker": worker, "action": s.get("action"),
                   "source": s.get("source"), "reported_start_ns": int(s["start"] * 1e9),
                   "reported_stop_ns": int(s["stop"] * 1e9)}
            ss.append(row)
            if s.get("action") == "compute":
                ex.append({"key": key, "worker": worker, "pid": _pid_of(worker),
                           "thread_id": m.get("thread"), "status": m.get("status"),
                           "local_start_ns": row["reported_start_ns"],
                           "local_stop_ns": row["reported_stop_ns"],
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


def _yappi(folder: Path, warnings: list[str]) -> pl.DataFrame:
    path = folder / "yappi_pstat.prof"
    if not path.is_file():
        return TABLES["func_stats"].empty()
    head = _callgrind_header(folder / "yappi_callgrind.prof")
    pid = int(head["pid"]) if head.get("pid", "").isdigit() else None
    clock = "cpu" if "--yappi=cpu" in head.get("cmd", "") else "wall"
    stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    rows = [{"pid": pid, "file": file, "line": line, "name": func,
             "module": Path(file).stem if file else None, "ncall": nc, "tsub_s": tt,
             "ttot_s": ct, "clock": clock}
            for (file, line, func), (_cc, nc, tt, ct, _callers) in stats.items()]
    warnings.append(f"Yappi stats ({len(rows):,} functions, {clock} clock) come from process "
                    f"{pid} aggregated over all threads without task tags: they cannot be split "
                    "per task (shown per run only)")
    return conform(pl.DataFrame(rows, infer_schema_length=None), TABLES["func_stats"])


def load(folder: Path) -> RunFrames:
    warnings: list[str] = []
    executions, startstops, bad = _task_stream(folder / "task_stream.yaml")
    io = darshan_logs.load([folder]) if any(folder.glob("*.darshan*")) else None
    if io is not None and io.io_segments.is_empty():
        warnings.append("the Darshan logs have no DXT traces: I/O is known per file and "
                        "process only, not per task")
    workers = executions.select("worker", "pid").unique().drop_nulls("worker")
    hosts = {}
    if io is not None:
        hosts = dict(io.darshan_logs.select("pid", "host").drop_nulls().iter_rows())
    processes = workers.with_columns(role=pl.lit("worker"), host=pl.col("pid").replace_strict(
        hosts, default="?", return_dtype=pl.String), match=pl.lit("pid in inproc address"))
    executions = executions.with_columns(host=pl.col("pid").replace_strict(
        hosts, default="?", return_dtype=pl.String))
    config = folder / "distributed.yaml"
    dask_config = (yaml.load(config.read_text(), Loader=_TupleLoader)
                   if config.is_file() else None)
    return RunFrames(
        processes=conform(processes, TABLES["processes"]), executions=executions,
        startstops=startstops, func_stats=_yappi(folder, warnings),
        io_segments=io.io_segments if io else TABLES["io_segments"].empty(),
        io_file_counters=io.io_file_counters if io else TABLES["io_file_counters"].empty(),
        darshan_logs=io.darshan_logs if io else TABLES["darshan_logs"].empty(),
        rejects=make_rejects([(SOURCE, str(folder / "task_stream.yaml"),
                               "entry without a key", bad)]),
        source_format=SOURCE, warnings=tuple(warnings + list(io.warnings if io else ())),
        facts={"workers": workers.height, "dask_config": dask_config})
