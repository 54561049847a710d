"""A stall recorder: when a Dask process's event loop or one of the collectors' own threads makes
no progress for ``after_s`` seconds, or the whole process stopped running (SIGSTOP, a paused
VM, a GIL held for that long), the stall is written into ``stalls.txt`` in the process folder
with the stacks of every thread, so that ``correlate`` can say where a job stopped instead of
saying nothing.

The file holds blocks, each a header line ``== {json}`` (``kind``: ``event-loop``, ``flush``,
``sampler`` of the server at ``owner``, or ``process``; ``start``/``end`` epoch seconds, ``end``
null while it lasts; ``cpu_s`` of the process during it; ``threads``: id → name) then, for a
thread that stalled, ``faulthandler``'s dump of every thread's stack. It is opened for each
block and closed after it, like the sink's streams: no descriptor into the run folder is held
(one would stop the run folder's file system from being remounted or unmounted).

A process in which no Python thread can run any more (a deadlock on the GIL) cannot write
anything itself, and nothing here dumps its stacks from outside the interpreter: faulthandler's
own timer (``dump_traceback_later``), which did, reads the other threads' frames without the
GIL, and when the process had only been stopped (SIGSTOP, a batch system suspending the job, a
paused VM) it fires as soon as the process runs again, among threads that run too, and can
crash it (a worker of a real cluster died so, mid-dump, after 3 s stopped: the stall test).
``correlate`` names such a process by its missing closing record. The dump here is taken by
this module's thread holding the GIL, when the other threads' frames cannot change.

It costs nothing per task: a loop callback every ``tick`` seconds and one thread that wakes as
often. One watchdog per process; the workers and scheduler of a process share it.
"""

from __future__ import annotations

import faulthandler
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from collectors.fork_safe import ForkSafeLock

FILE = "stalls.txt"
#: no progress for this many seconds is a stall (Dask warns of a blocked event loop at 3 s)
AFTER_S = 10.0
HEADER = "== "

#: the source of a watched thread's progress: the monotonic time of its last progress, or None
#: while it has nothing to do
Progress = Callable[[], float | None]


class Watchdog:
    def __init__(self, folder: Path, after_s: float = AFTER_S) -> None:
        self.path = folder / FILE
        self.after_s = after_s
        self.tick = min(1.0, after_s / 4)
        #: (kind, owner) -> (progress, expected period in seconds)
        self.watched: dict[tuple[str, str], tuple[Progress, float]] = {}
        self.loop_beats: dict[str, float] = {}
        self.stalled: dict[tuple[str, str], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dask-correlate-watchdog",
                                        daemon=True)

    def watch(self, kind: str, owner: str, progress: Progress, period: float = 0.0) -> None:
        """Watch ``owner``'s ``kind`` of thread (``event-loop``, ``flush``, ``sampler``)."""
        self.watched[kind, owner] = (progress, period)

    def unwatch(self, owner: str) -> None:
        for key in [k for k in self.watched if k[1] == owner]:
            del self.watched[key]
        self.loop_beats.pop(owner, None)

    def beat(self, owner: str) -> None:
        """Called on ``owner``'s event loop every tick (``loop_callback``)."""
        self.loop_beats[owner] = time.monotonic()

    def loop_callback(self, owner: str) -> Any:
        """A started callback on the calling thread's event loop that tells the watchdog the
        loop turns (the server's ``periodic_callbacks`` should hold it, so that it stops with
        the server)."""
        from tornado.ioloop import PeriodicCallback

        self.beat(owner)
        self.watch("event-loop", owner, lambda: self.loop_beats.get(owner), self.tick)
        callback = PeriodicCallback(lambda: self.beat(owner), self.tick * 1000)
        callback.start()
        return callback

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stops at once (called on a server's event loop as it closes: no join); the thread
        ends at its next tick."""
        self._stop.set()

    def _run(self) -> None:
        last, cpu = time.monotonic(), time.process_time()
        while not self._stop.wait(self.tick):
            now, now_cpu = time.monotonic(), time.process_time()
            try:
                if now - last > self.after_s + self.tick:
                    # this thread did not run either: nothing in the process could, or the GIL
                    # was held throughout; the other threads have hardly moved since
                    self._write("process", None, time.time() - (now - last),
                                cpu_s=now_cpu - cpu, end=time.time(), stacks=True)
                else:  # (after a stop, the loops get a tick to turn again)
                    self._check(now)
            except Exception:  # noqa: BLE001, S110 - a watchdog that fails must not fail the job
                pass
            last, cpu = now, now_cpu

    def _check(self, now: float) -> None:
        for (kind, owner), (progress, period) in list(self.watched.items()):
            at = progress()
            late = at is not None and now - at > period + self.after_s
            if at is not None and late and (kind, owner) not in self.stalled:
                self.stalled[kind, owner] = time.time() - (now - at)
                self._write(kind, owner, self.stalled[kind, owner], cpu_s=None, end=None,
                            stacks=True)
            elif not late and (kind, owner) in self.stalled:
                self._write(kind, owner, self.stalled.pop((kind, owner)), cpu_s=None,
                            end=time.time(), stacks=False)

    def _write(self, kind: str, owner: str | None, start: float, cpu_s: float | None,
               end: float | None, stacks: bool) -> None:
        names = {t.ident: t.name for t in threading.enumerate()}
        record = {"kind": kind, "owner": owner, "start": start, "end": end,
                  "after_s": self.after_s,
                  "cpu_s": cpu_s, "threads": {f"0x{i:016x}": n for i, n in names.items() if i}}
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, (HEADER + json.dumps(record) + "\n").encode())
            if stacks:
                faulthandler.dump_traceback(file=fd, all_threads=True)
        finally:
            os.close(fd)


_PROCESS: list[Watchdog] = []
_lock = ForkSafeLock()


def watchdog(folder: Path, after_s: float = AFTER_S) -> Watchdog:
    """This process's watchdog, started in ``folder`` by its first user."""
    with _lock:
        if not _PROCESS:
            dog = Watchdog(folder, after_s)
            dog.start()
            _PROCESS.append(dog)
        return _PROCESS[0]


def release(owner: str) -> None:
    """``owner``'s threads are no longer watched; the last one out stops the watchdog."""
    with _lock:
        if not _PROCESS:
            return
        _PROCESS[0].unwatch(owner)
        if not _PROCESS[0].watched:
            _PROCESS.pop().stop()


def _forget_in_child() -> None:
    # a forked child has none of the parent's threads: no watchdog runs there
    _PROCESS.clear()


os.register_at_fork(after_in_child=_forget_in_child)
