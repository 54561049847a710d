"""``collect -o RUN_DIR -- COMMAND ...``: run a Dask job with the collectors attached.

Creates the run folder and its manifest, sets the environment so every scheduler and worker the
job starts (LocalCluster in the script, or ``dask scheduler``/``dask worker`` it launches) loads
``collectors.preload``, adds Darshan when a runtime is found, runs the command, passes its exit
code through and finalises the manifest (which processes did not close cleanly).

``collect env -o RUN_DIR`` prints the same environment (``collectors.job_env``) for a job
script that starts the Dask processes itself (``collectors.env_command``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from collectors import darshan_env, job_process, options
from collectors.job_env import job_environment


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="collect", formatter_class=argparse.RawTextHelpFormatter,
        description="Record a Dask job (scheduler, workers, per-task CPU, function profiles "
                    "and Darshan DXT) into a run folder for `correlate`.",
        epilog="example: collect -o runs/imgproc -- python my_pipeline.py\n"
               "batch scripts starting dask scheduler/worker themselves: "
               "collect env -o RUN_DIR (prints the variables to export; --help for more)\n"
               "Python: CPython 3.11-3.13 (tested). On 3.11.0-3.11.11 the collectors guard "
               "sys._current_frames()\nagainst CPython's deadlock gh-106883 in every Dask "
               "process they run in (docs/collectors.md).")
    p.add_argument("-o", "--out", type=Path, required=True, help="run folder to create")
    options.add_arguments(p)
    darshan_env.add_arguments(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the job's command")
    return p


def report_darshan_logs(run_dir: Path) -> None:
    """Wait (bounded) for the job's processes still writing their Darshan logs, tidy the
    memory-mapped ones and say, in one line, what is incomplete (collectors.darshan_after)."""
    from collectors import darshan_after

    message = darshan_after.settle(run_dir).message(run_dir)
    if message:
        print(f"collect: {message}", file=sys.stderr)


def create_run_folder(run_dir: Path) -> str | None:
    """Create RUN_DIR before the job starts; the one-line problem if it cannot be created or
    written (a job that then records nothing would be wasted)."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / f".collect-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        return (f"{run_dir}: cannot create a run folder there ({err.strerror or err}); "
                "give -o a folder you can write, e.g. -o runs/my_job")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["env"]:
        from collectors import env_command

        return env_command.main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    command = [c for c in args.command if c != "--"] if args.command else []
    if not command:
        parser.error("no command given: collect -o RUN_DIR -- python my_job.py")
    if shutil.which(command[0]) is None:
        print(f"collect: {command[0]}: command not found", file=sys.stderr)
        return 127
    missing = darshan_env.named_runtime_missing(args.darshan)
    if missing:
        print(f"collect: {missing}", file=sys.stderr)
        return 2
    run_dir: Path = args.out
    if (run_dir / "manifest.json").exists():
        print(f"collect: {run_dir}: already holds a run; choose another folder",
              file=sys.stderr)
        return 2
    problem = create_run_folder(run_dir)
    if problem:
        print(f"collect: {problem}", file=sys.stderr)
        return 2
    lib, how = darshan_env.find_runtime(args.darshan)
    if not lib and args.darshan != "off":
        print(f"collect: {how}", file=sys.stderr)
    proc = job_process.run(command, job_environment(run_dir, args, lib))
    # the manifest (package versions, Dask's config) is gathered while the job starts, not
    # before it: this process's start-up adds to the job's wall time. Should the scheduler's
    # preload write one first, this one replaces it and `finish` has the last word.
    # A run-folder fault never changes the job's outcome: it is said in one line.
    from collectors import manifest

    info = None
    try:
        info = manifest.start(run_dir, command=command,
                              options=options.Options.from_args(args).manifest(),
                              darshan={"runtime": lib, "reason": how})
    except OSError as err:
        _could_not("write", run_dir / "manifest.json", err)
    folder = _hold(run_dir)
    code = job_process.wait(proc)
    _after_job(_moved_to(run_dir, folder), lib, info, code)
    return code


def _after_job(run_dir: Path, lib: str | None, info: dict[str, Any] | None, code: int) -> None:
    """The Darshan logs settled, the manifest finished, and a line when no Dask process
    recorded anything; a run-folder fault is said in one line."""
    from collectors import manifest

    try:
        if lib:
            report_darshan_logs(run_dir)
        if info is not None:
            manifest.finish(run_dir, info, code)
        if not any((run_dir / "procs").glob("*/proc.json")):
            print(f"collect: no Dask scheduler or worker recorded into {run_dir}: the job "
                  "started none, or they could not write there (their log says why in a "
                  "`dask-correlate:` line); a LocalCluster the job creates, or `dask "
                  "scheduler|worker` it starts, inherit the collectors; a cluster started "
                  "elsewhere needs `collect env` on its nodes", file=sys.stderr)
    except OSError as err:
        _could_not("finish", run_dir / "manifest.json", err)


def _hold(run_dir: Path) -> int | None:
    """An open descriptor of the run folder, to find it again if it is moved during the job."""
    try:
        return os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None


def _moved_to(run_dir: Path, fd: int | None) -> Path:
    """Where the run folder is now: moved during the job (its path gone), the folder's new
    path (Linux's /proc/self/fd), said in one line; else ``run_dir``."""
    if fd is None:
        return run_dir
    try:
        if run_dir.is_dir() and os.path.samestat(os.stat(run_dir), os.fstat(fd)):
            return run_dir
        now = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if now.is_dir():
            print(f"collect: {run_dir} was moved to {now} during the job; the run is finished "
                  "there", file=sys.stderr)
            return now
    except OSError:
        pass
    finally:
        os.close(fd)
    return run_dir


def _could_not(what: str, path: Path, err: OSError) -> None:
    print(f"collect: could not {what} {path}: {err.strerror or err} (the job's exit code is "
          "passed through)", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
