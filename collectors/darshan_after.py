"""After the job: let the job's processes finish writing their Darshan logs (bounded), name the
logs that are still incomplete, and tidy the memory-mapped logs Darshan leaves behind.

Darshan keeps each process's records in a memory-mapped file (``DARSHAN_MMAP_LOGPATH``, /tmp
unless set) and removes it when the process closes its log at exit. A process that never
closes its log leaves that file: one killed, or one that ``exec``'d another program (a shell
running the job's commands), and helpers that outlive the job's main process (multiprocessing's
resource tracker) are still writing their ``.darshan_partial`` log when the job's main process
has exited. `collect` points the mmap logs into the run folder (``MMAP_FOLDER``), waits a
bounded time for the job's remaining processes, keeps the mmap logs that hold records (the only
record of a killed process's I/O; darshan-parser reads them) and removes the empty ones.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from correlate.schema.run import MMAP_FOLDER
from correlate.sources.darshan_coverage import mmap_log_holds_records

#: seconds `collect` waits, at most, for the job's processes still alive after its main process
WAIT_S = 10.0


@dataclass
class Outcome:
    """What `collect` found once it stopped waiting."""
    waited_s: float = 0.0
    still_running: list[int] = field(default_factory=list)
    partial_logs: list[str] = field(default_factory=list)
    mmap_kept: list[str] = field(default_factory=list)
    mmap_removed: int = 0

    def message(self, run_dir: Path) -> str | None:
        """One line for the terminal, or None when every log is complete."""
        parts = []
        if self.partial_logs:
            shown = ", ".join(self.partial_logs[:3]) + (
                f", … ({len(self.partial_logs)} in all)" if len(self.partial_logs) > 3 else "")
            parts.append(f"{len(self.partial_logs)} Darshan log(s) still being written "
                         f"(.darshan_partial) after waiting {self.waited_s:.1f} s: {shown}")
        if self.still_running:
            parts.append(f"{len(self.still_running)} process(es) of the job still running "
                         f"(pid {', '.join(map(str, self.still_running[:5]))}): their logs "
                         "are written when they exit")
        if self.mmap_kept:
            parts.append(f"{len(self.mmap_kept)} process(es) did not close their Darshan log "
                         f"(killed, or exec'd another program): their records are kept in "
                         f"{run_dir / MMAP_FOLDER} (darshan-parser reads them)")
        return "; ".join(parts) or None


def job_processes(run_dir: Path, me: int | None = None) -> list[int]:
    """The live processes started with ``DASK_CORRELATE_RUN_DIR=run_dir`` (the job's, however
    they were started: children, daemons, helpers reparented when their parent exited), read
    from ``/proc/<pid>/environ`` (processes of other users are not readable and not ours)."""
    want = f"DASK_CORRELATE_RUN_DIR={run_dir.resolve()}".encode()
    me = os.getpid() if me is None else me
    found = []
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:  # no /proc (not Linux): nothing to wait for
        return []
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if want in fh.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            continue
    return sorted(found)


def wait_for_job(run_dir: Path, limit_s: float = WAIT_S, poll_s: float = 0.05
                 ) -> tuple[float, list[int]]:
    """Wait until no process of the job is alive, at most ``limit_s``: (seconds waited, pids
    still alive). Zombies count as gone: they have written their log."""
    start = time.monotonic()
    while True:
        alive = [p for p in job_processes(run_dir) if not _zombie(p)]
        waited = time.monotonic() - start
        if not alive or waited >= limit_s:
            return waited, alive
        time.sleep(poll_s)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True  # gone


def settle(run_dir: Path, limit_s: float = WAIT_S) -> Outcome:
    """Wait for the job's processes (bounded), then sort the logs: partial ones named, mmap
    logs with records kept, empty ones removed (all of them kept while a process of the job
    still runs). Never raises (the job has already run)."""
    out = Outcome()
    try:
        out.waited_s, out.still_running = wait_for_job(run_dir, limit_s)
        logs = run_dir / "darshan"
        out.partial_logs = sorted(p.name for p in logs.glob("*.darshan_partial"))
        for path in sorted((run_dir / MMAP_FOLDER).glob("*.darshan")):
            holds = mmap_log_holds_records(path)
            if holds is False and not out.still_running:  # a live one may yet record
                path.unlink(missing_ok=True)
                out.mmap_removed += 1
            elif holds:
                out.mmap_kept.append(path.name)
        folder = run_dir / MMAP_FOLDER
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    except (OSError, KeyboardInterrupt):  # a second Ctrl-C stops the waiting, not collect
        pass
    return out
