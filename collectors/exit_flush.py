"""Flush before ``os._exit``: a Dask worker process whose parent (the nanny, or the job holding
a LocalCluster) goes away ends itself at once with ``os._exit`` (``distributed.process``), which
runs no ``atexit`` and no plugin teardown. The collectors' callbacks run first, each bounded,
so that the rows gathered since the last flush are written and the closing record says how
the process ended; the exit itself is unchanged."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import NoReturn

_CALLBACKS: list[Callable[[], None]] = []
_lock = threading.Lock()
_original: list[Callable[[int], NoReturn]] = []
#: the process whose callbacks these are: a child forked from it (a task's multiprocessing
#: Process, which ends with os._exit) inherits them, and a lock some other thread of the parent
#: held at the fork, but not the threads; it must exit without them, or it would hang there
#: or write its parent's rows a second time
_OWNER: list[int] = []


def _exit(status: int) -> NoReturn:
    if _OWNER and os.getpid() != _OWNER[0]:
        _original[0](status)
    with _lock:
        callbacks = list(_CALLBACKS)
        _CALLBACKS.clear()
    for callback in callbacks:
        try:
            callback()
        except BaseException:  # noqa: BLE001, S110 - the exit must happen
            pass
    _original[0](status)


def register(callback: Callable[[], None]) -> None:
    with _lock:
        if not _original:
            _original.append(os._exit)
            os._exit = _exit
        _OWNER[:] = [os.getpid()]
        _CALLBACKS.append(callback)


def unregister(callback: Callable[[], None]) -> None:
    with _lock:
        if callback in _CALLBACKS:
            _CALLBACKS.remove(callback)
