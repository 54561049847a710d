"""``collect env -o RUN_DIR``: the environment a batch script exports so that ``dask scheduler``
and ``dask worker`` started by the script itself (directly, through ``mpiexec``, dask-mpi or
dask-jobqueue) record into RUN_DIR, Darshan DXT included, without ``collect`` wrapping the job.

Prints ``export NAME=value`` lines (shell-quoted) for ``eval "$(collect env -o RUN_DIR)"``;
what could not be set (no darshan-runtime) is a ``#`` comment, so the output stays valid shell.
Creates RUN_DIR, its ``darshan/`` log folder and the generated ``darshan.conf``, and records
the command line of the script that ran it (``job_command.json``: the job's command, which the
scheduler's preload puts in the manifest; its exit code no process of the run can know).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from collectors import darshan_env, manifest, options
from collectors.job_env import job_environment
from collectors.sink import write_json_atomic

#: the variables `collect` sets for its child that the job script must set itself, in order
ORDER = ("DASK_CORRELATE_RUN_DIR", *options.ENV_NAMES,
         "DASK_DISTRIBUTED__SCHEDULER__PRELOAD", "DASK_DISTRIBUTED__SCHEDULER__PRELOAD_ARGV",
         "DASK_DISTRIBUTED__WORKER__PRELOAD", "DASK_DISTRIBUTED__WORKER__PRELOAD_ARGV",
         "LD_PRELOAD", "DARSHAN_ENABLE_NONMPI", "DXT_ENABLE_IO_TRACE", "DARSHAN_LOGPATH",
         "DARSHAN_LOG_DIR_PATH", "DARSHAN_MMAP_LOGPATH", "DARSHAN_CONFIG_PATH", "DASK_CORRELATE_MARKERS")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="collect env",
        description="Print the environment a job script must export (on every node) so that "
                    "`dask scheduler|worker --preload collectors.preload` record into RUN_DIR, "
                    "with Darshan DXT when a runtime is found.",
        epilog='example: eval "$(collect env -o $HOME/runs/job1)"')
    p.add_argument("-o", "--out", type=Path, required=True,
                   help="run folder (on a file system every node sees)")
    options.add_arguments(p)
    darshan_env.add_arguments(p)
    return p


def variables(run_dir: Path, args: argparse.Namespace, lib: str | None) -> dict[str, str]:
    """The job's variables: the same as `collect` gives its child (see launcher)."""
    env = job_environment(run_dir, args, lib)
    return {k: env[k] for k in ORDER if k in env}


def _quote(value: str) -> str:
    """Shell-quoted, readably: "['collectors.preload']" rather than shlex's '['"'"'…"""
    if any(c in value for c in '"$`\\!'):
        return shlex.quote(value)
    return value if shlex.quote(value) == value else f'"{value}"'


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    missing = darshan_env.named_runtime_missing(args.darshan)
    if missing:  # nothing on stdout: `eval "$(collect env …)"` then exports nothing
        print(f"collect env: {missing}", file=sys.stderr)
        return 2
    run_dir: Path = args.out.resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    # the job script that ran us: the command the scheduler's preload puts in the manifest
    # (the first to run it only: a dask-jobqueue worker job's prologue, after the scheduler
    # started, is not the job)
    job = manifest.job_command()
    first = not any((run_dir / n).exists() for n in (manifest.JOB_COMMAND, "manifest.json"))
    if job is not None and first:
        write_json_atomic(run_dir / manifest.JOB_COMMAND, job)
    lib, how = darshan_env.find_runtime(args.darshan)
    lines = [f"# dask-correlate: record into {run_dir} (`dask scheduler|worker --preload "
             "collectors.preload`, or any Dask process started with these variables)"]
    if lib:
        lines.append(f"# Darshan DXT: {lib} ({how}); logs in {run_dir / 'darshan'}")
    else:
        lines.append(f"# Darshan: {how}")
    for name, value in variables(run_dir, args, lib).items():
        lines.append(f"export {name}={_quote(value)}")
    print("\n".join(lines))
    if not lib and args.darshan != "off":
        print(f"collect env: {how}", file=sys.stderr)
    return 0
