"""``sys._current_frames()`` and ``sys._current_exceptions()`` with garbage collection off for
the call, on the Pythons whose runtime can deadlock there (CPython gh-106883).

On CPython 3.11.0 to 3.11.11 the call holds the runtime's HEAD_LOCK while it allocates frame
objects; an allocation can start a collection, and a ``gc.callbacks`` entry that gives the GIL
away (distributed's ``GCDiagnosis`` reads psutil in every worker) lets another thread take the
GIL and wait for HEAD_LOCK (Dask's profiler on the event loop, our sampler, a thread starting or
ending), while the first waits for the GIL: the process stops for good. CPython 3.11.12 fixed it
by disabling GC during the call (the fix this module repeats in Python); 3.10 allocates nothing
under the lock, and 3.12 and later run collections only between bytecodes, not inside it.

Every caller in the process goes through the guard once it is installed (Dask looks the
function up on ``sys`` at each call), so Dask's own profiler is covered as well as ours.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable
from typing import Any

from collectors.fork_safe import ForkSafeLock

#: the releases that can deadlock in ``sys._current_frames()`` (gh-106883; fixed in 3.11.12)
AFFECTED = (sys.implementation.name == "cpython"
            and (3, 11, 0) <= sys.version_info[:3] < (3, 11, 12))
_NAMES = ("_current_frames", "_current_exceptions")
#: the functions replaced, by name (empty: not installed)
_ORIGINALS: dict[str, Callable[[], Any]] = {}
# Re-entrant: a signal handler that samples stacks runs on the thread that may already hold it.
# Held across the call so that one caller's ``gc.enable()`` cannot end another's protection.
_lock = ForkSafeLock(threading.RLock)


def _guarded(original: Callable[[], Any]) -> Callable[[], Any]:
    def call() -> Any:
        with _lock:
            enabled = gc.isenabled()
            try:
                gc.disable()
                return original()
            finally:
                if enabled:
                    gc.enable()

    call.__name__ = original.__name__
    call.__doc__ = original.__doc__
    return call


def install(force: bool = False) -> bool:
    """Guard both functions in this process (idempotent); True if they are guarded now.
    Nothing is changed on the Pythons that do not need it, unless ``force`` (tests)."""
    if not (AFFECTED or force):
        return False
    with _lock:
        for name in _NAMES:
            if name not in _ORIGINALS and hasattr(sys, name):
                _ORIGINALS[name] = getattr(sys, name)
                setattr(sys, name, _guarded(_ORIGINALS[name]))
    return True


def uninstall() -> None:
    with _lock:
        for name, original in _ORIGINALS.items():
            setattr(sys, name, original)
        _ORIGINALS.clear()


def installed() -> bool:
    return bool(_ORIGINALS)

