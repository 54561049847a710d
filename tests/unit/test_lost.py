"""correlate/timeline/lost.py on literal frames: which executions of a dead worker are lost work, and
which rows come from the scheduler's startstops."""

from __future__ import annotations

import polars as pl

from correlate.timeline import lost

DEAD, ALIVE = "tcp://a:1", "tcp://b:2"
PROCESSES = pl.DataFrame({"role": ["worker", "worker"], "worker": [DEAD, ALIVE],
                          "host": ["a", "b"], "pid": [1, 2], "closed_cleanly": [False, True]})


def tasks(rows):
    return pl.DataFrame(rows, schema={"execution_id": pl.Int64, "key": pl.String,
                                      "prefix": pl.String, "group": pl.String,
                                      "worker": pl.String,
                                      "start_ns": pl.Int64, "stop_ns": pl.Int64,
                                      "duration_s": pl.Float64, "cpu_s": pl.Float64,
                                      "status": pl.String, "window_source": pl.String},
                        orient="row")


def computes(rows):
    return pl.DataFrame(rows, schema={"key": pl.String, "worker": pl.String,
                                      "reported_start_ns": pl.Int64,
                                      "reported_stop_ns": pl.Int64},
                        orient="row").with_columns(action=pl.lit("compute"))


def cleanup(keys):
    return pl.DataFrame({"side": "scheduler", "start": "memory", "finish": "released",
                         "stimulus_id": "handle-worker-cleanup-1.0", "key": keys})


def test_unwritten_executions_come_from_startstops_and_only_released_keys_are_lost():
    t = tasks([(0, "x-1", "x", "x", DEAD, 10, 20, 1e-8, 0.5, "ok", "executor-hook"),
               (1, "x-1", "x", "x", ALIVE, 100, 130, 3e-8, 0.5, "ok", "executor-hook"),
               (2, "w-1", "w", "w", ALIVE, 140, 180, 4e-8, 0.1, "ok", "executor-hook"),
               # ran on the dead worker, then again for another reason than the death
               (3, "z-1", "z", "z", DEAD, 5, 6, 1e-9, 0.1, "ok", "executor-hook"),
               (4, "z-1", "z", "z", ALIVE, 300, 301, 1e-9, 0.1, "ok", "executor-hook")])
    ss = computes([("x-1", DEAD, 10, 20), ("x-1", ALIVE, 100, 130),
                   ("w-1", DEAD, 30, 70),  # the dead worker never wrote it: recomputed
                   ("w-1", ALIVE, 140, 180), ("v-1", DEAD, 40, 50),  # never written, kept
                   ("z-1", DEAD, 5, 6)])
    out = lost.with_lost(t, ss, PROCESSES, cleanup(["x-1", "w-1"])["key"])
    added = out.filter(pl.col("window_source") == lost.FROM_SCHEDULER).sort("start_ns")
    assert added.select("key", "worker", "host", "pid", "start_ns", "stop_ns", "status",
                        "execution_id", "cpu_s", "prefix").rows() == [
        ("w-1", DEAD, "a", 1, 30, 70, "lost", 5, None, "w"),
        ("v-1", DEAD, "a", 1, 40, 50, "ok", 6, None, "v")]
    assert dict(out.select("execution_id", "status").rows()) == {
        0: "lost", 1: "ok", 2: "ok", 3: "ok", 4: "ok", 5: "lost", 6: "ok"}
    s = lost.summary(out, PROCESSES, {DEAD: 75, ALIVE: 999})
    assert s == {"workers_died": [DEAD], "died_ns": {DEAD: 75}, "executions": 2,
                 "from_scheduler_records": 1, "tasks_recomputed": 2,
                 "compute_s": round(1e-8 + 4e-8, 6), "by_prefix": {"w": 1, "x": 1}}
    # the span lost: the critical path's links that recompute a lost result (x-1's and w-1's
    # later runs), not the other links, not the lost runs themselves
    path = pl.DataFrame({"execution_id": [0, 1, 2, 4], "duration_s": [1.0, 3.0, 4.0, 0.5]})
    assert lost.span_lost(out, path) == 7.0
    assert lost.span_lost(out, path.filter(pl.col("execution_id") == 4)) == 0.0
    assert lost.span_lost(out, path.clear()) is None
    # a death the scheduler did not record is said so, not guessed
    assert lost.summary(out, PROCESSES)["died_ns"] == {DEAD: None}


def test_the_startstops_read_after_the_load_are_all_but_closed_workers_computes():
    ss = pl.concat([computes([("x-1", DEAD, 10, 20), ("x-1", ALIVE, 100, 130),
                              ("v-1", DEAD, 40, 50), ("w-1", ALIVE, 140, 180)]),
                    computes([("x-1", ALIVE, 90, 99), ("y-1", None, 1, 2)]).with_columns(
                        action=pl.Series(["transfer", None]))])
    read = lost.startstops_read(ss, PROCESSES)
    assert sorted(read.select("key", "worker", "action").rows(), key=str) == sorted([
        ("x-1", DEAD, "compute"), ("v-1", DEAD, "compute"), ("x-1", ALIVE, "transfer"),
        ("y-1", None, None)], key=str)
    t = tasks([(0, "x-1", "x", "x", DEAD, 10, 20, 1e-8, 0.5, "ok", "executor-hook"),
               (1, "x-1", "x", "x", ALIVE, 100, 130, 3e-8, 0.5, "ok", "executor-hook")])
    released = cleanup(["x-1"])["key"]
    assert lost.with_lost(t, read, PROCESSES, released).equals(
        lost.with_lost(t, ss, PROCESSES, released))
    # every worker closed: no compute startstop is read, and the frame is not copied
    alive = PROCESSES.with_columns(closed_cleanly=pl.lit(True))
    assert lost.startstops_read(ss, alive).get_column("action").to_list() == ["transfer", None]
    transfers = ss.filter(pl.col("action") == "transfer")
    assert lost.startstops_read(transfers, alive) is transfers


def test_no_worker_died_leaves_the_tasks_as_they_are():
    t = tasks([(0, "x-1", "x", "x", ALIVE, 10, 20, 1e-8, 0.5, "ok", "executor-hook")])
    alive = PROCESSES.with_columns(closed_cleanly=pl.lit(True))
    out = lost.with_lost(t, computes([("x-1", ALIVE, 10, 20)]), alive, cleanup(["x-1"])["key"])
    assert out.equals(t) and lost.summary(out, alive)["executions"] == 0
    assert lost.sentences(lost.summary(out, alive)) == []
