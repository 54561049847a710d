"""Mofka-Dask CSV adapter: exact behaviour on hand-made folders, and pinned counts and per-task
values on the real fixtures (skipped when ../shared is absent)."""

from __future__ import annotations

import shutil
import textwrap

import polars as pl
import pytest
from conftest import fixture_path

from correlate.sources import detect, mofka_csv

HOSTILE = "(__import__('os').system('touch {marker}'),)"
SCHED_HEADER = ("key,thread,worker,prefix,group,start,finish,stimulus_id,called_from,begins,"
                "ends,duration,size,time,extra_col")


def _write(folder, name, text):
    (folder / name).write_text(textwrap.dedent(text))


def make_folder(folder, marker, *, worker_transitions=True):
    hostile = HOSTILE.format(marker=marker)
    _write(folder, "scheduler_transition.csv", f'''\
        ,{SCHED_HEADER}
        0,"('x-1', 0)",,,x,x-1,released,waiting,s1,tcp://s:1,,,,,100.0,a
        1,"('x-1', 0)",77,tcp://w:1,x,x-1,processing,memory,s2,tcp://s:1,100.5,100.7,0.2,8,100.61,b
        2,"{hostile}",,,evil,evil,released,waiting,s3,tcp://s:1,,,,,100.0,
        3,"('x-2',0)",,,x,x-2,released,deisa,s4,tcp://s:1,,,,,100.0,
        4,"('x-2',0)",,,x,x-2,deisa,memory,s5,tcp://s:1,,,,,100.9,
        5,twice,,,twice,twice,waiting,processing,s6,tcp://s:1,,,,,100.1,
        6,twice,78,tcp://w:1,twice,twice,processing,memory,s7,tcp://s:1,101.0,101.1,0.1,8,101.21,
        7,"('x-1', 0)",,,x,x-1,processing,mem''')
    if worker_transitions:
        _write(folder, "worker_transition.csv", '''\
            ,key,start,finish,called_from,time
            0,"('x-1', 0)",ready,executing,tcp://w:1,100.2
            1,"('x-1', 0)",executing,memory,tcp://w:1,100.6
            2,twice,ready,executing,tcp://w:1,100.8
            3,twice,executing,released,tcp://w:1,100.9
            4,twice,ready,executing,tcp://w:1,101.0
            5,twice,executing,memory,tcp://w:1,101.2
            ''')
    _write(folder, "worker_transfer.csv", f'''\
        ,start,stop,middle,duration,keys,total,bandwidth,who,type,called_from,time,compressed
        0,100.1,100.2,100.15,0.1,"{{('x-2', 0): 80}}",80,800,tcp://v:2,incoming_transfer,tcp://w:1,101,
        1,100.1,100.2,100.15,0.1,"{{('x-2', 0): 80}}",80,800,tcp://v:2,incoming_transfer,tcp://w:1,102,
        2,100.3,100.4,100.35,0.1,"{{{hostile}: 1}}",1,10,,outgoing_transfer,tcp://w:1,103,1
        ''')
    _write(folder, "worker.csv", ",worker,action,stimulus_id,time\n0,tcp://w:1,add,,99\n")
    (folder / "graph.csv").write_text(
        ',client,keys,dependencies,time\n0,C,"{\'x\'}","{(\'x-1\', 0): {(\'x-2\', 0)}, '
        '(\'x-2\', 0): set(), \'twice\': set()}",99.0\n'
        f'1,C,"{{}}","{{{hostile}: set()}}",99.5\n')


@pytest.fixture
def folder(tmp_path):
    marker = tmp_path / "pwned"
    make_folder(tmp_path, marker)
    return tmp_path, marker


def test_hostile_keys_are_plain_text_and_nothing_runs(folder):
    path, marker = folder
    frames = mofka_csv.load(path)
    assert HOSTILE.format(marker=marker) in set(frames.transitions["key"])
    reasons = dict(frames.rejects.select("reason", "count").iter_rows())
    # the transfer and graph literals holding a call are not literals: rejected, never run
    assert reasons["unparseable keys literal"] == 1
    assert reasons["unparseable dependencies literal"] == 1
    assert not marker.exists()


def test_keys_are_normalised_and_joined_across_files(folder):
    frames = mofka_csv.load(folder[0])
    # "('x-2',0)" (no space) in the scheduler file is the same key as "('x-2', 0)" elsewhere
    assert "('x-2', 0)" in set(frames.transitions["key"])
    assert "('x-2',0)" not in set(frames.transitions["key"])
    assert set(frames.transfer_keys["key"]) == {"('x-2', 0)"}
    assert frames.dependencies.select("key", "depends_on").rows() == [("('x-1', 0)",
                                                                      "('x-2', 0)")]


def test_executions_from_worker_windows_with_threads_and_reruns(folder):
    ex = mofka_csv.load(folder[0]).executions.sort("key", "local_start_ns")
    rows = ex.select("key", "thread_id", "local_start_ns", "local_stop_ns", "status",
                     pl.col("window_source").cast(pl.String)).rows()
    assert rows == [
        ("('x-1', 0)", 77, 100_200_000_000, 100_600_000_000, "ok", "worker-transitions"),
        ("twice", 78, 100_800_000_000, 100_900_000_000, "released", "worker-transitions"),
        ("twice", 78, 101_000_000_000, 101_200_000_000, "ok", "worker-transitions"),
    ]


def test_rejects_duplicates_truncation_and_keeps_unknowns(folder):
    frames = mofka_csv.load(folder[0])
    reasons = dict(frames.rejects.select("reason", "count").iter_rows())
    assert reasons["duplicate row (Mofka plugin re-send bug)"] == 1
    assert any("truncated" in r for r in reasons)
    assert frames.transfers.height == 2  # the incoming one once, the outgoing one
    assert "deisa" in set(frames.transitions["finish"])  # unknown state kept
    sched = frames.transitions.filter(pl.col("side") == "scheduler")
    assert "extra_col" in sched.columns  # unknown CSV column kept
    done = sched.filter(pl.col("finish") == "memory", pl.col("key") == "('x-1', 0)").row(
        0, named=True)
    assert (done["begins_ns"], done["ends_ns"], done["source"], done["nbytes"]) == (
        100_500_000_000, 100_700_000_000, "tcp://s:1", 8)


def test_without_worker_transitions_falls_back_to_begins_ends(tmp_path):
    make_folder(tmp_path, tmp_path / "m", worker_transitions=False)
    (tmp_path / "worker_transition.csv").write_text('""\n')  # pandas' empty frame
    frames = mofka_csv.load(tmp_path)
    ex = frames.executions.sort("key")
    assert set(ex["window_source"].cast(pl.String)) == {"startstops"}
    assert ex.select("key", "local_start_ns").rows() == [("('x-1', 0)", 100_500_000_000),
                                                        ("twice", 101_000_000_000)]
    assert any("no worker transitions" in w for w in frames.warnings)


def test_worker_log_pairs_only_unambiguous_runs(tmp_path):
    (tmp_path / "worker.e").write_text(textwrap.dedent("""\
        x - INFO -       Start worker at:   tcp://h:1
        x - INFO -       Start worker at:   tcp://h:2
        x - INFO -       Local Directory: /tmp/d/worker-a
        x - INFO -       Local Directory: /tmp/d/worker-b
        x - INFO -       Start worker at:   tcp://h:3
        x - INFO -          Listening to:   tcp://h:3
        x - INFO -       Local Directory: /tmp/d/worker-c
        """))
    assert mofka_csv._log_pairs(tmp_path) == {"tcp://h:3": "/tmp/d/worker-c"}


def test_clock_estimate_is_bounded_by_both_message_directions():
    tr = pl.DataFrame({
        "key": ["k"] * 4, "side": ["scheduler", "scheduler", "worker", "worker"],
        "worker": [None, "tcp://w:1", "tcp://w:1", "tcp://w:1"],
        "start": ["waiting", "processing", "released", "executing"],
        "finish": ["processing", "memory", "waiting", "memory"],
        # scheduler sends at 10.000, worker (clock 5 ms behind) receives at 9.997,
        # worker finishes at 10.100, scheduler hears it at 10.106
        "local_time_ns": [10_000_000_000, 10_106_000_000, 9_997_000_000, 10_100_000_000]})
    got = mofka_csv._clock_estimates(tr, {"tcp://w:1": mofka_csv.Match("h", 1, "thread-id")})
    row = got.row(0, named=True)
    assert (row["host"], row["pid"]) == ("h", 1)
    assert row["scheduler_delay_s"] == pytest.approx(0.0045)  # bounds [0.003, 0.006]
    assert row["latency_s"] == pytest.approx(0.003)


def test_detected_and_empty_folder_message(folder, tmp_path_factory):
    assert detect.detect(folder[0]) == "mofka-csv"
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(Exception, match="found nothing; expected one of run-folder"):
        detect.detect(empty)


# ------------------------------------------------------------------ real fixtures

@pytest.mark.fixtures
def test_pmda_r1_counts_and_matches():
    frames = mofka_csv.load(fixture_path("xpdamoda-pmda-r1"))
    assert frames.executions.height == 9
    assert frames.facts["graph_tasks"] == 9
    assert frames.rejects["count"].sum() == 2  # the two re-sent transfer rows
    how = frames.facts["matched_workers"]
    assert len(how) == 8 and not frames.facts["unmatched_workers"]
    assert sorted(how.values()).count("thread-id") == 6
    assert how["tcp://10.201.1.175:40499"] == "worker.e local directory"
    assert how["tcp://10.201.1.175:42845"].startswith("elimination")
    helper = frames.executions.filter(pl.col("key").cast(pl.String).str.starts_with(
        "_dask_helper-9cc0ab9e"))
    assert helper.select("worker", "host", "pid", "thread_id").row(0) == (
        "tcp://10.201.1.175:33783", "x3109c0s37b0n0", 32541, 22515807322112)
    roles = frames.processes.group_by(pl.col("role").cast(pl.String)).len()
    assert dict(roles.iter_rows()) == {"worker": 8, "nanny": 8, "other": 17}
    # message bounds put the worker clocks within a few ms of the scheduler's
    assert frames.clock_samples["scheduler_delay_s"].abs().max() < 0.005


@pytest.mark.fixtures
def test_imageprocessing_r4_without_scheduler_transitions():
    frames = mofka_csv.load(fixture_path("xpdamoda-imageprocessing-r4"))
    assert frames.facts["graph_entries"] == 8913  # over 3 update_graph calls
    assert frames.facts["graph_tasks"] == 5440  # distinct keys
    assert frames.executions.height == 4094
    assert frames.executions["thread_id"].null_count() == 4094
    dup = frames.rejects.filter(pl.col("reason").str.starts_with("duplicate row"))
    assert dup["count"].to_list() == [1389]
    how = frames.facts["matched_workers"]
    assert sum(v == "worker.e local directory" for v in how.values()) == 6
    # the other two executing workers share a host with two free worker processes: the
    # one-to-one assignment over their task windows pairs them
    assert how["tcp://10.201.3.17:42345"].startswith("time-overlap")
    assert how["tcp://10.201.3.17:45521"].startswith("time-overlap")
    w = frames.processes.filter(pl.col("worker") == "tcp://10.201.3.17:33095").row(0, named=True)
    assert (w["host"], w["pid"]) == ("x3107c0s7b0n0", 28061)
    assert any("scheduler_transition.csv missing" in m for m in frames.warnings)


@pytest.mark.fixtures
def test_mofkadask_oldest_schema():
    frames = mofka_csv.load(fixture_path("mofkadask-2024-04-10"))
    sched = frames.transitions.filter(pl.col("side") == "scheduler")
    assert sched.height == 515
    assert frames.facts["graph_tasks"] == 129
    assert frames.executions.height == 129
    assert set(frames.executions["window_source"].cast(pl.String)) == {"startstops"}
    assert frames.facts["matched_workers"] == {
        "tcp://10.201.1.190:39643": "unmatched (no Darshan logs)"}


@pytest.mark.fixtures
@pytest.mark.parametrize("cut", [0.3, 0.61, 0.97])
def test_truncated_csvs_load_without_traceback(tmp_path, cut):
    src = fixture_path("xpdamoda-pmda-r1")
    for name in mofka_csv.FILES:
        if (src / name).is_file():
            data = (src / name).read_bytes()
            (tmp_path / name).write_bytes(data[:int(len(data) * cut)])
    shutil.copy(src / "worker.e", tmp_path / "worker.e")
    frames = mofka_csv.load(tmp_path)
    assert frames.source_format == "mofka-csv"
    assert frames.executions.height <= 9
