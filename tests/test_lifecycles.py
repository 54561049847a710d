"""The per-task lifecycle view (seed 004) on hand-made frames and on real fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import fixture_path

from correlate.schema import TABLES, conform
from correlate.sources.detect import load
from correlate.sources.frames import RunFrames
from correlate.timeline.lifecycles import lifecycles, write_lifecycles


def frames() -> RunFrames:
    tr = pl.DataFrame({
        "key": ["a", "a", "a"], "side": ["scheduler", "worker", "scheduler"],
        "worker": [None, "w1", "w1"], "start": ["released", "ready", "processing"],
        "finish": ["waiting", "executing", "memory"], "stimulus_id": ["s1", None, "s2"],
        "local_time_ns": [30, 10, 20], "source": ["sched:1", None, "sched:1"]})
    ex = pl.DataFrame({"key": ["a", "a"], "worker": ["w1", "w1"], "thread_id": [7, 7],
                       "local_start_ns": [10, 40], "local_stop_ns": [15, 50],
                       "window_source": ["worker-transitions", "worker-transitions"]})
    deps = pl.DataFrame({"key": ["a"], "depends_on": ["b"], "client": ["C"],
                         "local_time_ns": [1]})
    return RunFrames(
        transitions=conform(tr, TABLES["transitions"], extra="keep"),
        executions=conform(ex, TABLES["executions"]),
        dependencies=conform(deps, TABLES["dependencies"]))


def test_one_object_per_key_in_time_order_with_clocks():
    out = {s["key"]: s for s in lifecycles(frames())}
    assert sorted(out) == ["a", "b"]  # b is known from the graph only
    a = out["a"]
    assert a["executions"] == 2 and a["depends_on"] == ["b"] and a["client"] == "C"
    assert [e["time_ns"] for e in a["events"]] == [10, 10, 20, 30, 40]
    assert [e["kind"] for e in a["events"][:2]] == ["execution", "worker-transition"]
    first_sched = next(e for e in a["events"] if e["kind"] == "scheduler-transition")
    assert (first_sched["clock"], first_sched["source"], first_sched["stimulus_id"]) == (
        "scheduler", "sched:1", "s2")
    assert "stimulus_id" not in a["events"][1]  # nulls are left out
    assert out["b"]["events"] == [] and out["b"]["dependents"] == ["a"]


def test_written_jsonl_is_one_line_per_task(tmp_path):
    path = tmp_path / "sub" / "task_lifecycles.jsonl"
    assert write_lifecycles(frames(), path) == 2
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["key"] for x in lines] == ["a", "b"]


def test_empty_frames_give_no_lifecycles():
    assert list(lifecycles(RunFrames())) == []


@pytest.mark.fixtures
def test_pmda_r1_lifecycle_of_a_known_task():
    stories = {s["key"]: s for s in lifecycles(load(fixture_path("xpdamoda-pmda-r1")))}
    assert len(stories) == 9
    helper = next(s for k, s in stories.items() if k.startswith("_dask_helper-9cc0ab9e"))
    kinds = [e["kind"] for e in helper["events"]]
    assert kinds.count("execution") == 1 and "startstop" in kinds
    ex = next(e for e in helper["events"] if e["kind"] == "execution")
    assert (ex["thread_id"], ex["pid"], ex["worker"]) == (22515807322112, 32541,
                                                          "tcp://10.201.1.175:33783")
    done = next(e for e in helper["events"] if e["kind"] == "scheduler-transition"
                and e["finish"] == "memory")
    assert done["begins_ns"] < done["ends_ns"] and done["thread_id"] == 22515807322112
    times = [e["time_ns"] for e in helper["events"]]
    assert times == sorted(times)
    assert helper["dependents"] == ["list-8606d556-c6f4-465b-933b-4f2338e69364"]


@pytest.mark.fixtures
def test_imageprocessing_r4_lifecycles_cover_the_graph():
    stories = list(lifecycles(load(fixture_path("xpdamoda-imageprocessing-r4"))))
    assert len(stories) == 5440
    assert sum(s["executions"] for s in stories) == 4094
    transfers = sum(e["kind"] == "transfer" for s in stories for e in s["events"])
    assert transfers == 2176


def test_chunked_writing_gives_the_same_file(tmp_path):
    from correlate.sources.detect import load as load_run

    run = load_run(Path(__file__).resolve().parents[1] / "samples" / "run-v1")
    whole, chunked = tmp_path / "whole.jsonl", tmp_path / "chunked.jsonl"
    assert write_lifecycles(run, whole) == 64
    assert write_lifecycles(run, chunked, keys_per_chunk=7) == 64
    assert chunked.read_bytes() == whole.read_bytes()
    # in parts by key (a big run's): each part's keys in order, the same lines
    parted = tmp_path / "parted.jsonl"
    assert write_lifecycles(run, parted, keys_per_chunk=5, parts=3) == 64
    lines = parted.read_text().splitlines()
    assert sorted(lines) == sorted(whole.read_text().splitlines()) and lines != sorted(lines)
    stories = [json.loads(x) for x in whole.read_text().splitlines()]
    assert sum(len(s["depends_on"]) for s in stories) == sum(len(s["dependents"])
                                                              for s in stories) > 0


def test_values_that_look_like_json_survive_and_only_null_fields_go():
    hostile = ['{"begins":null,', ',"x":null}', 'a"b\\", "c":null', "<script>\n"]
    tr = pl.DataFrame({"key": ["k"] * 4, "side": ["scheduler"] * 4, "start": ["released"] * 4,
                       "finish": ["waiting"] * 4, "stimulus_id": hostile,
                       "odd column": [None, "v", None, None], "local_time_ns": [1, 2, 3, 4]})
    frames = RunFrames(transitions=conform(tr, TABLES["transitions"], extra="keep"))
    (story,) = list(lifecycles(frames))
    assert [e["stimulus_id"] for e in story["events"]] == hostile
    assert [("odd column" in e) for e in story["events"]] == [False, True, False, False]
    assert all("worker" not in e for e in story["events"])


@pytest.mark.parametrize("rows_per_part", [None, 40], ids=["whole", "in-parts"])
def test_one_task_story_equals_its_object_in_the_whole_view(monkeypatch, rows_per_part):
    """Read whole, or (a big run's) only the part of the transitions that holds the key."""
    from correlate.sources.detect import load as load_run
    from correlate.timeline import lifecycles as module
    from correlate.timeline.lifecycles import all_keys, matching_keys, story

    run = load_run(Path(__file__).resolve().parents[1] / "samples" / "run-v1")
    whole = {s["key"]: s for s in lifecycles(run)}
    assert all_keys(run).to_list() == sorted(whole)
    if rows_per_part:
        monkeypatch.setattr(module, "LIFECYCLE_ROWS_PER_PART", rows_per_part)
        assert module._lifecycle_parts(run) > 3
    for key in list(whole)[::9]:
        assert story(run, key) == whole[key], key
        assert matching_keys(run, key[2:-2]) == sorted(k for k in whole if key[2:-2] in k)


def test_run_writes_lifecycles_up_to_the_limit_and_the_command_writes_them_beyond(
        tmp_path, monkeypatch, capsys):
    from correlate.cli import main
    from correlate.reports import lifecycles as writer

    sample = Path(__file__).resolve().parents[1] / "samples" / "run-v1"
    assert main(["run", str(sample), "-o", str(tmp_path / "small"), "--no-reports"]) == 0
    assert (tmp_path / "small" / "task_lifecycles.jsonl").exists()
    monkeypatch.setattr(writer, "MAX_TASKS", 10)
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "task_lifecycles.jsonl").write_text("from an earlier run\n")
    assert main(["run", str(sample), "-o", str(tmp_path / "big"), "--no-reports"]) == 0
    assert not (tmp_path / "big" / "task_lifecycles.jsonl").exists()
    assert "correlate lifecycles" in capsys.readouterr().err
    out = tmp_path / "big" / "task_lifecycles.jsonl"
    assert main(["lifecycles", str(sample), "-o", str(out)]) == 0
    assert out.read_bytes() == (tmp_path / "small" / "task_lifecycles.jsonl").read_bytes()


def test_events_are_in_run_time_order_so_a_task_is_received_after_it_was_sent(tmp_path):
    """Worker clocks run up to a few ms off the scheduler's (the synthetic run's workers are
    skewed both ways): on their own clocks a worker often receives a task before the
    scheduler sent it. On the run timeline (the offsets ``correlate`` estimates from the task
    messages) every task sent once is received after it was sent and reported after it was
    done, and the story lists it so."""
    from correlate.timeline.lifecycles import with_transitions
    from testing.synthetic import write_run

    write_run(tmp_path / "run", workers=4, threads=2, executions=400, segments=4000, seed=2)
    frames = with_transitions(load(tmp_path / "run", lazy=True))

    def one(events: list[dict], kind: str, start: str | None, finish: str) -> dict | None:
        hits = [e for e in events if e["kind"] == kind and e.get("finish") == finish
                and (start is None or e.get("start") == start)]
        return hits[0] if len(hits) == 1 else None

    checked = raw_out_of_order = 0
    for story in lifecycles(frames):
        ev = story["events"]
        send = one(ev, "scheduler-transition", None, "processing")
        receive = one(ev, "worker-transition", "released", "waiting")
        done = one(ev, "worker-transition", "executing", "memory")
        back = one(ev, "scheduler-transition", "processing", "memory")
        if not (send and receive and done and back):
            continue
        checked += 1
        raw_out_of_order += receive["time_ns"] < send["time_ns"]
        assert send["run_time_ns"] <= receive["run_time_ns"], story["key"]
        assert done["run_time_ns"] <= back["run_time_ns"], story["key"]
        order = [id(e) for e in ev]
        assert (order.index(id(send)) < order.index(id(receive))
                < order.index(id(done)) < order.index(id(back))), story["key"]
        assert [e["run_time_ns"] for e in ev] == sorted(e["run_time_ns"] for e in ev)
    assert checked == 400
    assert raw_out_of_order > 0  # (else the run's clocks are not skewed enough to test this)


def test_startstops_are_put_on_the_run_timeline_by_their_own_clock():
    """Dask reports compute and transfer startstops on the worker's clock plus its
    scheduler_delay, and disk-read/disk-write on the worker's clock alone: each is brought to the
    run timeline accordingly, so that a task's compute startstop and its execution coincide."""
    from correlate.timeline.lifecycles import run_clocks, story

    ms = 1_000_000
    off = 50 * ms  # scheduler clock − worker clock
    delay = 40 * ms  # Dask's own (rougher) estimate of it
    w_start, w_stop = 1000 * ms, 1010 * ms  # the execution, worker clock
    tr = pl.DataFrame({
        "key": ["a"] * 4, "side": ["scheduler", "worker", "worker", "scheduler"],
        "worker": [None, "tcp://w", "tcp://w", "tcp://w"],
        "host": ["s", "w", "w", "s"], "pid": [1, 2, 2, 1],
        "start": ["waiting", "released", "executing", "processing"],
        "finish": ["processing", "waiting", "memory", "memory"],
        # one-way latencies of 1 ms: the message bounds put the offset at 50 ms ± 0
        "local_time_ns": [w_start - 2 * ms + off, w_start - 1 * ms, w_stop, w_stop + ms + off]})
    f = RunFrames(
        processes=conform(pl.DataFrame({"host": ["s", "w"], "pid": [1, 2],
                                        "role": ["scheduler", "worker"],
                                        "worker": [None, "tcp://w"]}), TABLES["processes"]),
        transitions=conform(tr, TABLES["transitions"]),
        executions=conform(pl.DataFrame({
            "key": ["a"], "worker": ["tcp://w"], "host": ["w"], "pid": [2], "thread_id": [7],
            "local_start_ns": [w_start], "local_stop_ns": [w_stop],
            "window_source": ["executor-hook"]}), TABLES["executions"]),
        startstops=conform(pl.DataFrame({
            "key": ["a", "a"], "worker": ["tcp://w"] * 2, "action": ["compute", "disk-read"],
            "reported_start_ns": [w_start + delay, w_start - 5 * ms],
            "reported_stop_ns": [w_stop + delay, w_start - 4 * ms]}), TABLES["startstops"]),
        clock_samples=conform(pl.DataFrame({
            "host": ["w", "w"], "pid": [2, 2], "local_time_ns": [500 * ms, 2000 * ms],
            "scheduler_delay_s": [delay / 1e9, delay / 1e9]}), TABLES["clock_samples"]))
    assert run_clocks(f).row(0, named=True)["offset_ns"] == off
    ev = {(e["kind"], e.get("action")): e for e in story(f, "a")["events"]}
    execution, compute = ev[("execution", None)], ev[("startstop", "compute")]
    disk = ev[("startstop", "disk-read")]
    assert execution["run_time_ns"] == compute["run_time_ns"] == w_start + off
    assert (disk["clock"], disk["run_time_ns"]) == ("worker", w_start - 5 * ms + off)
    assert compute["clock"] == "worker+scheduler_delay"
    assert compute["time_ns"] == w_start + delay  # as Dask reported it
