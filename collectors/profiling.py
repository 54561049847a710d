"""Function profiles per task execution, in one of three modes (``--profile``):

- ``sample`` (default): a background thread samples the stacks of threads that are running a
  task every ``interval`` seconds (``sys._current_frames``) and attributes each sample to that
  execution: per-task inclusive/exclusive time per function, statistically, at ~0 cost to the
  task threads (no per-call hook at all).
- ``yappi``: Yappi, wall clock, all threads, coroutine-aware; a tag callback returns the
  execution running on the calling thread, so stats split per execution exactly (deterministic,
  with call counts) — and cost per Python call.
- ``yappi-cpu``: the same with Yappi's CPU clock (the most expensive; see the README).

``TaskTags`` is the shared state: ``current[thread_id] = execution_seq`` while a task runs.
Every mode produces rows of ``worker_func_stats``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import Any

PROFILE_MODES = ("off", "sample", "yappi", "yappi-cpu")


class TaskTags:
    """thread id → execution_seq of the task it is running (absent: none)."""

    def __init__(self) -> None:
        self.current: dict[int, int] = {}
        self.local = threading.local()

    def tag(self) -> int:
        """Yappi tag callback: the execution running on the calling thread, or 0."""
        return getattr(self.local, "seq", 0)


def _identity(code: Any) -> tuple[str, str, str, int]:
    file = code.co_filename
    module = file.rsplit("/", 1)[-1].removesuffix(".py")
    return module, getattr(code, "co_qualname", code.co_name), file, code.co_firstlineno


class StackSampler:
    """Samples task threads; aggregates (thread, seq, code) → samples and seconds.

    Each sample stands for the time since the previous one (not the nominal interval): the
    sampler needs the GIL to run, so under contention it wakes late, and counting samples ×
    interval would under-state busy tasks."""

    def __init__(self, tags: TaskTags, interval: float = 0.005) -> None:
        self.tags = tags
        self.interval = interval
        self.max_gap = 20 * interval
        self.self_s: dict[tuple[int, int, Any], float] = {}
        self.total_s: dict[tuple[int, int, Any], float] = {}
        self.total_counts: Counter[tuple[int, int, Any]] = Counter()
        self.samples = 0
        self._last = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dask-correlate-sampler",
                                        daemon=True)

    def start(self) -> None:
        self._last = time.perf_counter()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample_once()

    def sample_once(self) -> None:
        now = time.perf_counter()
        dt, self._last = min(now - self._last, self.max_gap), now
        running = dict(self.tags.current)
        if not running:
            return
        # Frame objects keep their function's locals alive for as long as we hold them (e.g.
        # memoryviews in the event loop's comm code), so: keep only the task threads' frames,
        # reduce them to code objects at once, and drop every frame reference.
        frames = sys._current_frames()
        tops = [(tid, seq, frames.get(tid)) for tid, seq in running.items()]
        del frames
        stacks = []
        for tid, seq, frame in tops:
            codes = []
            while frame is not None:
                codes.append(frame.f_code)
                frame = frame.f_back
            stacks.append((tid, seq, codes))
        del tops, frame
        for tid, seq, codes in stacks:
            if not codes:
                continue
            self.samples += 1
            top = (tid, seq, codes[0])
            self.self_s[top] = self.self_s.get(top, 0.0) + dt
            for code in set(codes):
                key = (tid, seq, code)
                self.total_s[key] = self.total_s.get(key, 0.0) + dt
                self.total_counts[key] += 1

    def rows(self) -> list[tuple]:
        out = []
        for key, total in list(self.total_s.items()):
            tid, seq, code = key
            module, name, file, line = _identity(code)
            out.append(("sample", "wall", tid, seq, module, name, file, line,
                        self.total_counts[key], total, self.self_s.get(key, 0.0)))
        return out


class YappiProfile:
    """Yappi over all threads with the execution tag; rows per (ctx thread, tag, function)."""

    def __init__(self, tags: TaskTags, clock: str) -> None:
        self.tags = tags
        self.clock = clock

    def start(self) -> None:
        import yappi

        if yappi.is_running():
            raise RuntimeError("yappi is already running in this process")
        yappi.set_clock_type(self.clock)
        yappi.set_tag_callback(self.tags.tag)
        yappi.start(builtins=False, profile_threads=True)

    def stop(self) -> None:
        import yappi

        yappi.stop()

    def rows(self) -> list[tuple]:
        """One row per (function, thread, tag). ``yappi.get_func_stats()`` merges the entries
        of one function across threads and tags, so the C extension's own enumeration is
        read instead."""
        import _yappi
        import yappi

        idents = {t.id: t.tid for t in yappi.get_thread_stats()}
        out = []

        def take(entry: tuple) -> None:
            name, path, line, ncall, _nactual, _builtin, ttot, tsub = entry[:8]
            ctx_id, tag = entry[10], entry[12]
            module = (path or "").rsplit("/", 1)[-1].removesuffix(".py")
            if module in ("yappi", "_yappi"):
                return
            out.append(("yappi", self.clock, idents.get(ctx_id), tag, module, name, path, line,
                        ncall, ttot, tsub))

        _yappi.enum_func_stats(take, {})
        return out


def make_profiler(mode: str, tags: TaskTags) -> StackSampler | YappiProfile | None:
    if mode == "off":
        return None
    if mode == "sample":
        return StackSampler(tags)
    if mode in ("yappi", "yappi-cpu"):
        return YappiProfile(tags, "cpu" if mode == "yappi-cpu" else "wall")
    raise ValueError(f"unknown profile mode {mode!r}; expected one of {PROFILE_MODES}")
