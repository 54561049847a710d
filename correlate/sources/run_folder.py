"""Our run folder (written by ``collect``) → canonical ``RunFrames``.

Layout: ``manifest.json``; ``procs/<role>-<host>-<pid>/{proc.json, closed.json,
<table>/part-*.parquet}`` (tables in ``correlate.schema.run``); ``darshan/*.darshan``.
Only ``procs/`` is required: a folder recorded by ``--preload`` alone, with no scheduler
preloaded (so no manifest), is read too, and ``facts["unknown"]`` says what is then unknown.
A newer format version is refused with one sentence; a process without ``closed.json`` did not
shut down cleanly (its earlier parts are still used, and it is reported).

The transitions and profile rows (``LAZY_TABLES``, the largest by far) are returned as lazy scans
of their parts: the engine reads them when it needs them and lets them go after.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

import correlate.schema.run as raw
from correlate.errors import InputError, UnsupportedVersionError
from correlate.mappers import Mapper, local_map
from correlate.schema import RUN_FORMAT_VERSION, TABLES, conform
from correlate.sources import darshan_logs
from correlate.sources.frames import RunFrames, make_rejects

#: raw tables read lazily (a million executions: 11M transitions, 5M profile rows)
LAZY_TABLES = ("scheduler_transitions", "worker_transitions", "worker_func_stats")


#: what a run folder without manifest.json cannot tell, and why
NO_MANIFEST_UNKNOWN = {
    "manifest": "no manifest.json: recorded by `--preload collectors.preload` without "
                "`collect` and without a preloaded scheduler",
    "command": "the job's command is recorded only by `collect` or the scheduler's preload",
    "cwd": "the job's working directory is recorded only in manifest.json",
    "exit_code": "the job's exit code is recorded only by `collect`",
    "started_ns": "taken from the first process's start (proc.json), not the job's",
    "ended_ns": "taken from the last process's clean close (closed.json), not the job's",
    "versions": "package versions are recorded only in manifest.json",
}


def looks_like(path: Path) -> bool:
    """manifest.json is optional; a ``procs/`` folder with at least one process is enough."""
    procs = path / "procs"
    if not procs.is_dir():
        return False
    return (path / "manifest.json").is_file() or any(procs.glob("*/proc.json"))


def _json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InputError(path, f"unreadable JSON: {err}") from None


class _Reader:
    """Collects tables across process folders, with rejects for unreadable parts."""

    def __init__(self) -> None:
        self.rejects: list[tuple[str, str | None, str, int]] = []
        self.warnings: list[str] = []

    def table(self, proc_dir: Path, name: str) -> pl.DataFrame:
        parts = _parts(proc_dir, name)
        if len(parts) > 1:
            try:  # all parts at once (read in parallel); part by part when any is unreadable
                whole = pl.read_parquet(parts, missing_columns="insert")
                return conform(whole, TABLES[name], path=str(proc_dir))
            except Exception:  # noqa: BLE001 - the loop below names the part and rejects it
                pass
        frames = []
        for part in parts:
            try:
                frames.append(pl.read_parquet(part))
            except Exception as err:  # noqa: BLE001 - any unreadable part is a reject
                self.rejects.append(("run-folder", str(part), f"unreadable part: {err}", 1))
        if not frames:
            return TABLES[name].empty()
        return conform(pl.concat(frames, how="diagonal_relaxed"), TABLES[name], path=str(proc_dir))

    def scan(self, proc_dir: Path, name: str) -> pl.LazyFrame:
        """The table's parts as one lazy scan; a part whose footer cannot be read is a reject
        now, not an error when the scan is read."""
        scans = []
        for part in _parts(proc_dir, name):
            try:
                pl.read_parquet_schema(part)
            except Exception as err:  # noqa: BLE001 - any unreadable part is a reject
                self.rejects.append(("run-folder", str(part), f"unreadable part: {err}", 1))
                continue
            scans.append(conform(pl.scan_parquet(part), TABLES[name], path=str(part)))
        return pl.concat(scans) if scans else TABLES[name].empty().lazy()


def _parts(proc_dir: Path, name: str) -> list[Path]:
    return sorted((proc_dir / name).glob("*.parquet")) if (proc_dir / name).is_dir() else []


def _procs(run_dir: Path) -> list[tuple[Path, dict[str, Any], dict[str, Any] | None]]:
    out = []
    for d in sorted((run_dir / "procs").iterdir()):
        if not d.is_dir() or not (d / "proc.json").exists():
            continue
        closed = _json(d / "closed.json") if (d / "closed.json").exists() else None
        out.append((d, _json(d / "proc.json"), closed))
    return out


def _with_proc(df: pl.DataFrame, info: dict[str, Any]) -> pl.DataFrame:
    """Add the recording process; worker tables also get its address as ``worker``."""
    df = df.with_columns(host=pl.lit(info["host"]), pid=pl.lit(info["pid"], pl.Int64))
    if info["role"] == "worker":
        df = df.with_columns(worker=pl.lit(info.get("address")))
    return df


def _check_version(manifest: dict[str, Any], path: Path) -> None:
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > RUN_FORMAT_VERSION:
        raise UnsupportedVersionError(path, f"run folder format {version!r} is newer than this "
                                      f"correlate understands ({RUN_FORMAT_VERSION}); upgrade")


def _manifest(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / "manifest.json"
    if not path.exists():
        return None
    manifest = _json(path)
    _check_version(manifest, path)
    return manifest


def load(run_dir: Path, mapper: Mapper = local_map) -> RunFrames:
    manifest = _manifest(run_dir)
    reader = _Reader()
    if manifest is None:
        reader.warnings.append(f"{run_dir}: no manifest.json (recorded without `collect` or a "
                               "preloaded scheduler): command, exit code and versions unknown")
    elif manifest.get("recorded_by") == "scheduler preload":
        reader.warnings.append(f"{run_dir / 'manifest.json'}: written by the scheduler's preload "
                               "(no `collect`): the job's command and exit code are unknown")
    per_table: dict[str, list[pl.DataFrame]] = {t.name: [] for t in raw.RUN_TABLES}
    processes = []
    for d, info, closed in _procs(run_dir):
        if "format_version" in info:
            _check_version(info, d / "proc.json")
        processes.append({"host": info["host"], "pid": info["pid"], "role": info["role"],
                          "worker": info.get("address") if info["role"] == "worker" else None,
                          "name": info.get("name"), "nthreads": info.get("nthreads"),
                          "main_thread_id": info.get("main_thread_id"),
                          "local_directory": info.get("local_directory"),
                          "closed_cleanly": closed is not None, "match": "pid"})
        _quality(d, info, closed, reader)
        for t in raw.RUN_TABLES:
            if t.name in LAZY_TABLES:
                if _parts(d, t.name):
                    per_table[t.name].append(_with_proc(reader.scan(d, t.name), info))
                continue
            df = reader.table(d, t.name)
            if df.height:
                per_table[t.name].append(_with_proc(df, info))
    tables: dict[str, Any] = {n: pl.concat(v, how="diagonal_relaxed") if v else None
                              for n, v in per_table.items()}
    io = (darshan_logs.load([run_dir / "darshan"], mapper, segments=False)
          if (run_dir / "darshan").is_dir() else None)
    frames = _canonical(tables, processes, io, reader)
    facts = (_facts(manifest, processes) if manifest is not None
             else _facts_without_manifest(run_dir, processes))
    return RunFrames(**frames, source_format="run-folder", facts=facts,
                     warnings=tuple(reader.warnings + list(io.warnings if io else ())),
                     rejects=make_rejects(reader.rejects))


def _quality(d: Path, info: dict[str, Any], closed: dict[str, Any] | None,
             reader: _Reader) -> None:
    name = d.name
    if closed is None:
        reader.warnings.append(f"{name} did not close cleanly (killed or crashed): data up to "
                               "its last flush is used")
        return
    for table, n in (closed.get("dropped") or {}).items():
        reader.rejects.append(("collector", name, f"{table}: rows dropped (buffer full)", n))
    errors = sum((closed.get("hook_errors") or {}).values())
    if errors:
        reader.warnings.append(f"{name}: {errors} collector hook error(s), see "
                               f"{d / 'hook_errors.log'}")
    untimed = closed.get("executions_not_timed") or 0
    if untimed:
        reader.warnings.append(f"{name}: {untimed} execution(s) not timed on their thread "
                               "(coroutine or non-thread executors)")
    lost = sum((closed.get("transfers_lost_to_dask_log_limit") or {}).values())
    if lost:
        reader.rejects.append(("collector", name, "transfers lost to Dask's bounded log", lost))


def _empty_or(df: pl.DataFrame | None, name: str) -> pl.DataFrame:
    return TABLES[name].empty() if df is None else df


def _lazy_or(lf: pl.LazyFrame | None, name: str) -> pl.LazyFrame:
    return TABLES[name].empty().lazy() if lf is None else lf


def _canonical(t: dict[str, Any], processes: list[dict[str, Any]],
               io: darshan_logs.DarshanFrames | None, reader: _Reader) -> dict[str, Any]:
    sched = _lazy_or(t["scheduler_transitions"], "scheduler_transitions")
    ex = _empty_or(t["task_executions"], "task_executions")
    if "worker" not in ex.columns:
        ex = ex.with_columns(host=pl.lit(None, pl.String), pid=pl.lit(None, pl.Int64),
                             worker=pl.lit(None, pl.String))
    executions = _with_names(ex, sched).with_columns(
        cpu_s=pl.col("thread_cpu_ns") / 1e9, window_source=pl.lit("executor-hook"))
    transitions = _transitions(sched, t["worker_transitions"])
    transfers, transfer_keys = _transfers(t["worker_transfers"], t["worker_transfer_keys"])
    deps = _empty_or(t["task_dependencies"], "task_dependencies")
    deps = deps.filter(pl.col("depends_on").is_not_null()).unique(["key", "depends_on"],
                                                                maintain_order=True)
    funcs = _lazy_or(t["worker_func_stats"], "worker_func_stats")
    funcs = funcs.with_columns(execution_seq=pl.when(pl.col("execution_seq") > 0)
                               .then(pl.col("execution_seq")))
    out = {
        "processes": _processes(processes, io),
        "executions": executions,
        "transitions": transitions,
        "startstops": _empty_or(t["task_startstops"], "task_startstops"),
        "transfers": transfers, "transfer_keys": transfer_keys,
        "dependencies": deps,
        "func_stats": funcs,
        "clock_samples": _empty_or(t["worker_clock_samples"], "worker_clock_samples"),
        "clock_markers": _empty_or(t["worker_clock_markers"], "worker_clock_markers"),
        "file_opens": _empty_or(t["task_file_opens"], "task_file_opens"),
        "execution_slices": _empty_or(t["coroutine_slices"], "coroutine_slices").with_columns(
            cpu_s=pl.col("thread_cpu_ns") / 1e9),
    }
    if io is not None:
        out.update(io_segments=io.io_segments, io_file_counters=io.io_file_counters,
                   darshan_logs=io.darshan_logs)
    return {name: conform(df, TABLES[name], path=name) for name, df in out.items()}


def _with_names(executions: pl.DataFrame, sched: pl.LazyFrame) -> pl.DataFrame:
    """``executions`` with the prefix and group the scheduler logged for their keys. Every
    transition of a key carries the same names (both derive from the key; the collector logs
    them while the task is alive), so the transitions out of ``released``, where every task
    starts, are read first (a third of them: 1M named tasks 1.3 -> 0.7 s), and the others only
    for keys not named there (missed or recreated tasks)."""
    named = sched.filter(pl.col("prefix").is_not_null())

    def names(transitions: pl.LazyFrame) -> pl.DataFrame:
        return (transitions.select("key", "prefix", "group")
                .unique("key", keep="first", maintain_order=True).collect())

    out = executions.join(names(named.filter(pl.col("start") == "released")), on="key",
                          how="left")
    unnamed = out.filter(pl.col("prefix").is_null()).select("key")
    if unnamed.is_empty():
        return out
    later = (named.filter(pl.col("start") != "released").select("key", "prefix", "group")
             .collect())
    if later.is_empty():
        return out
    rest = names(later.lazy().join(unnamed.lazy(), on="key", how="semi"))
    return out.join(rest, on="key", how="left", suffix="_", maintain_order="left").select(
        *(pl.coalesce(c, f"{c}_").alias(c) if c in ("prefix", "group") else c
          for c in out.columns))


def _transitions(sched: pl.LazyFrame, worker: pl.LazyFrame | None) -> pl.LazyFrame:
    s = sched.with_columns(side=pl.lit("scheduler"))
    parts = [conform(s, TABLES["transitions"])]
    if worker is not None:
        parts.append(conform(worker.with_columns(side=pl.lit("worker")), TABLES["transitions"]))
    return pl.concat(parts)


def _transfers(tr: pl.DataFrame | None, keys: pl.DataFrame | None
               ) -> tuple[pl.DataFrame, pl.DataFrame]:
    if tr is None:
        return TABLES["transfers"].empty(), TABLES["transfer_keys"].empty()
    tr = tr.sort("host", "pid", "transfer_seq").with_row_index("transfer_id").with_columns(
        pl.col("transfer_id").cast(pl.Int64))
    ids = tr.select("host", "pid", "transfer_seq", "transfer_id")
    k = (keys.join(ids, on=["host", "pid", "transfer_seq"]) if keys is not None
         else TABLES["transfer_keys"].empty())
    return tr, k


def _processes(procs: list[dict[str, Any]], io: darshan_logs.DarshanFrames | None
               ) -> pl.DataFrame:
    known = conform(pl.DataFrame(procs, infer_schema_length=None), TABLES["processes"]) if (
        procs) else TABLES["processes"].empty()
    if io is None or io.darshan_logs.is_empty():
        return known
    logs = io.darshan_logs.filter(pl.col("host").is_not_null()).select(
        "host", "pid", name="exe")
    others = logs.join(known.select("host", "pid"), on=["host", "pid"], how="anti").with_columns(
        role=pl.lit("other"), match=pl.lit("darshan log only"))
    return pl.concat([known, conform(others, TABLES["processes"])], how="vertical_relaxed")


def _facts(manifest: dict[str, Any], processes: list[dict[str, Any]]) -> dict[str, Any]:
    workers = [p for p in processes if p["role"] == "worker"]
    return {
        "command": " ".join(manifest["command"]) if manifest.get("command") else None,
        "cwd": manifest.get("cwd"),
        "started_ns": manifest.get("started_ns"), "ended_ns": manifest.get("ended_ns"),
        "exit_code": manifest.get("exit_code"),
        "hosts": sorted({p["host"] for p in processes}),
        "workers": len(workers),
        "nthreads": sorted({p.get("nthreads") for p in workers if p.get("nthreads")}),
        "versions": manifest.get("versions"),
        "collector_options": manifest.get("collector_options"),
        "darshan": (manifest.get("darshan") or {}).get("runtime"),
        "job_environment": manifest.get("job_environment"),
        "run_id": manifest.get("run_id"),
        "recorded_by": manifest.get("recorded_by", "collect"),
        "unknown": manifest.get("unknown") or {},
    }


def _facts_without_manifest(run_dir: Path, processes: list[dict[str, Any]]) -> dict[str, Any]:
    """What the process folders tell on their own; the rest is listed under ``unknown``."""
    started, ended = [], []
    for _d, info, closed in _procs(run_dir):
        started.append(info.get("started_ns"))
        ended.append((closed or {}).get("closed_ns"))
    facts = _facts({}, processes)
    starts = [t for t in started if isinstance(t, int)]
    ends = [t for t in ended if isinstance(t, int)]
    facts.update(command=None, started_ns=min(starts) if starts else None,
                 ended_ns=max(ends) if ends else None, recorded_by="preload (no manifest)",
                 unknown=dict(NO_MANIFEST_UNKNOWN))
    return facts
