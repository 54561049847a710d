"""Which files each execution opened, and on which thread: the link between a task and the I/O
that a library's own threads do for it.

A task's I/O does not always happen on the thread that runs it: zarr reads chunks on its I/O
threads, fsspec on its event-loop thread, pyarrow on its thread pool. Darshan sees those reads
on the helper thread. What Python itself carries across is the ``contextvars`` context:
``asyncio.to_thread``, ``run_coroutine_threadsafe`` and ``loop.call_soon_threadsafe`` run their
work in a copy of the caller's context. So the executing thread puts its execution in a context
variable (``CURRENT``), and a process-wide audit hook (PEP 578) records every Python-level
``open`` made while that variable is set, with the opening thread: a helper thread that opens a
file for the task is then named together with the task.

Audit hooks cannot be removed and run for every audited event of the process, so the hook does
one string comparison for the other events; it must never raise (an exception would fail the
user's ``open``).
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

#: (execution_seq, append) while an execution runs in this context: ``append`` takes a
#: ``task_file_opens`` row (the sink of the worker that runs it)
CURRENT: contextvars.ContextVar[tuple[int, Callable[[str, tuple], None]] | None] = (
    contextvars.ContextVar("dask_correlate_execution", default=None))
TABLE = "task_file_opens"

_installed = False
_lock = threading.Lock()


def _path(target: Any) -> str | None:
    if isinstance(target, int):  # open(fd): no new file
        return None
    path = os.fsdecode(target)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(os.getcwd(), path))


#: O_RDONLY, O_WRONLY, O_RDWR (the access mode bits of an ``os.open`` flag word)
_ACCESS = ("read", "write", "read-write")


def _access(mode: Any, flags: Any) -> str | None:
    """What an open allows: from ``open``'s mode string, else ``os.open``'s flags (its audit
    event has no mode); None when neither says."""
    if isinstance(mode, str):
        return "read-write" if "+" in mode else "read" if "r" in mode else "write"
    if isinstance(flags, int):
        acc = flags & 3
        return _ACCESS[acc] if acc < 3 else None
    return None


def _hook(event: str, args: tuple) -> None:
    if event != "open":
        return
    current = CURRENT.get()
    if current is None:
        return
    try:
        path = _path(args[0])
        if path is not None:
            seq, append = current
            append(TABLE, (time.time_ns(), seq, threading.get_ident(), path,
                           _access(*args[1:3])))
    except BaseException:  # noqa: BLE001 - never fail the user's open
        pass


def install() -> None:
    """Add the audit hook once per process."""
    global _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True
