"""Which Dask processes of a run have no complete Darshan log, and why, in one warning.

Imported by `collect` (``collectors.darshan_after``): standard library only.

Darshan writes a process's log when the process exits normally: first as
``….darshan_partial``, renamed to ``…_1.darshan`` once written. A process killed before its
exit (SIGKILL, SIGINT without a clean shutdown, a crash) writes none; one killed while writing
leaves the ``.darshan_partial``; its records may survive only as a memory-mapped log
(``collect`` keeps those that hold records in ``darshan-mmap/``). Either way that process's I/O
is missing from every total, which the summary must say rather than show less I/O.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: a non-MPI log's name carries the process id: ``<user>_<exe>_id<jobid>-<pid>_<date>…``
_LOG_PID = re.compile(r"_id\d+-(\d+)_")


#: ``struct darshan_header`` (darshan-log-format.h): version string, magic number, compression
#: type, partial flags, then the name map and DARSHAN_MAX_MODS (64) module maps, each an
#: (offset, length) pair of uint64
_HEADER = struct.Struct("<8sqB7xQ" + "QQ" * 65)
_MAGIC = 6567223


def mmap_log_holds_records(path: Path) -> bool | None:
    """Whether a memory-mapped log (or any uncompressed-header log) holds a name or module
    record (None: not a Darshan log, or unreadable). Light: `collect` uses it too."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEADER.size)
    except OSError:
        return None
    if len(head) < _HEADER.size:
        return None
    fields = _HEADER.unpack(head)
    if fields[1] != _MAGIC:
        return None
    return any(fields[5::2])  # the lengths of the name map and of each module map


@dataclass(frozen=True)
class Process:
    name: str  # the run folder's procs/ entry, e.g. worker-node1-4242
    host: str | None
    pid: int


@dataclass(frozen=True)
class LogFile:
    name: str  # file name in darshan/
    host: str | None  # from its DXT records, when it could be read and has one


def pid_of_log(name: str) -> int | None:
    """The process id in a Darshan log's file name (None: not the non-MPI naming)."""
    m = _LOG_PID.search(name)
    return int(m.group(1)) if m else None


def _same_host(a: str | None, b: str | None) -> bool:
    """Hosts agree, or one is unknown; short and full names of one host agree."""
    return a is None or b is None or a.split(".")[0] == b.split(".")[0]


def missing_logs(processes: Iterable[Process], logs: Iterable[LogFile]
                 ) -> dict[str, str]:
    """procs/ name -> why it has no complete log (processes with one are left out)."""
    by_pid: dict[int, list[LogFile]] = {}
    for log in logs:
        pid = pid_of_log(log.name)
        if pid is not None:
            by_pid.setdefault(pid, []).append(log)
    out = {}
    for p in processes:
        mine = [log for log in by_pid.get(p.pid, []) if _same_host(log.host, p.host)]
        if any(log.name.endswith(".darshan") for log in mine):
            continue
        out[p.name] = ("log still .darshan_partial: killed while writing it" if mine else
                       "no log: it did not close its log (killed, or still running)")
    return out


def warning(processes: list[Process], logs: list[LogFile], mmap_kept: list[str]) -> str | None:
    """One line naming the Dask processes without a complete log (None: every one has)."""
    missing = missing_logs(processes, logs)
    if not missing:
        return None
    shown = "; ".join(f"{name} ({why})" for name, why in list(missing.items())[:4])
    more = f"; … ({len(missing)} in all)" if len(missing) > 4 else ""
    kept = (f"; {len(mmap_kept)} memory-mapped log(s) of processes that did not close their "
            "log are in darshan-mmap/ (darshan-parser reads them; not counted here)"
            if mmap_kept else "")
    return (f"Darshan: {len(missing)} of {len(processes)} Dask process(es) have no complete "
            f"log, so their I/O is missing from every I/O figure: {shown}{more}{kept}")
