"""The scheduler plugin's rows from Dask's transition arguments: keys rendered as every source
renders them, prefix and group looked up while the task is known, what task-finished carries
(worker, thread, size, type name, startstops) on that transition's row only."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

from collectors.scheduler_plugin import CorrelateSchedulerPlugin
from collectors.sink import ProcessSink
from correlate.schema import run as schema
from testing.raw_parts import read_raw


def test_transition_rows_carry_what_each_transition_brought(tmp_path):
    plugin = CorrelateSchedulerPlugin(str(tmp_path))
    task = SimpleNamespace(prefix=SimpleNamespace(name="x"), group=SimpleNamespace(name="x-1"))
    plugin.scheduler = SimpleNamespace(tasks={("x-1", 0): task})
    proc = tmp_path / "procs" / "scheduler-h-1"
    plugin.sink = ProcessSink(proc, {t.name: t for t in (
        schema.SCHEDULER_TRANSITIONS_3, schema.TRANSITION_DETAILS, schema.TASK_STARTSTOPS,
        schema.TASK_DEPENDENCIES)})
    plugin.sink.before_flush.append(plugin._expand)
    plugin.transition(("x-1", 0), "released", "waiting", stimulus_id="s1")
    plugin.transition(("x-1", 0), "processing", "memory", stimulus_id="s2", worker="tcp://w:1",
                      nbytes=8, type=pickle.dumps(int), typename="int", thread=5, metadata={},
                      startstops=[{"action": "compute", "start": 1.5, "stop": 2.25},
                                  {"action": "transfer", "start": 1.0, "stop": 1.25,
                                   "source": "tcp://v:2"}])
    plugin.transition("gone-2", "memory", "forgotten", stimulus_id="s3")
    plugin.transition("odd-3", "a", "b", worker="tcp://w:1")  # no stimulus given
    plugin.sink.flush()
    rows = read_raw(tmp_path, "scheduler_transitions").sort("local_time_ns")
    cols = ["key", "prefix", "group", "start", "finish", "stimulus_id", "worker", "thread_id",
            "nbytes"]
    assert rows.select(cols).rows() == [
        ("('x-1', 0)", "x", "x-1", "released", "waiting", "s1", None, None, None),
        ("('x-1', 0)", "x", "x-1", "processing", "memory", "s2", "tcp://w:1", 5, 8),
        ("gone-2", None, None, "memory", "forgotten", "s3", None, None, None),
        ("odd-3", None, None, "a", "b", None, "tcp://w:1", None, None)]
    starts = read_raw(tmp_path, "task_startstops").sort("reported_start_ns")
    memory_ns = rows["local_time_ns"][1]
    assert starts.select("local_time_ns", "key", "worker", "thread_id", "action",
                         "reported_start_ns", "reported_stop_ns", "source").rows() == [
        (memory_ns, "('x-1', 0)", "tcp://w:1", 5, "transfer", 1_000_000_000, 1_250_000_000,
         "tcp://v:2"),
        (memory_ns, "('x-1', 0)", "tcp://w:1", 5, "compute", 1_500_000_000, 2_250_000_000,
         None)]


def _plugin(tmp_path):
    plugin = CorrelateSchedulerPlugin(str(tmp_path))
    plugin.scheduler = SimpleNamespace(tasks={})
    plugin.sink = ProcessSink(tmp_path / "procs" / "scheduler-h-1", {t.name: t for t in (
        schema.SCHEDULER_TRANSITIONS_3, schema.TRANSITION_DETAILS, schema.TASK_STARTSTOPS,
        schema.TASK_DEPENDENCIES)})
    plugin.sink.before_flush.append(plugin._expand)
    return plugin


def test_no_container_of_dasks_is_kept_until_the_flush(tmp_path):
    """What a transition brought is kept as plain values: Dask's keywords dict and its
    startstops list and dicts are let go at once (each kept one would be one more object for
    the scheduler's garbage collector to walk, and trip on)."""
    plugin = _plugin(tmp_path)
    startstops = [{"action": "compute", "start": 1.5, "stop": 2.25}]
    plugin.transition("k-1", "processing", "memory", stimulus_id="s", worker="tcp://w:1",
                      nbytes=8, thread=5, metadata={}, startstops=startstops)
    kept = plugin._transitions + plugin._details + plugin._startstops
    assert kept and not [v for v in kept if isinstance(v, (dict, list, set))]
    assert not [v for v in kept if v is startstops[0] or v is startstops]


def test_a_startstop_without_its_times_is_counted_not_written(tmp_path):
    plugin = _plugin(tmp_path)
    plugin.transition("k-1", "processing", "memory", stimulus_id="s", worker="tcp://w:1",
                      startstops=[{"action": "compute", "start": 1.5},
                                  {"action": "transfer", "start": 1.0, "stop": 1.25}])
    plugin.sink.flush()
    starts = read_raw(tmp_path, "task_startstops")
    assert starts["action"].to_list() == ["transfer"]
    assert plugin.sink.dropped["task_startstops"] == {"entry without a start or stop time": 1}
    assert read_raw(tmp_path, "scheduler_transitions").height == 1


def test_transitions_past_the_buffer_bound_are_counted_as_dropped(tmp_path, monkeypatch):
    """The hook tests the bound inline: past ``max_rows`` buffered rows a transition is
    counted as dropped, not kept (the flush writes the ones kept)."""
    import functools

    from collectors import scheduler_plugin

    monkeypatch.setattr(scheduler_plugin, "ProcessSink",
                        functools.partial(ProcessSink, max_rows=3))
    plugin = CorrelateSchedulerPlugin(str(tmp_path))
    task = SimpleNamespace(prefix=SimpleNamespace(name="x"), group=SimpleNamespace(name="x-1"))
    plugin._start(SimpleNamespace(address="tcp://s:1", tasks={"x-1": task}, extensions={}))
    for finish in ("waiting", "processing", "memory", "released", "forgotten"):
        plugin.transition("x-1", "a", finish, stimulus_id="s")
    assert plugin.sink is not None
    assert plugin.sink.dropped["scheduler_transitions"] == {"buffer full": 2}
    plugin.close_sink()
    rows = read_raw(tmp_path, "scheduler_transitions")
    assert rows["finish"].to_list() == ["waiting", "processing", "memory"]
