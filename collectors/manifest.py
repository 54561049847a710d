"""``manifest.json``: what was run, where, with which versions and options. Unknown values are
explicit (``null`` plus a reason under ``unknown``), never guessed.

Who writes it: ``collect`` (before the job starts, finished when it exits), ``collectors.record``
(notebooks), or, when a batch script starts ``dask scheduler --preload collectors.preload``
without ``collect``, the scheduler's preload (``start_from_preload``): it knows neither the job's
command nor its exit code, and says so under ``unknown``."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from collectors.options import darshan_in_preload
from collectors.sink import closing_record, hostname, rewrite_in_place, write_json_atomic

JOB_VARIABLES = ("PBS_JOBID", "PBS_NODEFILE", "PBS_NUM_NODES", "SLURM_JOB_ID",
                 "SLURM_JOB_NODELIST", "SLURM_NNODES", "SLURM_NTASKS", "LSB_JOBID",
                 "COBALT_JOBID", "FLUX_JOB_ID")


def _normal(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def versions(dists: tuple[str, ...]) -> dict[str, str | None]:
    """Installed versions, read from the ``NAME-VERSION.dist-info`` folder names on
    ``sys.path`` (the first one wins, as for imports); ``importlib.metadata`` only for the
    others, whose import (with the email package it loads) cost `collect` more CPU than the
    rest of its manifest."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith(".dist-info") and "-" in name:
                dist, _, version = name[:-len(".dist-info")].partition("-")
                found.setdefault(_normal(dist), version)
    out: dict[str, str | None] = {}
    for dist in dists:
        out[dist] = found.get(_normal(dist))
        if out[dist] is None:
            from importlib import metadata

            try:
                out[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                pass
    return out


def dask_config() -> dict[str, Any] | None:
    """Dask's ``distributed`` settings as this process sees them, if Dask is imported here
    (the scheduler, a notebook): importing it only to read them was most of `collect`'s own
    CPU. The scheduler's ``proc.json`` records them in every run (``correlate``'s facts)."""
    dask = sys.modules.get("dask")
    return dask.config.config.get("distributed", {}) if dask is not None else None


def start(run_dir: Path, *, command: list[str] | None, options: dict[str, Any],
          darshan: dict[str, Any], recorded_by: str = "collect",
          unknown: dict[str, str] | None = None, extra: dict[str, Any] | None = None
          ) -> dict[str, Any]:
    from correlate.schema import RUN_FORMAT_VERSION

    unknown = dict(unknown or {})
    if options.get("profile") == "off":
        unknown["profile"] = "function profiling disabled (--profile off)"
    if not darshan.get("runtime"):
        unknown["darshan"] = str(darshan.get("reason") or "no darshan-runtime")
    config = dask_config()
    if config is None:
        unknown["dask_config"] = ("`collect` does not import Dask: the scheduler's proc.json "
                                  "records its settings")
    manifest = {
        "format_version": RUN_FORMAT_VERSION,
        "run_id": uuid.uuid4().hex,
        "recorded_by": recorded_by,
        "command": command,
        "cwd": os.getcwd(),
        "started_ns": time.time_ns(),
        "ended_ns": None,
        "exit_code": None,
        "launcher_host": hostname(),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": versions(("dask-correlate", "dask", "distributed", "yappi", "darshan",
                              "numpy", "pyarrow")),
        "collector_options": options,
        "darshan": darshan,
        "job_environment": {k: os.environ.get(k) for k in JOB_VARIABLES if k in os.environ},
        "dask_config": config,
        "unknown": unknown,
        **(extra or {}),
    }
    write_json_atomic(run_dir / "manifest.json", manifest, pad=FINISH_RESERVE)
    return manifest


#: spaces after the manifest's JSON: room for ``finish`` to rewrite it in place in a full folder
FINISH_RESERVE = 65536


def finish(run_dir: Path, manifest: dict[str, Any], exit_code: int) -> None:
    """The job's end and exit code; in a full folder, into the manifest's own reserved bytes
    (the list of processes is left out if it does not fit)."""
    try:
        procs = sorted(p.name for p in (run_dir / "procs").glob("*") if p.is_dir())
        unclosed = [p for p in procs if closing_record(run_dir / "procs" / p) is None]
    except OSError:
        procs, unclosed = [], []
    manifest.update(ended_ns=time.time_ns(), exit_code=exit_code, processes=procs,
                    processes_not_closed=unclosed,
                    hosts=sorted({p.split("-", 1)[1].rsplit("-", 1)[0] for p in procs}))
    path = run_dir / "manifest.json"
    try:
        write_json_atomic(path, manifest)
    except OSError:
        if not rewrite_in_place(path, manifest) and not rewrite_in_place(
                path, {**manifest, "processes": None, "processes_not_closed": None}):
            raise


#: manifest fields the scheduler's preload cannot know, and why
PRELOAD_UNKNOWN = {
    "command": "recorded by `dask scheduler --preload collectors.preload` without `collect`: "
               "the job's own command is not known (the scheduler's is scheduler_command)",
    "exit_code": "no `collect` waited for the job, so its exit code is not known",
    "ended_ns": "the time the scheduler closed, not the job's end",
}


#: what `collect env` knows of the job: the command line of the process that ran it
JOB_COMMAND = "job_command.json"


def job_command() -> dict[str, Any] | None:
    """The command line of this process's parent, for `collect env`: in a job script's
    ``eval "$(collect env …)"`` that is the script's shell (the command substitution's
    subshell is a fork of it, with its command line). None where it cannot be read."""
    ppid = os.getppid()
    try:
        raw = Path(f"/proc/{ppid}/cmdline").read_bytes()
    except OSError:
        return None
    args = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    return {"command": args, "pid": ppid, "host": hostname(),
            "time_ns": time.time_ns()} if args else None


def _job_command(run_dir: Path) -> dict[str, Any] | None:
    try:
        found = json.loads((run_dir / JOB_COMMAND).read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and isinstance(found.get("command"), list) else None


def start_from_preload(run_dir: Path, options: dict[str, Any]) -> dict[str, Any] | None:
    """Called by the scheduler's preload: write the manifest unless one exists (``collect``
    wrote it); the job's command is the one `collect env` recorded (``JOB_COMMAND``), if it
    ran. Returns what was written, or None."""
    if (run_dir / "manifest.json").exists():
        return None
    run_dir.mkdir(parents=True, exist_ok=True)
    lib = darshan_in_preload()
    reason = ("LD_PRELOAD of the scheduler" if lib else
              "the scheduler was started without libdarshan in LD_PRELOAD; workers' logs, if "
              "any, are still read from RUN_DIR/darshan/ (see `collect env`)")
    job = _job_command(run_dir)
    unknown = {k: v for k, v in PRELOAD_UNKNOWN.items() if not (job and k == "command")}
    source = ({"command_source": f"the process that ran `collect env` (pid {job.get('pid')} "
                                 f"on {job.get('host')})"} if job else {})
    return start(run_dir, command=job["command"] if job else None, options=options,
                 darshan={"runtime": lib, "reason": reason}, recorded_by="scheduler preload",
                 unknown=unknown, extra={"scheduler_command": list(sys.argv), **source})


def finish_from_preload(run_dir: Path, manifest: dict[str, Any]) -> None:
    """The scheduler closes: its end time, and the processes seen so far (workers may still be
    closing; ``correlate`` reads each one's closing record itself)."""
    procs = sorted(p.name for p in (run_dir / "procs").glob("*") if p.is_dir())
    manifest.update(ended_ns=time.time_ns(), processes=procs,
                    hosts=sorted({p.split("-", 1)[1].rsplit("-", 1)[0] for p in procs}))
    write_json_atomic(run_dir / "manifest.json", manifest)
