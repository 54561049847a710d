"""Scheduler plugin: every transition with its context and every startstops entry, the task
graph's edges, each task's span and annotations, Dask's spans and their fine performance
metrics, workers and clients joining and leaving, and the data that enters Dask without an
execution (``Scheduler.update_data``, which fires no transition) with what its senders said of it
(``collectors.api``). Hooks append tuples; keys are rendered and rows expanded in the background
flush."""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from itertools import compress
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin

from collectors import frames_guard, watchdog
from collectors.guard import ERRORS, never_raise, set_log_dir
from collectors.manifest import dask_config
from collectors.options import DEFAULTS, Options
from collectors.sink import (
    ProcessSink,
    drain,
    hostname,
    proc_json,
    process_dir,
    stop_with,
    take,
)
from correlate.frames.keys import key_str, key_texts

#: Dask's events topic on which ``collectors.api`` tells who sends the data it scatters
SENDER_TOPIC = "dask-correlate-sender"

#: values per raw row (flat, as in collectors.sink): a transition (time, key, start, finish,
#: stimulus id); what the task-finished message brought (time, key, worker, thread, result
#: size); one of its startstops (time, key, worker, thread, action, start s, stop s, source)
_TRANSITION, _DETAIL, _STARTSTOP = 5, 5, 8


class CorrelateSchedulerPlugin(SchedulerPlugin):
    name = "dask-correlate-scheduler"
    idempotent = True

    def __init__(self, run_dir: str, options: Options = DEFAULTS) -> None:
        self.run_dir = run_dir
        self.options = options
        self.sink: ProcessSink | None = None
        # raw rows buffered in the hot path (bounded by the sink once it exists), expanded at
        # flush
        self._transitions: list = []
        self._details: list = []
        self._startstops: list = []
        self._graphs: deque = deque()
        #: keys the last flush wrote as forgotten (their texts let go at the next)
        self._forgotten: list[str] = []
        self._annotations: deque = deque()
        self._append_transition: Callable[[tuple], None] = self._transitions.extend
        #: values the transitions buffer holds before a row is counted as dropped (the bound
        #: ``_append_transition`` keeps; tested inline in the hook, a call fewer per row)
        self._transitions_cap = sys.maxsize
        self._append_detail: Callable[[tuple], None] = self._details.extend
        self._append_startstop: Callable[[tuple], None] = self._startstops.extend
        self._arrivals: deque = deque()
        self._notes: deque = deque()
        self._unwrap: list = []

    async def start(self, scheduler: Any) -> None:
        self._start(scheduler)

    @never_raise
    def _start(self, scheduler: Any) -> None:
        from correlate.schema import run as schema

        self.scheduler = scheduler
        pdir = process_dir(Path(self.run_dir), "scheduler", hostname(), os.getpid())
        tables = {t.name: t for t in (schema.SCHEDULER_TRANSITIONS_3, schema.TRANSITION_DETAILS,
                                      schema.TASK_STARTSTOPS,
                                      schema.TASK_DEPENDENCIES, schema.TASK_ANNOTATIONS,
                                      schema.SPANS_RAW, schema.SPAN_METRICS_RAW,
                                      schema.CLUSTER_EVENTS, schema.SCHEDULER_ARRIVALS,
                                      schema.SENDER_NOTES)}
        self.sink = ProcessSink(pdir, tables, interval=self.options.flush_interval)
        self._transitions, self._append_transition = self.sink.raw("scheduler_transitions",
                                                                   _TRANSITION)
        self._transitions_cap = self.sink.max_rows * _TRANSITION
        self._details, self._append_detail = self.sink.raw("scheduler_transition_details",
                                                           _DETAIL)
        self._startstops, self._append_startstop = self.sink.raw("task_startstops",
                                                                 _STARTSTOP)
        set_log_dir(pdir)
        frames_guard.install()
        proc_json(pdir, role="scheduler", address=scheduler.address,
                  dask_config=dask_config())
        self.sink.before_flush.append(self._expand)
        stop_with(scheduler, self.sink)
        self.sink.start()
        dog = watchdog.watchdog(pdir, self.options.stall_after)
        owner = str(scheduler.address)
        scheduler.periodic_callbacks["dask-correlate-watchdog"] = dog.loop_callback(owner)
        dog.watch("flush", owner, self.sink.last_flush, self.options.flush_interval)
        self._watch_update_data(scheduler)

    def _watch_update_data(self, scheduler: Any) -> None:
        """Wrap ``Scheduler.update_data``: data a client scatters (directly to the workers or
        through ``Scheduler.scatter``) reaches the scheduler's memory there, with no transition
        and no plugin hook. The wrapper calls Dask's method first, unchanged, then appends one
        tuple: only keys entering memory without an execution cost anything. It is reached
        through the instance attribute (``Scheduler.scatter``) and the two handler tables
        that bound the method when the scheduler was made (the client's rpc and stream)."""
        original = getattr(scheduler, "update_data", None)
        if original is None:
            return
        arrivals = self._arrivals
        comms = getattr(scheduler, "client_comms", {})

        def update_data(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if not args:  # (Dask passes keywords only; anything else is left alone)
                client = kwargs.get("client")
                # the client's address now: it may have left by the time of the flush
                stream = comms.get(client) if isinstance(client, str) else None
                arrivals.append((time.time_ns(), kwargs.get("who_has"), kwargs.get("nbytes"),
                                 client, getattr(getattr(stream, "comm", None), "peer_address",
                                                 None)))
            return result

        scheduler.update_data = update_data
        self._unwrap.append((scheduler.__dict__, "update_data", update_data, None))
        for table in (getattr(scheduler, "handlers", None),
                      getattr(scheduler, "stream_handlers", None)):
            for name in ("update_data", "update-data"):
                if isinstance(table, dict) and table.get(name) == original:
                    table[name] = update_data
                    self._unwrap.append((table, name, update_data, original))

    def _restore_update_data(self) -> None:
        for table, name, ours, original in self._unwrap:
            if table.get(name) is ours:
                if original is None:
                    del table[name]
                else:
                    table[name] = original
        self._unwrap.clear()

    def log_event(self, topic: str, msg: Any) -> None:
        if topic == SENDER_TOPIC:  # (one comparison for any other event)
            self._notes.append((time.time_ns(), msg))
        elif type(msg) is dict and msg.get("action") == "worker-status-change":
            self._status_change(topic, msg)

    @never_raise
    def _status_change(self, worker: str, msg: dict) -> None:
        """A worker paused by its memory manager, or running again: its waits then have
        memory, not threads, as their cause."""
        if msg.get("status") == "paused":
            self._event((time.time_ns(), "worker_paused", worker, None, None, None, None, None))
        elif msg.get("prev-status") == "paused":
            self._event((time.time_ns(), "worker_resumed", worker, None, None, None, None,
                         None))

    def transition(self, key: Any, start: str, finish: str, *args: Any,
                   stimulus_id: str | None = None, **kwargs: Any) -> None:
        # Only plain values are kept until the flush, in flat lists: a container kept alive
        # (Dask's keywords dict, its startstops) would be one more object for the scheduler's
        # garbage collector, which then runs more often and walks more
        t = time.time_ns()
        buf = self._transitions
        if len(buf) < self._transitions_cap:
            buf.extend((t, key, start, finish, stimulus_id))
        else:  # (the bounded add counts it as dropped)
            self._append_transition((t, key, start, finish, stimulus_id))
        if kwargs:  # the task-finished message (processing->memory), an error's, …
            worker, thread = kwargs.get("worker"), kwargs.get("thread")
            self._append_detail((t, key, worker, thread, kwargs.get("nbytes")))
            for ss in kwargs.get("startstops") or ():
                self._append_startstop((t, key, worker, thread, ss.get("action"),
                                        ss.get("start"), ss.get("stop"), ss.get("source")))

    @never_raise
    def update_graph(self, scheduler: Any, *, client: str, tasks: list | None = None,
                     **kwargs: Any) -> None:
        """Edges, spans and annotations are read from the task states now (they may be
        forgotten by flush time); once per submitted graph, O(edges), like the scheduler's own
        update_graph work (which has just put each task in its span)."""
        get = scheduler.tasks.get
        edges, labels = {}, {}
        for key in tasks or ():
            ts = get(key)
            if ts is not None:
                edges[key] = [d.key for d in ts.dependencies]
                if ts.annotations:  # (a copy: the scheduler may change them later)
                    labels[key] = dict(ts.annotations)
        now = time.time_ns()
        self._graphs.append((now, client, edges))
        if labels:
            self._annotations.append((now, labels))

    @never_raise
    def _expand(self) -> None:
        """Flush-time: turn raw hook arguments into table rows (off the event loop)."""
        sink = self.sink
        assert sink is not None
        graphs = list(drain(self._graphs))
        # (a key's text is held from its graph's flush, before any row names it, to the flush
        # after the one that says its task was forgotten, whose rows all name it by that id)
        sink.hold_texts(key_texts([key for _t, _c, deps in graphs for key in deps or ()]),
                        self._forgotten)
        self._forgotten = self._expand_transitions(sink)
        for t_ns, client, deps in graphs:
            for key, dset in (deps or {}).items():
                k = key_str(key)
                for dep in dset or ():
                    sink.append("task_dependencies", (t_ns, k, key_str(dep), client))
                if not dset:
                    sink.append("task_dependencies", (t_ns, k, None, client))
        for t_ns, labels in drain(self._annotations):
            for key, ann in labels.items():
                span = ann.get("span") or {}
                ids = span.get("ids") or (None,)
                rest = {k: v for k, v in ann.items() if k != "span"}
                sink.append("task_annotations", (
                    t_ns, key_str(key), ids[-1],
                    json.dumps(rest, sort_keys=True, default=str) if rest else None))
        self._expand_arrivals(sink)
        self._snapshot_spans(sink)

    @never_raise
    def _expand_arrivals(self, sink: ProcessSink) -> None:
        for t_ns, who_has, nbytes, client, address in drain(self._arrivals):
            sizes = nbytes if isinstance(nbytes, dict) else {}
            for key, workers in (who_has or {}).items():
                k, size = key_str(key), sizes.get(key)
                size = size if isinstance(size, int) and size >= 0 else None
                for worker in workers or (None,):
                    sink.append("scheduler_arrivals", (t_ns, k, worker, size, client,
                                                       address))
        for t_ns, msg in drain(self._notes):
            if not isinstance(msg, dict) or not isinstance(msg.get("client"), str):
                continue  # (not ours: someone else's event on the topic)
            rank = msg.get("rank")
            rank = rank if isinstance(rank, int) and not isinstance(rank, bool) else None
            send = msg.get("send_s")
            send = float(send) if isinstance(send, (int, float)) else None
            step = msg.get("step")
            step = None if step is None else str(step)
            keys = msg.get("keys")
            if not isinstance(keys, (list, tuple)) or not keys:  # (msgpack: a tuple)
                sink.append("sender_notes", (t_ns, msg["client"], rank, None, None, None))
                continue
            for key in keys:
                sink.append("sender_notes", (t_ns, msg["client"], rank, key_str(key), step,
                                             send))

    def _snapshot_spans(self, sink: ProcessSink) -> None:
        """Dask's spans and the fine performance metrics the workers' heartbeats gave each
        (Dask's ``cumulative_worker_metrics``: the span's and its children's)."""
        ext = getattr(self.scheduler, "extensions", {}).get("spans")
        if ext is None:
            return
        spans, metrics = [], []
        for span in list(ext.spans.values()):  # (a copy: the event loop adds spans)
            parent = span.parent
            spans.append((span.id, json.dumps(list(span.name)),
                          None if parent is None else parent.id))
            for k, v in span.cumulative_worker_metrics.items():
                if len(k) == 4:  # (context, prefix, activity, unit)
                    metrics.append((span.id, str(k[0]), None if k[1] is None else str(k[1]),
                                    str(k[2]), str(k[3]), float(v)))
        sink.write_snapshots({"spans": spans, "span_metrics": metrics})  # (one file)

    def _expand_transitions(self, sink: ProcessSink) -> list[str]:
        """The buffered transitions, details and startstops written; the keys forgotten."""
        # a key makes several transitions: rendered and looked up once per flush
        forgotten: list[str] = []
        transitions = take(self._transitions, _TRANSITION)
        if transitions:
            times, keys, starts, finishes, stimuli = transitions
            get = self.scheduler.tasks.get
            prefix, group = {}, {}
            for key in set(keys):
                ts = get(key)
                prefix[key], group[key] = ((ts.prefix.name, ts.group.name) if ts is not None
                                           else (None, None))
            texts = key_texts(keys)
            sink.hold_texts(texts, [])  # (before the batch, whose other texts may fill the map)
            forgotten = list(compress(texts, map("forgotten".__eq__, finishes)))
            sink.write_columns("scheduler_transitions", [
                times, texts, list(map(prefix.__getitem__, keys)),
                list(map(group.__getitem__, keys)), starts, finishes, stimuli])
        details = take(self._details, _DETAIL)
        if details:
            details[1] = key_texts(details[1])
            sink.write_columns("scheduler_transition_details", details)
        startstops = take(self._startstops, _STARTSTOP)
        if startstops:
            times, keys, workers, threads, actions, starts, stops, sources = startstops
            keep: Sequence[int] = range(len(times))
            if not set(map(type, starts)) | set(map(type, stops)) <= {float, int}:
                keep = [i for i, (a, b) in enumerate(zip(starts, stops, strict=True))
                        if isinstance(a, (int, float)) and isinstance(b, (int, float))]
            if len(keep) < len(times):
                sink.dropped["task_startstops"]["entry without a start or stop time"] += (
                    len(times) - len(keep))
            if keep:
                sink.write_columns("task_startstops", [
                    [times[i] for i in keep], key_texts([keys[i] for i in keep]),
                    [workers[i] for i in keep], [threads[i] for i in keep],
                    [actions[i] for i in keep], [int(starts[i] * 1e9) for i in keep],
                    [int(stops[i] * 1e9) for i in keep], [sources[i] for i in keep]])
        return forgotten

    def _event(self, row: tuple) -> None:
        # workers and clients still leave after the scheduler closed this plugin's sink (a
        # scheduler closing with workers attached): nothing left to record them in
        if self.sink is not None:
            self.sink.append("cluster_events", row)

    @never_raise
    def add_worker(self, scheduler: Any, worker: str) -> None:
        ws = scheduler.workers.get(worker)
        host = worker.split("://")[-1].rsplit(":", 1)[0]
        self._event((
            time.time_ns(), "add_worker", worker, str(getattr(ws, "name", "")), host,
            getattr(ws, "pid", None), getattr(ws, "nthreads", None),
            getattr(ws, "memory_limit", None)))

    @never_raise
    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        self._event((time.time_ns(), "remove_worker", worker, None, None,
                                            None, None, None))

    @never_raise
    def add_client(self, scheduler: Any, client: str) -> None:
        self._event((time.time_ns(), "add_client", client, None, None,
                                            None, None, None))

    @never_raise
    def remove_client(self, scheduler: Any, client: str) -> None:
        self._event((time.time_ns(), "remove_client", client, None,
                                            None, None, None, None))

    async def close(self) -> None:
        self.close_sink()

    @never_raise
    def close_sink(self) -> None:
        self._restore_update_data()
        if self.sink is not None:
            watchdog.release(str(self.scheduler.address))
            self.sink.close()
            self.sink = None

    @property
    def hook_errors(self) -> int:
        return sum(ERRORS.values())
