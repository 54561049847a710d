"""Coroutine tasks (``async def`` task functions): Dask awaits them on the worker's event loop,
inside the asyncio task that runs ``Worker.execute``, interleaved with other coroutine tasks
and Dask's own comms. Neither the thread nor the start-stop window says which of them did
what, so the plugin hands Dask, instead of its execute coroutine, a ``CoroutineSteps`` that
drives it one step at a time: each step (from a resume to the next ``await`` that suspends) is
timed on the loop with its wall and thread-CPU clocks, and the execution's profile tags are
set only while it runs. The steps are the coroutine's active slices.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from types import CoroutineType
from typing import Any

from collectors.guard import record


class CoroutineSteps(Coroutine):
    """Awaitable in place of a coroutine: each ``send``/``throw`` is one step, recorded as
    (wall start, wall stop, thread CPU) in ``steps``; ``enter``/``leave`` run around each step
    on the loop thread, ``done(steps, result)`` once the coroutine returned or raised (result
    None)."""

    __slots__ = ("_coro", "_enter", "_leave", "_done", "_on", "_off", "steps")

    def __init__(self, coro: CoroutineType[Any, Any, Any], enter: Callable[[], None], leave: Callable[[], None],
                 done: Callable[[list[tuple[int, int, int]], Any], None],
                 on: Callable[[], None] | None = None,
                 off: Callable[[], None] | None = None) -> None:
        """``on``/``off``: called right around the step itself, inside ``enter``/``leave``
        (a profiler's hook: with C-level callables no frame of this machinery is seen)."""
        self._coro = coro
        self._enter, self._leave, self._done = enter, leave, done
        self._on, self._off = on, off
        self.steps: list[tuple[int, int, int]] = []

    def _step(self, method: Callable[..., Any], *args: Any) -> Any:
        t0, c0 = time.time_ns(), time.thread_time_ns()
        self._enter()
        result = None
        on, off = self._on, self._off
        if on is not None:
            try:  # not through quietly: the loop's hook can be on already (a Yappi clear
                # puts it on every thread), and a Python call would be filed under the task
                on()
            except Exception as err:  # noqa: BLE001 - never fail the task
                record(err, "coroutine step: profiler on")
        try:
            return method(*args)
        except StopIteration as stop:
            result = stop.value
            raise
        finally:
            if off is not None:
                try:  # not through quietly: a Python call that Yappi would see (_timed)
                    off()
                except Exception as err:  # noqa: BLE001 - never fail the task
                    record(err, "coroutine step: profiler off")
            self._leave()
            self.steps.append((t0, time.time_ns(), time.thread_time_ns() - c0))
            if self._coro.cr_frame is None:  # returned or raised: the last step
                self._done(self.steps, result)

    def send(self, value: Any) -> Any:
        return self._step(self._coro.send, value)

    def throw(self, *exc: Any) -> Any:
        return self._step(self._coro.throw, *exc)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> CoroutineSteps:
        return self

    def __iter__(self) -> CoroutineSteps:
        return self

    def __next__(self) -> Any:
        return self.send(None)


def slices(steps: list[tuple[int, int, int]], window: tuple[int, int]
           ) -> list[tuple[int, int, int]]:
    """The steps clipped to the execution's window (the first and last also run Dask's own
    code before and after the task function), each step's CPU prorated to the part kept."""
    lo, hi = window
    out = []
    for a, b, cpu in steps:
        s, e = max(a, lo), min(b, hi)
        if e > s or (a == b and lo <= a <= hi):
            out.append((s, e, cpu if b == a else cpu * (e - s) // (b - a)))
    return out
