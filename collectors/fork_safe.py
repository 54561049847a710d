"""``ForkSafeLock``: a module-level lock that a forked child gets anew.

A forked child has only the thread that called ``fork``; a lock that another thread of the
parent held at that moment would never be released in the child, and the child's first hook to
take it would wait forever. Tasks do fork (``multiprocessing`` with the fork start method,
``subprocess`` helpers, libraries), so every lock the collectors take in a Dask process is one of
these."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any


class ForkSafeLock:
    """A lock (``threading.Lock`` unless ``factory`` says otherwise) replaced by a new one in a
    forked child. For module-level locks only: the at-fork hook keeps the object alive."""

    __slots__ = ("_factory", "_lock")

    def __init__(self, factory: Callable[[], Any] = threading.Lock) -> None:
        self._factory = factory
        self._lock = factory()
        os.register_at_fork(after_in_child=self._renew)

    def _renew(self) -> None:
        self._lock = self._factory()

    def __enter__(self) -> ForkSafeLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
