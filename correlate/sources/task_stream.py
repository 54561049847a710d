"""Dask's own task stream saved as a table (``task_stream.parquet``: key, worker, thread,
action, start, stop — e.g. from ``client.get_task_stream()``), with ``workers.json`` (address →
pid, host, scheduler_delay) and Darshan logs under ``darshan/`` → canonical ``RunFrames``.

Task-stream times are the worker clock + ``scheduler_delay``; the delay from ``workers.json``
is taken off to get back to the worker clock the DXT times are on.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from correlate.errors import InputError
from correlate.frames.keys import parse_key_text
from correlate.frames.mappers import Mapper, local_map
from correlate.schema import TABLES, conform
from correlate.sources import darshan_logs
from correlate.sources.frames import RunFrames

SOURCE = "task-stream"


def looks_like(path: Path) -> bool:
    return (path / "task_stream.parquet").is_file()


def _workers(path: Path) -> pl.DataFrame:
    if not path.is_file():
        return pl.DataFrame(schema={"worker": pl.String, "pid": pl.Int64, "host": pl.String,
                                    "scheduler_delay": pl.Float64})
    try:
        data = json.loads(path.read_text())
    except ValueError as err:
        raise InputError(path, f"unreadable JSON: {err}") from None
    return pl.DataFrame([{"worker": w, **v} for w, v in data.items()], infer_schema_length=None)


def load(folder: Path, mapper: Mapper = local_map) -> RunFrames:
    workers = _workers(folder / "workers.json")
    stream = pl.read_parquet(folder / "task_stream.parquet").join(workers, on="worker",
                                                                   how="left")
    delay = pl.col("scheduler_delay").fill_null(0.0)
    compute = stream.filter(pl.col("action") == "compute")
    keys = {k: parse_key_text(k) for k in compute["key"].unique().to_list()}
    executions = compute.select(
        "worker", "host", "pid", key=pl.col("key").replace_strict(keys),
        thread_id=pl.col("thread").cast(pl.UInt64),
        local_start_ns=((pl.col("start") - delay) * 1e9).round().cast(pl.Int64),
        local_stop_ns=((pl.col("stop") - delay) * 1e9).round().cast(pl.Int64),
        window_source=pl.lit("task-stream"))
    processes = workers.select("host", "pid", "worker", role=pl.lit("worker"),
                               match=pl.lit("workers.json"))
    clock = workers.select("host", "pid", local_time_ns=pl.lit(0, pl.Int64),
                           scheduler_delay_s="scheduler_delay")
    io = darshan_logs.load([folder / "darshan"], mapper) if (folder / "darshan").is_dir() else None
    warnings = [] if workers.height else ["no workers.json: worker processes unknown, so I/O "
                                          "cannot be matched to tasks"]
    return RunFrames(
        executions=conform(executions, TABLES["executions"]),
        processes=conform(processes, TABLES["processes"]),
        clock_samples=conform(clock, TABLES["clock_samples"]),
        io_segments=io.io_segments if io else TABLES["io_segments"].empty(),
        io_file_counters=io.io_file_counters if io else TABLES["io_file_counters"].empty(),
        darshan_logs=io.darshan_logs if io else TABLES["darshan_logs"].empty(),
        source_format=SOURCE, warnings=tuple(warnings + list(io.warnings if io else ())),
        facts={"workers": workers.height})
