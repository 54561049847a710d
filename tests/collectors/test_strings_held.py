"""The scheduler's task keys are written once while their task lives: a process's map of strings
starts again past its bound keeping the values held (``Strings.hold``), and lets a key go when
its task is forgotten. Without it a graph bigger than the map wrote each key again at most of
its transitions (the 1M-task run's scheduler: 5.4M key texts for 1M keys)."""

from __future__ import annotations

import time
from collections import Counter
from types import SimpleNamespace

import pytest
from distributed import Client, LocalCluster

import collectors
from collectors import sink as sink_module
from collectors.sink import Strings
from correlate.sources import run_streams
from testing.raw_parts import read_raw
from tests.collectors.test_scheduler_rows import _plugin


def _texts(strings: Strings) -> dict[int, str]:
    return dict(zip(strings.new_ids, strings.new_texts, strict=True))


def test_held_keys_keep_their_id_when_the_map_starts_again():
    strings = Strings(limit=4)
    first = strings.encode_keys(["k1", "k2", "k3"])
    strings.hold(["k1", "k2"])
    later = strings.encode_keys(["x1", "x2", "x3", "x4", "k1", "k3"])  # past the bound: again
    assert later[4] == first[0]  # held: its id and text kept
    assert later[5] != first[2]  # not held: a new id, its text again
    assert Counter(_texts(strings).values()) == {"k1": 1, "k2": 1, "k3": 2, "x1": 1, "x2": 1,
                                                 "x3": 1, "x4": 1}
    strings.release(["k1"])
    again = strings.encode_keys([f"y{i}" for i in range(8)] + ["k1", "k2"])
    assert again[-1] == first[1] and again[-2] != first[0]


def test_held_keys_do_not_count_against_the_bound():
    strings = Strings(limit=4)
    keys = [f"k{i}" for i in range(100)]
    first = strings.encode_keys(keys)
    strings.hold(keys)
    for batch in (["a", "b", "c"], ["d", "e", "f"], ["g", "h"]):  # room for 4 besides them
        strings.encode_keys(batch)
    before = strings.next
    again = strings.encode_keys([*keys, "h", "g"])
    assert again[:100] == first and set(again[100:]) == {before - 2, before - 1}
    assert strings.next == before and "a" not in strings.keys


def test_the_keys_map_is_not_filled_by_other_texts():
    strings = Strings(limit=4)
    key = strings.encode_keys(["k"])  # (not held: a worker's keys)
    strings.encode([f"stimulus-{i}" for i in range(10)])  # the other map starts again
    assert strings.encode_keys(["k"]) == key and strings.ids.keys() >= {None, (None, None)}
    strings.encode_keys(["a", "b", "c", "d"])  # the keys' map starts again
    assert strings.encode_keys(["k"]) != key


def test_a_key_held_before_it_is_encoded_keeps_its_id_when_its_batch_fills_the_map():
    strings = Strings(limit=2)
    strings.encode_keys(["a", "b"])
    strings.hold(["k"])
    key = strings.encode_keys(["k", "c"])  # the map starts again before "k" is given its id
    strings.encode_keys(["d", "e", "f"])
    assert "a" not in strings.keys and strings.encode_keys(["k"]) == key[:1]
    assert list(_texts(strings).values()).count("k") == 1


def test_past_the_held_limit_the_first_values_are_held_until_some_are_released(monkeypatch):
    monkeypatch.setattr(sink_module, "HELD_LIMIT", 5)
    strings = Strings(limit=2)
    strings.encode_keys(list("abcdefg"))
    strings.hold(list("abcc"))
    strings.hold(list("cdefg"))
    assert strings.held == set("abcde")
    strings.release(["a", "b"])
    strings.hold(list("fgh"))
    assert strings.held == set("cdefg")


def _written_texts(proc) -> Counter[str]:
    return Counter(run_streams.read_stream(proc / "strings.arrows").frame["text"].to_list())


def test_a_key_is_written_once_while_its_task_lives_and_again_after_it_is_forgotten(
        tmp_path, monkeypatch):
    monkeypatch.setattr(sink_module, "STRINGS_LIMIT", 16)
    plugin = _plugin(tmp_path)
    keys = [f"t-{i}" for i in range(100)]  # a graph of more tasks than the map holds
    for step, (start, finish) in enumerate((("released", "waiting"), ("waiting", "processing"),
                                            ("processing", "memory"), ("memory", "released"),
                                            ("released", "forgotten"))):
        for key in keys:  # (each transition of its own stimulus: the map fills between)
            plugin.transition(key, start, finish, stimulus_id=f"{finish}-{key}-{step}")
        plugin.sink.flush()
    assert set(keys) <= plugin.sink.strings.held  # (let go at the next flush)
    for i in range(40):  # other tasks, which fill the map
        plugin.transition(f"x-{i}", "released", "forgotten", stimulus_id=f"fill-{i}")
    plugin.sink.flush()
    assert not plugin.sink.strings.held & set(keys)
    plugin.transition("t-0", "released", "waiting", stimulus_id="again")  # a key given again
    plugin.sink.flush()
    plugin.sink.stop()
    texts = _written_texts(tmp_path / "procs" / "scheduler-h-1")
    assert {k: texts[k] for k in keys} == {"t-0": 2, **{k: 1 for k in keys[1:]}}
    assert plugin.sink.strings.held == {"t-0"}
    rows = read_raw(tmp_path, "scheduler_transitions")
    assert rows.height == 541 and Counter(rows["key"].to_list()) == {
        "t-0": 6, **{k: 5 for k in keys[1:]}, **{f"x-{i}": 1 for i in range(40)}}
    assert rows.filter(rows["stimulus_id"] == "forgotten-t-7-4")["finish"].to_list() == [
        "forgotten"]


def test_a_graph_s_keys_are_held_from_its_flush_before_their_transitions(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr(sink_module, "STRINGS_LIMIT", 16)
    plugin = _plugin(tmp_path)
    keys = [f"g-{i}" for i in range(30)]
    plugin.scheduler.tasks.update({k: SimpleNamespace(dependencies=(), annotations={})
                                   for k in keys})
    plugin.update_graph(plugin.scheduler, client="c", tasks=keys)  # (their edges' rows)
    plugin.sink.flush()
    for i in range(40):  # other tasks' transitions fill the map before the graph's come
        plugin.transition(f"x-{i}", "released", "waiting", stimulus_id=f"fill-{i}")
    plugin.sink.flush()
    for key in keys:
        plugin.transition(key, "released", "waiting", stimulus_id="graph")
    plugin.sink.flush()
    plugin.sink.stop()
    texts = _written_texts(tmp_path / "procs" / "scheduler-h-1")
    assert {k: texts[k] for k in keys} == dict.fromkeys(keys, 1)
    assert read_raw(tmp_path, "task_dependencies")["key"].sort().to_list() == sorted(keys)


def _inc(x: int) -> int:
    return x + 1


@pytest.mark.cluster
def test_on_a_cluster_each_key_of_a_graph_bigger_than_the_map_is_written_once(
        tmp_path, monkeypatch):
    monkeypatch.setattr(sink_module, "STRINGS_LIMIT", 64)  # (the scheduler runs in this process)
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        with collectors.record(client, tmp_path / "run", flush_interval=0.05) as run:
            firsts = client.map(_inc, range(400), key=[f"a-{i}" for i in range(400)])
            seconds = client.map(_inc, firsts, key=[f"b-{i}" for i in range(400)])
            assert sum(client.gather(seconds)) == sum(range(2, 402))
            del firsts, seconds
            deadline = time.monotonic() + 30
            while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):
                assert time.monotonic() < deadline, "the tasks were never forgotten"
                time.sleep(0.05)
            time.sleep(0.2)  # (a flush after the forgotten transitions)
    proc = next((run / "procs").glob("scheduler-*"))
    texts = _written_texts(proc)
    keys = [f"{p}-{i}" for p in "ab" for i in range(400)]
    assert {k: texts[k] for k in keys} == dict.fromkeys(keys, 1)
    rows = read_raw(run, "scheduler_transitions")
    finished = rows.filter(rows["finish"] == "forgotten")["key"].to_list()
    assert sorted(finished) == sorted(keys)  # (each key's rows decode to it)
