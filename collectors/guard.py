"""``never_raise``: hook bodies never raise into Dask; errors are counted per kind and the
first of each kind is logged to ``hook_errors.log`` in the process folder."""

from __future__ import annotations

import functools
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from collectors.fork_safe import ForkSafeLock

P = ParamSpec("P")
R = TypeVar("R")

#: kind ("<function>: <ExceptionType>") -> count, for this process
ERRORS: Counter[str] = Counter()
_LOG: list[Path] = []
_lock = ForkSafeLock()


def set_log_dir(path: Path) -> None:
    _LOG[:] = [path / "hook_errors.log"]


def record(err: BaseException, where: str) -> None:
    """Count a failure of the hook ``where``; the first of its kind is logged."""
    kind = f"{where}: {type(err).__name__}"
    with _lock:
        ERRORS[kind] += 1
        first = ERRORS[kind] == 1
    if not first:
        return
    try:
        if not _LOG:
            raise FileNotFoundError("no process folder")
        with _LOG[0].open("a") as fh:
            fh.write(f"== {kind}\n{traceback.format_exc()}\n")
    except OSError:
        # nowhere to log it in the run folder (one that cannot be created or written): one
        # line in the process's own log, so that the user learns why nothing was recorded
        import logging

        logging.getLogger("distributed.dask_correlate").warning(
            "dask-correlate: %s: %s (not recorded in the run folder)", kind, err)


def quietly(call: Callable[[], Any], where: str) -> None:
    """Call ``call`` (a profiler switched on or off around a task); a failure is counted,
    never raised into the task."""
    try:
        call()
    except Exception as err:  # noqa: BLE001 - never fail the task
        record(err, where)


def never_raise(fn: Callable[P, R]) -> Callable[P, R | None]:
    """Run ``fn``; on any exception count it, log the first of its kind, return None."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return fn(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - the point of the guard
            record(err, fn.__qualname__)
            return None

    return wrapper
