"""Worker plugin: one row per task execution timed on the executing thread, worker-side
transitions, transfers, clock and CPU samples, Darshan clock markers, function profiles.

How executions are timed: the plugin wraps this worker instance's ``execute`` so the task key
and its execution number sit in context variables while Dask submits the task, and wraps each
thread-pool executor's ``submit`` (called in that context) so the task function runs inside
``_timed`` on the executing thread: ``threading.get_ident()``, ``time_ns()`` and
``thread_time_ns()`` are read there, around exactly the call Dask makes. Dask runs the task in
a copy of that context, and the libraries it calls hand it on to their helper threads
(``collectors.file_opens``). A coroutine task runs on the event loop: its execute coroutine is
driven step by step (``collectors.coroutine_steps``), each step an active slice. Tasks Dask
runs elsewhere (process pools) are counted in the closing record as ``executions_not_timed``: the
executions whose function Dask ran (its result carries start and stop) without ``_timed``.
"""

from __future__ import annotations

import contextvars
import itertools
import os
import threading
import time
import weakref
from collections import deque
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from collectors import (
    code_cache,
    coroutine_steps,
    exit_flush,
    file_opens,
    frames_guard,
    host_load,
    watchdog,
)
from collectors.coroutine_steps import CoroutineSteps
from collectors.guard import never_raise, record, set_log_dir
from collectors.options import DEFAULTS, Options, darshan_in_preload
from collectors.profiling import (
    CLEAR_BYTES,
    StackSampler,
    TaskTags,
    YappiProfile,
    make_profiler,
)
from collectors.sink import (
    ProcessSink,
    columns_of,
    drain,
    hostname,
    proc_json,
    process_dir,
    stop_with,
    take,
)
from correlate.frames.keys import key_str, key_texts

_CURRENT_KEY: contextvars.ContextVar[Any] = contextvars.ContextVar("dask_correlate_key")
MARKER_BYTES = b"dask-correlate-clock-marker\n"
#: at most this share of the event loop's time goes to profile snapshots (see _snapshot_profile)
SNAPSHOT_SHARE = 0.02
#: Yappi may hold this share of the worker's memory limit (without a limit: the default bytes)
#: before it is stopped (see _bound_profile_memory)
PROFILE_MEMORY_SHARE = 0.10
PROFILE_MEMORY_DEFAULT = 1 << 30


def _delay_added(entry: dict) -> int | None:
    """The scheduler_delay Dask added to an outgoing transfer's start and stop, exactly: its
    ``middle`` is on the worker's own clock (Dask shifts only start and stop of outgoing
    entries), so it is start - (middle - (stop - start) / 2). The delay changes at every
    heartbeat; a sample taken at another time is off by that change."""
    try:
        start, stop, middle = entry["start"], entry["stop"], entry["middle"]
        return round((start - (middle - (stop - start) / 2)) * 1e9)
    except (KeyError, TypeError):
        return None


class _NativeThreadId(threading.local):
    """The calling thread's native id, read once per thread (``get_native_id`` is a system
    call). Thread-local rather than a dict by ``get_ident()``: those are reused by new
    threads, such as the ones Dask starts when a task secedes."""

    value = 0


_NATIVE = _NativeThreadId()


def sink_width(tables: dict[str, Any], name: str) -> int:
    return len(tables[name].columns)


def _native_id() -> int:
    _NATIVE.value = threading.get_native_id()
    return _NATIVE.value


#: the collectors recording each worker of this process (several workers may share one)
_LIVE: weakref.WeakKeyDictionary[Any, CorrelateWorkerPlugin] = weakref.WeakKeyDictionary()


class CorrelateWorkerPlugin(WorkerPlugin):
    name = "dask-correlate-worker"
    idempotent = True
    #: taken out of the worker's plugins while it runs (see teardown)
    removed = False
    #: the files tasks open are recorded (where Darshan traces the process; set at setup)
    record_opens = False
    #: (resume, pause) of the profiler's hook around each task function (yappi modes)
    task_hooks: tuple[Any, Any] = (None, None)
    #: an execution's Yappi tag from its seq (None: the seq itself); set at start
    tag_of: Any = None
    #: yappi modes: gives the functions a task brings this process's code objects (of its
    #: run spec; of a run spec among an executor call's arguments)
    canonicalise: Any = None
    canonicalise_call: Any = None

    def __init__(self, run_dir: str, options: Options = DEFAULTS) -> None:
        self.run_dir = run_dir
        self.options = options
        self.profile = options.profile
        self.flush_interval = options.flush_interval
        self.markers = options.markers
        self.sink: ProcessSink | None = None

    # ---- setup / teardown ------------------------------------------------------------------

    def setup(self, worker: Any) -> None:
        if self._take_back(worker):
            return
        self._setup(worker)
        if self.sink is not None:
            self._register_live(worker)

    @never_raise
    def _take_back(self, worker: Any) -> bool:
        """The same collectors again: the scheduler's copy (registered by its preload, so that
        Dask's view of the worker plugins is the same on both sides) reaching a worker whose
        own preload added them first. The running one stays, under the name Dask gave this
        copy, and keeps its folder and rows. Its options are the worker's own (read from the
        worker's environment: its Darshan preload, markers), which may differ from the
        scheduler's; the run folder decides whether it is the same recording."""
        live = _LIVE.get(worker)
        if live is None or live is self or live.sink is None or live.run_dir != self.run_dir:
            return False
        live.removed = False
        worker.plugins[self.name] = live
        return True

    @never_raise
    def _register_live(self, worker: Any) -> None:
        _LIVE[worker] = self

    @never_raise
    def _setup(self, worker: Any) -> None:
        from correlate.schema import run as schema

        self.worker = worker
        self.pid = os.getpid()
        frames_guard.install()
        pdir = process_dir(Path(self.run_dir), "worker", hostname(), self.pid)
        set_log_dir(pdir)
        tables = {t.name: t for t in (
            schema.EXECUTIONS_RAW, schema.WORKER_TRANSITIONS, schema.TRANSFERS_RAW,
            schema.TRANSFER_KEYS_RAW, schema.CLOCK_SAMPLES_3, schema.FUNC_STATS_RAW,
            schema.FILE_OPENS_RAW, schema.COROUTINE_SLICES_RAW, schema.HOST_LOAD_RAW)}
        self.sink = ProcessSink(pdir, tables, interval=self.flush_interval)
        host_load.attach(self.sink)
        # raw rows, flat and bounded (collectors.sink): keys are rendered by the flush thread,
        # not the task thread or the loop
        self.transitions, self._add_transition = self.sink.raw(
            "worker_transitions", sink_width(tables, "worker_transitions"))
        # the bound ``_add_transition`` keeps, tested inline in the hook (a call fewer per row)
        self._transitions_cap = self.sink.max_rows * sink_width(tables, "worker_transitions")
        self.executions, self._add_execution = self.sink.raw(
            "task_executions", sink_width(tables, "task_executions"))
        self.seq = itertools.count(1)
        self.tags = TaskTags()
        self.last_transfer: dict[str, Any] = {"incoming": None, "outgoing": None}
        self.seen_transfers = {"incoming": 0, "outgoing": 0}
        self.transfer_seq = itertools.count(1)
        # executions _timed has timed whose execute has not returned yet, and those Dask ran
        # without it
        self.timed_seqs: set[int] = set()
        self.executions_not_timed = 0
        self.marker_path = (Path(self.run_dir) / "darshan" / "markers"
                            / pdir.name.removeprefix("worker-"))
        self.marker_offset = 0
        # the files a task opens are evidence for Darshan's I/O only (the helper-, stdio- and
        # counter- methods): recorded where Darshan traces this process. The audit hook that
        # sees them cannot be removed and runs for every audited event of the process, which
        # Dask raises about 60 of per task
        self.record_opens = darshan_in_preload() is not None
        self._patch(worker)
        if self.record_opens:
            file_opens.install()
        self._setup_profiler(worker)
        proc_json(pdir, role="worker", address=worker.address, name=str(worker.name),
                  nthreads=worker.state.nthreads, memory_limit=worker.memory_manager.memory_limit,
                  local_directory=worker.local_directory, main_thread_id=threading.get_ident(),
                  profile=self.profile)
        self.sink.before_flush.append(self._flush_rows)
        self._sample()
        self._callback = self._start_periodic(worker)
        stop_with(worker, self.sink)
        exit_flush.register(self._on_exit)
        self.sink.start()
        self._watch(worker, pdir)

    def _setup_profiler(self, worker: Any) -> None:
        """The function profiler of ``--profile`` (none without), its memory budget, and the
        state the flush keeps of its rows."""
        self.profiler = make_profiler(self.profile, self.tags, boundary=(
            CorrelateWorkerPlugin._timed.__code__, CoroutineSteps._step.__code__))
        self.profile_rows: tuple[list[tuple], list[tuple]] | None = None
        # executions whose profile entries are final (appended when they end), and those
        # final at the previous snapshot
        self.profiles_final: deque[int] = deque()
        # yappi modes: the rows of ended executions, read as each ended (flat, as the sink's),
        # and the snapshot last written (of the executions running then)
        self.profile_done: list = []
        self.snapshot_written: list[tuple] = []
        self._final_before: set[int] = set()
        self._next_snapshot = 0.0
        limit = worker.memory_manager.memory_limit
        self.profile_budget = int(limit * PROFILE_MEMORY_SHARE) if limit else PROFILE_MEMORY_DEFAULT
        self.profile_stopped: dict[str, int] | None = None
        #: an execution's Yappi tag: a slot of the profiler's pool (None: the tag is the seq)
        self.tag_of = None
        if isinstance(self.profiler, YappiProfile):
            self.tag_of = self.profiler.acquire
            if not self.profiler.event_loop:
                # not in yappi-all: there, with tiny clear bounds, a real cluster made many more
                # clears (tests/collectors/test_yappi_clears.py; not explained yet), so that
                # mode keeps each task's own code objects
                self.canonicalise = code_cache.canonicalise
                self.canonicalise_call = code_cache.canonicalise_call
            self.profiler.clear_bytes = min(CLEAR_BYTES, self.profile_budget // 2)
            prefixes = tuple(p for p in (getattr(worker.executors.get(name), "_thread_name_prefix",
                                                 None) for name in self._orig_submits) if p)
            self.profiler.start(prefixes)
            if prefixes:
                self.task_hooks = self.profiler.task_hooks()
        elif self.profiler is not None:
            self.profiler.start()

    def _watch(self, worker: Any, pdir: Path) -> None:
        """Stalls of the worker's event loop and of the collectors' threads are recorded
        (collectors.watchdog)."""
        dog = watchdog.watchdog(pdir, self.options.stall_after)
        owner = str(worker.address)
        worker.periodic_callbacks["dask-correlate-watchdog"] = dog.loop_callback(owner)
        dog.watch("flush", owner, self._sink.last_flush, self.flush_interval)
        if isinstance(self.profiler, StackSampler):
            dog.watch("sampler", owner, self._sampler_progress, self.profiler.interval)

    def _sampler_progress(self) -> float | None:
        profiler = self.profiler
        return profiler.progress if isinstance(profiler, StackSampler) else None

    @property
    def _sink(self) -> ProcessSink:
        """The sink, open: what writes to it runs only between setup and teardown."""
        assert self.sink is not None
        return self.sink

    def _start_periodic(self, worker: Any) -> Any:
        from tornado.ioloop import PeriodicCallback

        pc = PeriodicCallback(self._on_loop, self.flush_interval * 1000 / 2)
        worker.periodic_callbacks["dask-correlate"] = pc
        pc.start()
        return pc

    def teardown(self, worker: Any) -> None:
        if not self._defer_close(worker):
            self._teardown(worker)

    @never_raise
    def _defer_close(self, worker: Any) -> bool:
        """Removed while the worker registers with the scheduler, which is about to replace
        it by its own copy (plugin_add of the same name), which takes this one back in its
        setup: closed at the loop's next turn unless that happened. Removed at any other time
        (the worker's close, a client's unregister): False, closed now."""
        from distributed.core import Status

        heartbeat = worker.periodic_callbacks.get("heartbeat")
        registering = heartbeat is not None and not heartbeat.is_running()  # started after
        if worker.status != Status.running or not registering:
            return False
        self.removed = True
        worker.loop.add_callback(self._close_if_removed, worker)
        return True

    def _close_if_removed(self, worker: Any) -> None:
        if self.removed:
            self._teardown(worker)
            _LIVE.pop(worker, None)

    @never_raise
    def _teardown(self, worker: Any) -> None:
        if self.sink is None:
            return
        self._callback.stop()
        worker.periodic_callbacks.pop("dask-correlate", None)
        beat = worker.periodic_callbacks.pop("dask-correlate-watchdog", None)
        if beat is not None:
            beat.stop()
        watchdog.release(str(worker.address))
        self._on_loop()
        if self.profiler is not None:
            self.profiler.stop()
            self._snapshot_profile(end=True)
        self._unpatch(worker)
        exit_flush.unregister(self._on_exit)
        self._close_sink()
        self.sink = None

    def _on_exit(self) -> None:
        """The process ends with ``os._exit`` (its parent went away): write what is buffered
        and the closing record, within a few seconds, with the tasks still running counted."""
        if self.sink is not None:
            self._close_sink({"ended_by": "os._exit: the worker's parent process went away"},
                             join_timeout=2.0)

    def _close_sink(self, extra: dict[str, Any] | None = None, join_timeout: float = 30
                    ) -> None:
        worker = self.worker
        totals = {"incoming": worker.state.transfer_incoming_count_total,
                  "outgoing": worker.transfer_outgoing_count_total}
        # executions still running now end after this close: their rows cannot be written,
        # so they are counted
        running = len(set(self.tags.current.values()))
        self._sink.close({
            **(extra or {}),
            **({"profile_stopped": self.profile_stopped} if self.profile_stopped else {}),
            **({"profile_clears": {
                "clears": self.profiler.clears, "forced": self.profiler.clears_forced,
                "executions_cut": self.profiler.executions_cut}}
               if isinstance(self.profiler, YappiProfile) and self.profiler.clears else {}),
            **({"profile_threads_unhooked": self.profiler.threads_unhooked}
               if isinstance(self.profiler, YappiProfile) and self.profiler.threads_unhooked
               else {}),
            "executions_running_at_close": running,
            "executions_not_timed": self.executions_not_timed,
            "transfers_lost_to_dask_log_limit": {
                d: max(0, totals[d] - self.seen_transfers[d]) for d in totals}},
            join_timeout=join_timeout)

    # ---- executions ------------------------------------------------------------------------

    def _patch(self, worker: Any) -> None:
        self._orig_execute = worker.execute

        tasks = worker.state.tasks

        def execute(key: Any, *args: Any, **kwargs: Any) -> Any:
            seq = next(self.seq)
            ts = tasks.get(key)
            if ts is not None and getattr(ts.run_spec, "is_coro", False):
                if self.canonicalise is not None:  # before its first step runs under Yappi
                    self.canonicalise(ts.run_spec)
                return self._coroutine(run(key, seq, False, *args, **kwargs), key, seq)
            return run(key, seq, True, *args, **kwargs)

        async def run(key: Any, seq: int, threaded: bool, *args: Any, **kwargs: Any) -> Any:
            token = _CURRENT_KEY.set((key, seq))
            # Dask copies this context to the executing thread, and the libraries the task
            # calls copy it on to their helper threads (collectors.file_opens)
            sink = self.sink
            opens = (file_opens.CURRENT.set(None if sink is None else (seq, sink.append))
                     if self.record_opens else None)
            try:
                result = await self._orig_execute(key, *args, **kwargs)
            finally:
                if opens is not None:
                    file_opens.CURRENT.reset(opens)
                _CURRENT_KEY.reset(token)
            if threaded:
                self._count_untimed(seq, result)
            return result

        worker.execute = execute
        self._orig_submits = {}
        for name, executor in worker.executors.items():
            if "ThreadPoolExecutor" in type(executor).__name__:
                self._orig_submits[name] = executor.submit
                executor.submit = self._make_submit(executor.submit)

    def _unpatch(self, worker: Any) -> None:
        worker.execute = self._orig_execute
        for name, submit in self._orig_submits.items():
            worker.executors[name].submit = submit

    def _count_untimed(self, seq: int, result: Any) -> None:
        """Dask ran the task function (its event carries the start) but not through _timed."""
        try:
            self.timed_seqs.remove(seq)
        except KeyError:
            if getattr(result, "start", None) is not None:
                self.executions_not_timed += 1

    def _make_submit(self, submit: Any) -> Any:
        def wrapped(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            current = _CURRENT_KEY.get(None)
            if current is None:
                return submit(fn, *args, **kwargs)
            return submit(self._timed, *current, fn, *args, **kwargs)

        return wrapped

    def _timed(self, key: Any, seq: int, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Runs on the executing thread: times the task function, tags the thread.

        In ``yappi`` mode the profiler's hook is on only around ``fn``: nothing else runs
        while it is on, not even the clocks. Yappi files every call it sees, C functions
        included (its ``builtins=False`` only hides them when it reports), under the
        execution's tag, and each new tag makes it build a new entry for each function: a
        clock read inside the window cost a new entry per task."""
        if self.canonicalise_call is not None:
            # yappi modes: the functions the task (Dask's run spec) brings take the process's
            # code objects (collectors.code_cache), before Yappi sees them; here, not on the
            # event loop, whose hook is on in yappi-all, and outside the task's clocks
            # and tag (after a clear this thread's hook is on until its task ends)
            self.canonicalise_call(fn, args)
        tid = threading.get_ident()
        tags = self.tags
        tags.began[tid] = time.perf_counter()
        tags.current[tid] = seq
        tags.local.seq = seq if self.tag_of is None else self.tag_of(seq)
        status, result = "error", None
        resume, pause = self.task_hooks
        c0, t0 = time.thread_time_ns(), time.time_ns()
        if resume is not None:
            try:  # not through quietly: after a Yappi clear this thread's hook is on (a
                # Python call here would be filed under the execution)
                resume()
            except Exception as err:  # noqa: BLE001 - never fail the task
                record(err, "_timed: profiler on")
        try:
            result = fn(*args, **kwargs)
            status = "ok"
            return result
        finally:
            if pause is not None:
                try:  # not through quietly: a Python call that Yappi would see
                    pause()
                except Exception as err:  # noqa: BLE001 - never fail the task
                    record(err, "_timed: profiler off")
            t1, c1 = time.time_ns(), time.thread_time_ns()
            if isinstance(result, dict) and result.get("op") == "task-erred":
                status = "error"
            tags.local.seq = 0
            tags.current.pop(tid, None)
            self._profile_ended(seq)
            self.timed_seqs.add(seq)
            native = _NATIVE.value or _native_id()
            self._add_execution((seq, key, tid, native, t0, t1, c1 - c0, status))

    def _profile_ended(self, seq: int) -> None:
        """Execution ``seq`` has ended (on its thread, the task timed): in yappi modes its
        function rows are read now, its tag going back to the pool (``YappiProfile.finish``);
        otherwise the next snapshot takes them."""
        if self.tag_of is None:
            self.profiles_final.append(seq)
            return
        try:
            profiler = self.profiler
            assert isinstance(profiler, YappiProfile)  # the one tag_of is set with (_setup)
            rows = profiler.finish(seq)
        except Exception as err:  # noqa: BLE001 - never fail the task
            record(err, "profile: reading an execution's rows")
            return
        done = self.profile_done
        for row in rows:
            done.extend(row)

    def _coroutine(self, coro: Any, key: Any, seq: int) -> CoroutineSteps:
        """A coroutine task's execute coroutine, driven step by step on the loop thread (this
        one): each step is an active slice, with the execution's profile tag set while it runs
        (and, in ``yappi`` mode, Yappi's hook, which is otherwise off on the loop)."""
        tid = threading.get_ident()
        tags = self.tags
        delay = getattr(self.worker, "scheduler_delay", 0.0) or 0.0
        hooks = getattr(self.profiler, "loop_step", None)
        resume, pause = hooks() if hooks is not None else (None, None)
        tag = seq if self.tag_of is None else self.tag_of(seq)

        def enter() -> None:
            tags.began[tid] = time.perf_counter()
            tags.current[tid] = seq
            tags.local.seq = tag

        def leave() -> None:
            tags.local.seq = 0
            tags.current.pop(tid, None)

        def done(steps: list[tuple[int, int, int]], result: Any) -> None:
            self._profile_ended(seq)
            self._record_coroutine(key, seq, tid, steps, result, delay)

        return CoroutineSteps(coro, enter, leave, done, on=resume, off=pause)

    @never_raise
    def _record_coroutine(self, key: Any, seq: int, tid: int, steps: list[tuple[int, int, int]],
                          result: Any, delay: float) -> None:
        """The execution (window: Dask's start/stop of the task function, back on this worker's
        clock) and its active slices."""
        sink = self.sink
        if sink is None or not steps:
            return
        start, stop = getattr(result, "start", None), getattr(result, "stop", None)
        window = ((round((start - delay) * 1e9), round((stop - delay) * 1e9))
                  if start is not None and stop is not None else (steps[0][0], steps[-1][1]))
        kept = coroutine_steps.slices(steps, window)
        for a, b, cpu in kept:
            sink.append("coroutine_slices", (seq, a, b, cpu))
        status = "ok" if type(result).__name__ == "ExecuteSuccessEvent" else "error"
        self._add_execution((seq, key, tid, _NATIVE.value or _native_id(), window[0],
                             window[1], sum(c for *_, c in kept), status))

    # ---- transitions -----------------------------------------------------------------------

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        buf = self.transitions
        if len(buf) < self._transitions_cap:
            buf.extend((time.time_ns(), key, start, finish))
        else:  # (the bounded add counts it as dropped)
            self._add_transition((time.time_ns(), key, start, finish))

    # ---- periodic (event loop): transfers, clock samples, markers --------------------------

    @never_raise
    def _on_loop(self) -> None:
        self._read_transfers("incoming", self.worker.transfer_incoming_log)
        self._read_transfers("outgoing", self.worker.transfer_outgoing_log)
        self._sample()
        self._bound_profile_memory()
        self._snapshot_profile()

    def _bound_profile_memory(self) -> None:
        """Yappi keeps the entries of every execution until the process ends (it cannot drop
        some tags), so its memory grows with the executions: past ``profile_budget`` it is
        stopped for the rest of the run, before it could cost the job its memory limit. The
        executions profiled so far are still read and written; those that start later get
        no function rows (closing record: ``profile_stopped``). Stopping is safe with tasks
        running: one that turns the hook on after this records into Yappi's tables (still
        there) until its end."""
        profiler = self.profiler
        if self.profile_stopped is not None or not isinstance(profiler, YappiProfile):
            return
        used = profiler.memory()
        if used <= self.profile_budget:
            return
        self.task_hooks = (None, None)
        profiler.stop()
        self.profile_stopped = {"time_ns": time.time_ns(), "memory_bytes": used,
                                "budget_bytes": self.profile_budget}

    def _snapshot_profile(self, end: bool = False) -> None:
        """Profile rows are read here, on the event loop, and written by the flush thread: a
        new snapshot once the flush took the previous one. Reading them walks the profiler's
        entries of every execution so far, so it costs more as the run goes on: the next one
        is taken no sooner than ``1 / SNAPSHOT_SHARE`` times the last one's duration later,
        which keeps the loop's share bounded (a killed worker loses the profiles since the
        last snapshot)."""
        if self.profiler is None:
            self.profiles_final.clear()
            return
        if not end and (self.profile_rows is not None
                          or time.monotonic() < self._next_snapshot):
            return
        t0 = time.monotonic()
        # Rows of executions that had ended by the previous snapshot (one round of margin for
        # the sampler thread, which may be attributing a last sample) are final: written once,
        # as parts. Running executions and work outside tasks (0) go to the snapshot,
        # rewritten each time; executions that ended since the previous snapshot wait for the
        # next. So each row of an execution is read and written once, not at every flush.
        final = self._final_before
        ended = self._final_before = set(drain(self.profiles_final))
        # at the end the profiler has stopped: every ended execution is final, and rows
        # taken but not flushed yet are kept
        parts = self.profile_rows[0] if self.profile_rows is not None else []
        if end:
            final, ended = final | ended, set()
        # an execution leaves ``tags.current`` before it is appended to the ended ones
        running = set(self.tags.current.values()) - ended
        snapshot: list[tuple] = []
        for row in self.profiler.rows(final | running | {0}):
            (parts if row[3] in final else snapshot).append(row)
        self.profiler.forget(final)
        self.profile_rows = (parts, snapshot)
        now = time.monotonic()
        self._next_snapshot = now + (now - t0) / SNAPSHOT_SHARE

    def _read_transfers(self, direction: str, log: deque) -> None:
        """New entries of Dask's bounded transfer log since the last one seen (by identity).
        Dask's counters count transfers when they start, so they only give the loss at the
        end (teardown), when nothing is in flight."""
        entries = list(log)
        last, start = self.last_transfer[direction], 0
        if last is not None:
            start = next((i + 1 for i in range(len(entries) - 1, -1, -1)
                          if entries[i] is last), 0)
        new = entries[start:]
        if not new:
            return
        self.last_transfer[direction] = new[-1]
        self.seen_transfers[direction] += len(new)
        for e in new:
            seq = next(self.transfer_seq)
            keys = e.get("keys") or {}
            self._sink.append("worker_transfers", (
                seq, direction, e.get("who"), e.get("total"), e.get("compressed"),
                int(e["start"] * 1e9) if "start" in e else None,
                int(e["stop"] * 1e9) if "stop" in e else None, len(keys),
                _delay_added(e) if direction == "outgoing" else None))
            for k, nbytes in keys.items():
                self._sink.append("worker_transfer_keys", (seq, key_str(k), nbytes))

    def _sample(self) -> None:
        """A clock and CPU sample, and when markers are on the Darshan clock marker written
        right after it, on the same row (``CLOCK_SAMPLES_3``: no stream of its own)."""
        t = os.times()
        now = time.time_ns()
        sample = (now, time.perf_counter_ns(), getattr(self.worker, "scheduler_delay", None),
                  getattr(self.worker, "latency", None), t.user + t.system)
        marker: tuple = (None, None, None, None)
        if self.markers:
            try:
                marker = self._write_marker()
            except OSError as err:  # the sample is still written
                record(err, "clock marker")
        self._sink.append("worker_clock_samples", (*sample, *marker))

    def _write_marker(self) -> tuple[int, str, int, int]:
        """Write the next marker; its row's values (time, path, offset, length)."""
        self.marker_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.marker_path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            t = time.time_ns()
            os.pwrite(fd, MARKER_BYTES, self.marker_offset)
        finally:
            os.close(fd)
        offset = self.marker_offset
        self.marker_offset += len(MARKER_BYTES)
        return t, str(self.marker_path), offset, len(MARKER_BYTES)

    # ---- flush (background thread) ---------------------------------------------------------

    @never_raise
    def _flush_rows(self) -> None:
        sink = self._sink
        for name, raw in (("task_executions", self.executions),
                          ("worker_transitions", self.transitions)):
            columns = take(raw, sink.widths[name])
            if columns:
                columns[1] = key_texts(columns[1])
                sink.write_columns(name, columns)
        width = sink.widths["worker_func_stats"]
        done = take(self.profile_done, width)
        rows, self.profile_rows = self.profile_rows, None
        parts, snapshot = rows if rows is not None else ([], None)
        if done and snapshot is None:
            snapshot = self.snapshot_written  # rewritten without the executions now ended
        if snapshot is not None and isinstance(self.profiler, YappiProfile):
            # yappi modes: an execution's final rows come from its end (``_profile_ended``),
            # so its rows of a snapshot taken while it ran go once it has ended
            holds = self.profiler.holds
            snapshot = [r for r in snapshot if not r[3] or holds(r[3])]
        # the snapshot first: a process killed in between loses rows, never doubles them
        if snapshot is not None:
            sink.write_snapshot("worker_func_stats", snapshot)
            self.snapshot_written = snapshot
        if parts:
            sink.write_columns("worker_func_stats", columns_of(parts, width))
        if done:
            sink.write_columns("worker_func_stats", done)
