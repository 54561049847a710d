"""``manifest.json``: what was run, where, with which versions and options. Unknown values are
explicit (``null`` plus a reason under ``unknown``), never guessed."""

from __future__ import annotations

import os
import platform
import sys
import time
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

from collectors.sink import hostname, write_json_atomic

JOB_VARIABLES = ("PBS_JOBID", "PBS_NODEFILE", "PBS_NUM_NODES", "SLURM_JOB_ID",
                 "SLURM_JOB_NODELIST", "SLURM_NNODES", "SLURM_NTASKS", "LSB_JOBID",
                 "COBALT_JOBID", "FLUX_JOB_ID")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _dask_config() -> dict[str, Any]:
    import dask

    return dask.config.config.get("distributed", {})


def start(run_dir: Path, *, command: list[str], options: dict[str, Any],
          darshan: dict[str, Any]) -> dict[str, Any]:
    from correlate.schema import RUN_FORMAT_VERSION

    unknown = {}
    if options.get("profile") == "off":
        unknown["profile"] = "function profiling disabled (--profile off)"
    if not darshan.get("runtime"):
        unknown["darshan"] = darshan.get("reason")
    manifest = {
        "format_version": RUN_FORMAT_VERSION,
        "run_id": uuid.uuid4().hex,
        "command": command,
        "cwd": os.getcwd(),
        "started_ns": time.time_ns(),
        "ended_ns": None,
        "exit_code": None,
        "launcher_host": hostname(),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": {d: _version(d) for d in ("dask-correlate", "dask", "distributed", "yappi",
                                              "darshan", "numpy", "pyarrow")},
        "collector_options": options,
        "darshan": darshan,
        "job_environment": {k: os.environ.get(k) for k in JOB_VARIABLES if k in os.environ},
        "dask_config": _dask_config(),
        "unknown": unknown,
    }
    write_json_atomic(run_dir / "manifest.json", manifest)
    return manifest


def finish(run_dir: Path, manifest: dict[str, Any], exit_code: int) -> None:
    procs = sorted(p.name for p in (run_dir / "procs").glob("*") if p.is_dir())
    unclosed = [p for p in procs if not (run_dir / "procs" / p / "closed.json").exists()]
    manifest.update(ended_ns=time.time_ns(), exit_code=exit_code, processes=procs,
                    processes_not_closed=unclosed,
                    hosts=sorted({p.split("-", 1)[1].rsplit("-", 1)[0] for p in procs}))
    write_json_atomic(run_dir / "manifest.json", manifest)
