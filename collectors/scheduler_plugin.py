"""Scheduler plugin: every transition with its context and every startstops entry, the task
graph's edges, workers and clients joining and leaving. Hooks append tuples; keys are rendered
and rows expanded in the background flush."""

from __future__ import annotations

import os
import time
from collections import deque
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin

from collectors.guard import ERRORS, never_raise, set_log_dir
from collectors.manifest import dask_config
from collectors.options import DEFAULTS, Options
from collectors.sink import ProcessSink, drain, hostname, proc_json, process_dir

# raw rows buffered in the hot path, expanded at flush
_RAW = ("transitions", "graphs")


class CorrelateSchedulerPlugin(SchedulerPlugin):
    name = "dask-correlate-scheduler"
    idempotent = True

    def __init__(self, run_dir: str, options: Options = DEFAULTS) -> None:
        self.run_dir = run_dir
        self.options = options
        self.sink: ProcessSink | None = None
        self._raw: dict[str, deque] = {n: deque() for n in _RAW}
        self._append_transition = self._raw["transitions"].append

    async def start(self, scheduler: Any) -> None:
        self._start(scheduler)

    @never_raise
    def _start(self, scheduler: Any) -> None:
        from correlate.schema import run as schema

        self.scheduler = scheduler
        pdir = process_dir(Path(self.run_dir), "scheduler", hostname(), os.getpid())
        tables = {t.name: t for t in (schema.SCHEDULER_TRANSITIONS, schema.TASK_STARTSTOPS,
                                      schema.TASK_DEPENDENCIES, schema.CLUSTER_EVENTS)}
        self.sink = ProcessSink(pdir, tables, interval=self.options.flush_interval)
        set_log_dir(pdir)
        proc_json(pdir, role="scheduler", address=scheduler.address,
                  dask_config=dask_config())
        self.sink.before_flush.append(self._expand)
        self.sink.start()

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        self._append_transition((time.time_ns(), key, start, finish, kwargs))

    @never_raise
    def update_graph(self, scheduler: Any, *, client: str, tasks: list | None = None,
                     **kwargs: Any) -> None:
        """Edges are read from the task states now (they may be forgotten by flush time);
        once per submitted graph, O(edges), like the scheduler's own update_graph work."""
        get = scheduler.tasks.get
        edges = {}
        for key in tasks or ():
            ts = get(key)
            if ts is not None:
                edges[key] = [d.key for d in ts.dependencies]
        self._raw["graphs"].append((time.time_ns(), client, edges))

    @never_raise
    def _expand(self) -> None:
        """Flush-time: turn raw hook arguments into table rows (off the event loop)."""
        from correlate.keys import key_str

        sink = self.sink
        assert sink is not None
        for t_ns, key, start, finish, kw in drain(self._raw["transitions"]):
            k = key_str(key)
            ts = self.scheduler.tasks.get(key)
            prefix = ts.prefix.name if ts is not None else None
            group = ts.group.name if ts is not None else None
            worker, thread = kw.get("worker"), kw.get("thread")
            typ = kw.get("type")
            sink.append("scheduler_transitions", (
                t_ns, k, prefix, group, start, finish, kw.get("stimulus_id"), worker, thread,
                kw.get("nbytes"), getattr(typ, "__name__", None) if typ is not None else None))
            for ss in kw.get("startstops") or ():
                sink.append("task_startstops", (
                    t_ns, k, worker, thread, ss.get("action"), int(ss["start"] * 1e9),
                    int(ss["stop"] * 1e9), ss.get("source")))
        for t_ns, client, deps in drain(self._raw["graphs"]):
            for key, dset in (deps or {}).items():
                k = key_str(key)
                for dep in dset or ():
                    sink.append("task_dependencies", (t_ns, k, key_str(dep), client))
                if not dset:
                    sink.append("task_dependencies", (t_ns, k, None, client))

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
        self._close()

    @never_raise
    def _close(self) -> None:
        if self.sink is not None:
            self.sink.close()
            self.sink = None

    @property
    def hook_errors(self) -> int:
        return sum(ERRORS.values())
