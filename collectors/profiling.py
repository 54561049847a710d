"""Function profiles per task execution, in one of these modes (``--profile``; ``off``: none):

- ``sample`` (default): a background thread samples the stacks of threads that are running a
  task every ``interval`` seconds (``sys._current_frames``) and attributes each sample to that
  execution: per-task inclusive/exclusive time per function, statistically, at ~0 cost to the
  task threads (no per-call hook at all).
- ``yappi``: Yappi, wall clock, every thread except the worker's event loop; a tag callback
  returns the execution running on the calling thread, so stats split per execution exactly
  (deterministic, with call counts) — and cost per Python call.
- ``yappi-all``: the same including the event loop's coroutines (coroutine-aware): shows the
  worker's own Python work (comms, transitions, plugins) as tag 0, at several times the cost
  (figures: docs/performance.md).
- ``yappi-cpu``: ``yappi`` on Yappi's CPU clock (the most expensive; see docs/performance.md).

``TaskTags`` is the shared state: ``current[thread_id] = execution_seq`` while a task runs.
Every mode produces rows of ``worker_func_stats``.
"""

from __future__ import annotations

import functools
import gc
import itertools
import sys
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable
from typing import Any

from collectors.options import PROFILE_MODES


class _ExecutionOnThread(threading.local):
    """The execution_seq running on the calling thread; the class default (0) is what
    threads that never ran a task see, without an AttributeError raised and swallowed per
    lookup (that exception, raised and swallowed per call, costs more than the lookup)."""

    seq = 0


class TaskTags:
    """thread id → execution_seq of the task it is running (absent: none)."""

    def __init__(self) -> None:
        self.current: dict[int, int] = {}
        #: thread id → when (perf_counter) its current execution, or coroutine step, began:
        #: set before ``current``, so that a sample never finds an execution without it
        self.began: dict[int, float] = {}
        self.local = _ExecutionOnThread()
        # Yappi tag callback, called on every profiled function entry: a C-level callable
        # (no Python frame per call) returning the calling thread's execution, or 0.
        self.tag = functools.partial(getattr, self.local, "seq")


def _identity(code: Any) -> tuple[str, str, str, int]:
    file = code.co_filename
    module = file.rsplit("/", 1)[-1].removesuffix(".py")
    return module, getattr(code, "co_qualname", code.co_name), file, code.co_firstlineno


class StackSampler:
    """Samples task threads; aggregates (thread, seq, code) → samples and seconds.

    Each sample stands for the time since the previous one (not the nominal interval): the
    sampler needs the GIL to run, so under contention it wakes late, and counting samples ×
    interval would under-state busy tasks. For an execution that began since the previous
    sample, it stands for the time since the execution began: the rest was before it."""

    def __init__(self, tags: TaskTags, interval: float = 0.005,
                 boundary: Collection[Any] = ()) -> None:
        self.tags = tags
        self.interval = interval
        #: code objects of the frames a task runs inside (the plugin's wrappers): the walk of
        #: a stack stops there, so the thread's own machinery below them (bootstrap, the
        #: executor's loop), the same in every sample, is neither walked nor reported, as
        #: Yappi, whose hook is on only inside them, does not see it either
        self.boundary = frozenset(boundary)
        self.max_gap = 20 * interval
        self.self_s: dict[tuple[int, int, Any], float] = {}
        self.total_s: dict[tuple[int, int, Any], float] = {}
        self.total_counts: Counter[tuple[int, int, Any]] = Counter()
        self.samples = 0
        self._last = 0.0
        #: when the last sample was taken (monotonic; collectors.watchdog)
        self.progress = time.monotonic()
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
            self.progress = time.monotonic()

    def sample_once(self) -> None:
        now = time.perf_counter()
        dt, self._last = min(now - self._last, self.max_gap), now
        running = dict(self.tags.current)
        if not running:
            return
        began = self.tags.began
        # Frame objects keep their function's locals alive for as long as we hold them (e.g.
        # memoryviews in the event loop's comm code), so: keep only the task threads' frames,
        # reduce them to code objects at once, and drop every frame reference.
        frames = sys._current_frames()
        tops = [(tid, seq, frames.get(tid)) for tid, seq in running.items()]
        del frames
        stacks = []
        boundary = self.boundary
        for tid, seq, frame in tops:
            codes = []
            while frame is not None and frame.f_code not in boundary:
                codes.append(frame.f_code)
                frame = frame.f_back
            stacks.append((tid, seq, codes))
        del tops, frame
        for tid, seq, codes in stacks:
            if not codes:
                continue
            self.samples += 1
            took = max(0.0, min(dt, now - began.get(tid, 0.0)))
            top = (tid, seq, codes[0])
            self.self_s[top] = self.self_s.get(top, 0.0) + took
            for code in set(codes):
                key = (tid, seq, code)
                self.total_s[key] = self.total_s.get(key, 0.0) + took
                self.total_counts[key] += 1

    def rows(self, seqs: Collection[int] | None = None) -> list[tuple]:
        """Rows of the executions ``seqs`` (0: outside tasks), or of all."""
        out = []
        for key, total in list(self.total_s.items()):
            tid, seq, code = key
            if seqs is not None and seq not in seqs:
                continue
            module, name, file, line = _identity(code)
            out.append(("sample", "wall", tid, seq, module, name, file, line,
                        self.total_counts[key], total, self.self_s.get(key, 0.0)))
        return out

    def forget(self, seqs: Collection[int]) -> None:
        """Drop the entries of executions whose rows are written for good, so that each
        snapshot reads the entries of the executions not yet written, not of the whole run
        (they get no more samples: they ended a snapshot round earlier)."""
        for key in [k for k in self.total_s if k[1] in seqs]:
            self.total_s.pop(key, None)
            self.self_s.pop(key, None)
            self.total_counts.pop(key, None)


#: a slot is given back to the pool unless Yappi holds more than this many of its entries and
#: more than ``RETIRE_RATIO`` times the functions its last holder called (``finish``)
RETIRE_MIN = 64
RETIRE_RATIO = 4
#: Yappi's own memory count (bytes) past which its tables are cleared (``YappiProfile``, "Clears")
CLEAR_BYTES = 16 << 20
#: while a clear waits for the executions in flight to end, an execution about to start waits
#: at most this share of the time since the previous clear; past it the clear is forced
DRAIN_SHARE = 0.01
#: the profiler's hook taken off the calling thread by a C-level callable (no frame, and no
#: C-call event whose return Yappi would never see)
_HOOK_OFF = functools.partial(sys.setprofile, None)
#: how often, and how long apart, ``set_profile`` tries again
INSTALL_TRIES = 50
INSTALL_WAIT_S = 0.001


def set_profile(install: Any) -> bool:
    """Call ``install`` (a profile-hook install on the calling thread: ``task_hooks``' on,
    ``_HOOK_OFF``) until it takes; False if it never did. CPython (3.11.7 here) refuses to
    install a profile function on any thread while another thread is in the middle of
    installing one, raising RuntimeError and changing nothing; and an install calls the
    process's audit hooks, Python code that can give the GIL away halfway (the collectors'
    own ``file_opens`` hook is one): two task threads turning their hook on or off at once
    then collide. Sleeping gives the GIL to the other install, which then completes."""
    for _ in range(INSTALL_TRIES):
        try:
            install()
            return True
        except (RuntimeError, SystemError):  # SystemError: Yappi's own install refused
            time.sleep(INSTALL_WAIT_S)
    return False


class YappiProfile:
    """Yappi with a tag per execution; rows per (ctx thread, execution, function).

    Yappi keeps an entry per function per tag for the whole process (it cannot drop some
    tags), so a tag per execution would grow its memory, and the cost of every read of its
    tables, with every execution. The tags are slots instead, taken from a pool when an
    execution starts (``acquire``) and given back when it ends (``finish``), where its slot is
    read on the thread that ran it: Yappi's counters of a slot are sums over the executions
    that held it, so an execution's figures are the difference between the slot's reading at
    its end and the reading at the end of the slot's previous holder. The pool holds the
    executions running at once, so Yappi's memory and the cost of a read follow the worker's
    threads, not the executions so far.

    ``start`` runs on the worker's event loop thread; unless ``event_loop`` it then takes
    that thread's profile hook off again (``sys.setprofile(None)`` acts on the calling thread
    only), so the comms and transitions no longer pay Yappi's per-call cost.

    Clears. Yappi never drops an entry, and a function made anew for every task (a function
    defined in a script's ``__main__`` is unpickled as a new function and code object per
    task) gives it new entries per task, whatever the tags. So once Yappi's memory passes
    ``clear_bytes`` its tables are cleared (``_clear``: pause, ``clear_stats``, resume), at an
    instant when no execution holds a slot: an execution's end that leaves none held.
    Yappi's clear drops every context, entry and call stack: a call running at that instant
    is never counted (its return finds no entry), so a clear with an execution in flight
    would cut its rows. While a clear waits, executions about to start on the executors'
    threads wait for it (``acquire``), at most ``DRAIN_SHARE`` of the time since the previous
    clear in all; past that the clear is forced, and the executions in flight then get no
    rows (counted: ``executions_cut``) rather than rows short of their running calls. Rows
    of work outside tasks (tag 0) are summed across clears; they miss the calls running at
    a clear on the threads that are always profiled (libraries' helpers; the event loop in
    ``yappi-all``). A resume puts Yappi's hook on every thread: the clearing thread and the
    event loop (unless ``event_loop``) take it off again, an idle executor thread keeps it
    until its next task ends (its executor loop meanwhile recorded as tag 0). A clear frees
    Yappi's tables, but not the code objects a leaking Yappi keeps alive
    (``keeps_code_alive``; ``memory`` counts them)."""

    def __init__(self, tags: TaskTags, clock: str, event_loop: bool = False) -> None:
        self.tags = tags
        self.clock = clock
        self.event_loop = event_loop
        #: (context, slot, function index) of calls that were running at a snapshot before
        #: they ever returned (see ``_read``)
        self._counted_early: set[tuple[int, int, int]] = set()
        self.stopped = False
        #: the pool of tags (0 stays "outside any task"): free slots, and each running
        #: execution's
        self._free: list[int] = []
        self._new_slot = itertools.count(1)
        self._slot_of: dict[int, int] = {}
        #: per slot, (context, function index) → (ncall, ttot, tsub) as Yappi reported them
        #: at the end of the slot's last holder
        self._base: dict[int, dict[tuple[int, int], tuple[int, float, float]]] = {}
        #: the pool, the reads and the clears, on several threads (each execution's start and
        #: end, the loop's snapshots): one at a time; waited on while a clear is due
        self._lock = threading.Condition(threading.Lock())
        self.clear_bytes = CLEAR_BYTES
        #: clears done, those forced, and the executions they cut (no rows)
        self.clears = self.clears_forced = self.executions_cut = 0
        self._cut: set[int] = set()
        #: a clear is due and waits until no execution holds a slot (``_drain_until``: the
        #: monotonic time past which it is forced)
        self._draining = False
        self._drain_until = 0.0
        self._cleared_at = time.monotonic()
        #: rows of work outside tasks (tag 0) read just before each clear, summed:
        #: (thread, module, name, file, line) → [ncall, ttot, tsub]
        self._zero_before: dict[tuple, list] = {}
        #: the thread ``start`` ran on (the event loop) and its asyncio loop, if any
        self._loop_thread = 0
        self._loop: Any = None
        #: this Yappi keeps the code objects it saw alive (``_keeps_code_alive``); then the
        #: memory its clears freed counts as still held (``memory``)
        self.keeps_code_alive = False
        self._cleared_bytes = 0
        #: new threads Yappi's hook could not be put on (``_hook_new_threads``)
        self.threads_unhooked = 0
        self._bootstrap: tuple[Any, Any] | None = None

    def acquire(self, seq: int) -> int:
        """The tag of execution ``seq`` (called as it starts, before the hook goes on): a
        free slot, or a new one. While a clear is due, waits for it (not on the event loop
        thread, which the executions' ends do not need but the worker does): see "Clears"."""
        with self._lock:
            if self._draining and threading.get_ident() != self._loop_thread:
                while self._draining:
                    left = self._drain_until - time.monotonic()
                    if left <= 0:
                        self._clear(forced=True)
                        break
                    self._lock.wait(left)
            try:
                slot = self._free.pop()
            except IndexError:
                slot = next(self._new_slot)
            self._slot_of[seq] = slot
            return slot

    def finish(self, seq: int) -> list[tuple]:
        """The rows of execution ``seq``, which has just ended (on the thread that ran it,
        with Yappi's hook off there); its slot goes back to the pool, its reading the base of
        the next holder's figures. Then, if Yappi's tables are due a clear, it is done now
        when no execution holds a slot any more, or waited for."""
        with self._lock:
            slot = self._slot_of.pop(seq, None)
            if slot is None:
                return []
            rows = self._read({slot: seq}, final=True)
            # a slot whose entries are mostly of functions its holders no longer call (code
            # made anew per task: a function defined in a script's __main__ is unpickled as a
            # new function for every task) would make every later read walk them: it is
            # retired, and its entries stay in Yappi until the next clear
            if len(self._base.get(slot, ())) > max(RETIRE_MIN, RETIRE_RATIO * len(rows)):
                del self._base[slot]
            else:
                self._free.append(slot)
            if seq in self._cut:  # in flight at a forced clear: its calls then were lost
                self._cut.discard(seq)
                self.executions_cut += 1
                rows = []
            if self.stopped or (not self._draining
                                and _yappi_memory() <= self.clear_bytes):
                return rows
            if not self._slot_of:
                self._clear(forced=False)
            elif not self._draining:
                self._draining = True
                now = time.monotonic()
                self._drain_until = now + DRAIN_SHARE * (now - self._cleared_at)
            return rows

    def _clear(self, *, forced: bool) -> None:
        """Clear Yappi's tables (under the lock); executions still holding a slot are cut.
        The rows outside tasks so far are kept first (summed across clears). Yappi's
        ``clear_stats`` needs it paused (its tables are freed); its resume hooks every
        thread (see "Clears")."""
        import _yappi

        if self.stopped:  # Yappi's tables are kept for the last reads
            self._draining = False
            self._lock.notify_all()
            return
        for row in self._read({0: 0}, final=False):
            key = (row[2], *row[4:8])
            summed = self._zero_before.setdefault(key, [0, 0.0, 0.0])
            summed[0] += row[8]
            summed[1] += row[9]
            summed[2] += row[10]
        if self.keeps_code_alive:
            self._cleared_bytes += _yappi.get_mem_usage()
        collecting = gc.isenabled()
        gc.disable()
        try:
            # Yappi's pause and resume (un)hook every thread and ignore a thread whose install
            # another thread's install refused (``set_profile``): the exception it leaves set
            # surfaces here, after the pause or resume was done all the same
            try:
                _yappi._pause()
            except (RuntimeError, SystemError):
                pass
            try:
                _yappi.clear_stats()
            finally:
                try:
                    _yappi._resume()
                except (RuntimeError, SystemError):
                    pass
                if not (self.event_loop and threading.get_ident() == self._loop_thread):
                    set_profile(_HOOK_OFF)
        finally:
            if collecting:
                gc.enable()
        if not self.event_loop and self._loop is not None \
                and threading.get_ident() != self._loop_thread:
            try:
                self._loop.call_soon_threadsafe(_HOOK_OFF)
            except RuntimeError:  # the loop has closed: nothing runs on it any more
                pass
        held = self._slot_of
        self._cut.update(held)
        self.clears += 1
        self.clears_forced += bool(held) or forced
        # function indices start again: every base and note is of the old tables
        self._base.clear()
        self._counted_early = set()
        self._free = []
        self._new_slot = itertools.count(max(held.values(), default=0) + 1)
        self._draining = False
        self._cleared_at = time.monotonic()
        self._lock.notify_all()

    def cut(self, seq: int) -> None:
        """Execution ``seq`` (holding a tag) ran, or part of it, without Yappi's hook on (its
        thread's install failed: ``set_profile``): its rows would be short of its calls, so
        it gets none and is counted as cut (``finish``), as one in flight at a forced clear."""
        with self._lock:
            if seq in self._slot_of:
                self._cut.add(seq)

    def holds(self, seq: int) -> bool:
        """Whether execution ``seq`` holds a tag (it is running)."""
        return seq in self._slot_of

    @property
    def slots(self) -> int:
        """Tags made so far: the most executions running at once."""
        return len(self._free) + len(self._slot_of)

    def start(self, task_threads: tuple[str, ...] = ()) -> None:
        """``task_threads``: name prefixes of the threads that run tasks (the executors'):
        those start without Yappi's hook, which ``task_hooks`` puts on around each task
        function only. Yappi files a call under its caller's entry, in a list it scans on
        every call: a long-lived caller outside any execution (the executor's loop, the
        plugin's wrapper, tag 0) would gain one entry per execution (each has its own tag),
        and every task would pay a scan of all earlier ones on its thread. With the hook on
        only around the task function, that function has no caller for Yappi."""
        import yappi

        if yappi.is_running():
            raise RuntimeError("yappi is already running in this process")
        self.keeps_code_alive = _keeps_code_alive()
        self._loop_thread = threading.get_ident()
        try:
            import asyncio

            self._loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop running on this thread (tests)
            self._loop = None
        yappi.set_clock_type(self.clock)
        yappi.set_tag_callback(self.tags.tag)
        # Yappi asks each new context (every thread again after a clear) for a name from inside
        # its hook; its default asks in Python, whose bytecode can give the GIL to a thread that
        # clears the tables under that hook (its current context freed): a C-level callable
        # (the name is not read here; contexts are told apart by thread id)
        _yappi_set_name_callback(functools.partial(str, "thread"))
        yappi.start(builtins=False, profile_threads=True)
        if not self.event_loop:
            sys.setprofile(None)
        self._hook_new_threads(task_threads)

    def _hook_new_threads(self, task_threads: tuple[str, ...]) -> None:
        """Yappi's ``profile_threads`` hooks each new thread through ``threading.setprofile``:
        threading's bootstrap installs the hook before the thread's target runs, unguarded, so
        an install CPython refuses there (another thread part-way through its own: see
        ``set_profile``) kills the new thread before it ran anything (an executor's thread:
        its pool never replaces it, and a worker of one thread hangs). The hook goes on in a
        wrapper of the bootstrap instead, retried; a thread it never takes on runs unprofiled
        and is counted (``threads_unhooked``). Task threads (names starting with
        ``task_threads``) start without it (``task_hooks``)."""
        import _yappi

        threading.setprofile(None)
        original = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

        def bootstrap(thread: threading.Thread) -> None:
            try:
                if not self.stopped and not (task_threads
                                             and thread.name.startswith(task_threads)):
                    # Yappi's C hook, installed by an event it ignores (as ``_hook_on``)
                    install = functools.partial(_yappi._profile_event, sys._getframe(),
                                                "c_call", None)
                    if not set_profile(install):
                        self.threads_unhooked += 1
            except Exception:  # noqa: BLE001 - never keep a thread from running
                self.threads_unhooked += 1
            original(thread)

        threading.Thread._bootstrap_inner = bootstrap  # type: ignore[attr-defined]
        self._bootstrap = (original, bootstrap)

    def _unhook_new_threads(self) -> None:
        if self._bootstrap is not None:
            original, ours = self._bootstrap
            if threading.Thread._bootstrap_inner is ours:  # type: ignore[attr-defined]
                threading.Thread._bootstrap_inner = original  # type: ignore[attr-defined]
            self._bootstrap = None

    def task_hooks(self) -> tuple[Any, Any]:
        """Callables putting the calling thread's hook on and off around a task function (see
        ``start``). Off is C-level: the hook is on when it is called, and Yappi sees no frame
        of it. On runs while the hook is still off (Yappi never sees its frame) and installs
        Yappi's C hook itself (``_yappi._profile_event``: an event it ignores, a C call of
        nothing), trying again while another thread's install is refused (``set_profile``):
        an execution whose hook never went on is cut (``cut``), never left with no rows and
        uncounted. (With Yappi's Python-level entry point installed instead, the install made
        at the task function's first call could be refused too, and the error would be
        raised into the task.)"""
        return self._hook_on, _HOOK_OFF

    def _hook_on(self) -> None:
        """``task_hooks``' on. Where the hook is already on (a resume after a clear hooks every
        thread), Yappi sees this and ``set_profile``: ``_read`` leaves their entries out."""
        import _yappi

        install = functools.partial(_yappi._profile_event, sys._getframe(), "c_call", None)
        if set_profile(install):
            return
        slot = self.tags.local.seq
        seq = next((s for s, held in self._slot_of.items() if held == slot), None)
        if seq is not None:
            self.cut(seq)

    def stop(self) -> None:
        """Stop Yappi for good (its entries stay readable); again: nothing."""
        import yappi

        with self._lock:  # not between a clear's pause and resume (which would restart it)
            self.stopped = True
            self._draining = False
            self._lock.notify_all()
            yappi.stop()
            self._unhook_new_threads()

    def memory(self) -> int:
        """Bytes Yappi holds; where it keeps the code objects it saw alive, plus what it held
        at each clear: those entries' code objects stay (their size is not known, the entries'
        is), so the budget's stop comes no later than without clears."""
        import yappi

        return yappi.get_mem_usage() + self._cleared_bytes

    def forget(self, seqs: Collection[int]) -> None:
        """Nothing to drop: an execution's slot is read and given back as it ends
        (``finish``), with the notes of its calls counted early."""

    def loop_step(self) -> tuple[Any, Any]:
        """What to call around a coroutine task's step on the event loop: in ``yappi`` mode the
        loop's hook is off, so it is put back for the step and taken off after
        (``task_hooks``: Yappi sees no frame of this machinery)."""
        if self.event_loop or self.stopped:
            return None, None
        return self.task_hooks()

    def rows(self, seqs: Collection[int] | None = None) -> list[tuple]:
        """Rows so far of the running executions among ``seqs`` (all running ones without)
        and of the work outside tasks (0, when asked for): what each did since its slot's
        previous holder ended. Ended executions' rows came from ``finish``."""
        with self._lock:
            wanted = self._slot_of.keys() | {0} if seqs is None else seqs
            seq_of = {0: 0} if 0 in wanted else {}
            seq_of.update((slot, s) for s in wanted
                          if (slot := self._slot_of.get(s)) is not None and s not in self._cut)
            rows = self._read(seq_of, final=False)
            if 0 not in seq_of or not self._zero_before:
                return rows
            # outside tasks: what was read before the clears, plus the tables since
            summed = {k: list(v) for k, v in self._zero_before.items()}
            others = []
            for row in rows:
                if row[3] != 0:
                    others.append(row)
                    continue
                got = summed.setdefault((row[2], *row[4:8]), [0, 0.0, 0.0])
                got[0] += row[8]
                got[1] += row[9]
                got[2] += row[10]
            return others + [("yappi", self.clock, tid, 0, module, name, path, line, *figures)
                             for (tid, module, name, path, line), figures in summed.items()]

    def _read(self, seq_of: dict[int, int], *, final: bool) -> list[tuple]:
        """The rows of the slots ``seq_of`` (slot → execution) from Yappi's C enumeration
        (``yappi.get_func_stats()`` merges the entries of one function across threads and
        tags), one tag at a time; with ``final``, each slot's reading becomes its base. Not
        paused as ``yappi.get_*_stats`` do: pausing and resuming loses the time of every call
        in flight (a running task's function came back with ttot 0). Instead the enumeration
        runs no Python code that Yappi could record while its tables are walked: the callback
        is C (``list.append``), builtins are not profiled, and the garbage collector (which
        could run finalizers) is off meanwhile; the GIL keeps other threads out."""
        contexts, entries = _enumerated(seq_of)
        idents = {c[1]: c[2] for c in contexts}
        out = []
        early, base = self._counted_early, self._base
        reading: dict[int, dict[tuple[int, int], tuple[int, float, float]]] = {}
        for entry in entries:
            name, path, line, ncall, _nactual, _builtin, ttot, tsub = entry[:8]
            ctx_id, slot, index = entry[10], entry[12], entry[8]
            before = None
            if slot:
                if final:
                    reading.setdefault(slot, {})[ctx_id, index] = (ncall, ttot, tsub)
                before = base.get(slot, {}).get((ctx_id, index))
                if before is not None:
                    ncall, ttot, tsub = ncall - before[0], ttot - before[1], tsub - before[2]
                    if not ncall and ttot <= 0:
                        continue  # not called by this holder of the slot
            # Yappi counts a call when it returns, and its enumeration reports an entry whose
            # first call is still running as one call by setting the count to 1 (and clamps
            # its negative self time to 0) in place: that call's return then counts it a
            # second time (the "ncall = 2" of one call of a task function running across a
            # snapshot). Such an entry is recognisable (1 call, no time yet); its count is
            # corrected once the call has returned (time > 0). Only an entry the slot's
            # earlier holders never made can be one (Yappi sets the count of an entry with
            # none); the slot's reading keeps Yappi's count, so the next holder's difference
            # is right as it is.
            ident = (ctx_id, slot, index)
            if ident in early:
                if ttot > 0:
                    ncall -= 1
            elif before is None and ncall == 1 and ttot == 0 and tsub == 0:
                early.add(ident)
            module = (path or "").rsplit("/", 1)[-1].removesuffix(".py")
            if module in ("yappi", "_yappi") or (path, line) in _MACHINERY:
                continue
            out.append(("yappi", self.clock, idents.get(ctx_id), seq_of[slot], module, name,
                        path, line, ncall, ttot, tsub))
        if final:
            base.update(reading)  # (every entry of the slot: Yappi's sums of all holders)
            if early:
                self._counted_early = {i for i in early if i[1] not in seq_of}
        return out


def _enumerated(slots: Iterable[int]) -> tuple[list[tuple], list[tuple]]:
    """Yappi's contexts and the function entries of ``slots`` (tags), enumerated with the
    garbage collector off (``YappiProfile._read`` says why)."""
    import _yappi

    contexts: list[tuple] = []
    entries: list[tuple] = []
    collecting = gc.isenabled()
    gc.disable()
    try:
        _yappi.enum_context_stats(contexts.append)
        for slot in slots:
            _yappi.enum_func_stats(entries.append, {"tag": slot})
    finally:
        if collecting:
            gc.enable()
    return contexts, entries


#: (file, first line) of the profiler's own functions that run under Yappi's hook when a task
#: thread's hook is already on at a task's start (``YappiProfile._hook_on``)
_MACHINERY = {(c.co_filename, c.co_firstlineno)
              for c in (set_profile.__code__, YappiProfile._hook_on.__code__)}


def _probe() -> None:
    """Called under Yappi by ``_keeps_code_alive``."""


def _keeps_code_alive() -> bool:
    """Whether this Yappi keeps the code objects it sees called alive: Yappi 1.7.6 on Python
    3.10+ takes a new reference to the code object at each call and return event
    (``PyFrame_GetCode``) and never releases it, so its clears cannot free them. A few calls
    of a probe under a short session started and cleared before the real one tell."""
    import yappi

    code = _probe.__code__
    yappi.start(builtins=False, profile_threads=False)
    try:
        before = sys.getrefcount(code)
        for _ in range(4):
            _probe()
        after = sys.getrefcount(code)
    finally:
        yappi.stop()
        yappi.clear_stats()
    return after - before > 1


def _yappi_set_name_callback(callback: Any) -> None:
    import _yappi

    _yappi.set_context_name_callback(callback)


def _yappi_memory() -> int:
    import _yappi

    return _yappi.get_mem_usage()


def make_profiler(mode: str, tags: TaskTags, boundary: Collection[Any] = ()
                  ) -> StackSampler | YappiProfile | None:
    """``boundary``: code objects of the frames tasks run inside (``StackSampler``)."""
    if mode == "off":
        return None
    if mode == "sample":
        return StackSampler(tags, boundary=boundary)
    if mode in ("yappi", "yappi-all", "yappi-cpu"):
        return YappiProfile(tags, "cpu" if mode == "yappi-cpu" else "wall",
                            event_loop=mode == "yappi-all")
    raise ValueError(f"unknown profile mode {mode!r}; expected one of {PROFILE_MODES}")
