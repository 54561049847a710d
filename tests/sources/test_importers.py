"""Importers: Mofka-Dask CSV folders, MiniApp outputs, Dask task-stream tables — on small
hand-made inputs (exact behaviour) and on the real fixture folders."""

from __future__ import annotations

import json
import textwrap

import polars as pl
import pytest

from correlate.cli import main
from correlate.engine import correlate_frames
from correlate.errors import InputError
from correlate.sources import detect, mofka_csv

HOSTILE = "(__import__('os').system('touch {marker}'),)"


def write_mofka(folder, marker):
    hostile = HOSTILE.format(marker=marker)
    (folder / "scheduler_transition.csv").write_text(textwrap.dedent(f'''\
        ,key,thread,worker,prefix,group,start,finish,stimulus_id,called_from,begins,ends,duration,size,time
        0,"('x-1', 0)",,,x,x-1,released,waiting,s1,tcp://s:1,,,,,100.0
        1,"('x-1', 0)",77,tcp://w:1,x,x-1,processing,memory,s2,tcp://s:1,100.5,100.7,0.2,8,101.0
        2,"{hostile}",,,evil,evil,released,waiting,s3,tcp://s:1,,,,,100.0
        3,"('x-2', 0)",,,x,x-2,released,deisa,s4,tcp://s:1,,,,,100.0
        4,"('x-2', 0)",,,x,x-2,deisa,memory,s5,tcp://s:1,,,,,100.9
        5,"('x-1', 0)",,,x,x-1,processing,mem'''))
    (folder / "worker_transition.csv").write_text(textwrap.dedent('''\
        ,key,start,finish,called_from,time
        0,"('x-1', 0)",ready,executing,tcp://w:1,100.2
        1,"('x-1', 0)",executing,memory,tcp://w:1,100.6
        '''))
    (folder / "worker_transfer.csv").write_text(textwrap.dedent('''\
        ,start,stop,middle,duration,keys,total,bandwidth,who,type,called_from,time,compressed
        0,100.1,100.2,100.15,0.1,"{('x-2', 0): 80}",80,800,tcp://v:2,incoming_transfer,tcp://w:1,101,
        1,100.1,100.2,100.15,0.1,"{('x-2', 0): 80}",80,800,tcp://v:2,incoming_transfer,tcp://w:1,102,
        '''))
    (folder / "worker.csv").write_text(",worker,action,stimulus_id,time\n0,tcp://w:1,add,,99\n")
    (folder / "graph.csv").write_text(
        ',client,keys,dependencies,time\n0,C,"{\'x\'}","{(\'x-1\', 0): {(\'x-2\', 0)}, '
        '(\'x-2\', 0): set()}",99.0\n')


def test_mofka_folder_is_read_with_quirks_handled(tmp_path):
    marker = tmp_path / "pwned"
    write_mofka(tmp_path, marker)
    frames = mofka_csv.load(tmp_path)
    # a key that would run code if evaluated is plain text, and nothing ran
    keys = set(frames.transitions["key"])
    assert HOSTILE.format(marker=marker) in keys
    assert not marker.exists()
    # tuple keys are normalised to the one rendering
    assert "('x-1', 0)" in keys
    ex = frames.executions.row(0, named=True)
    assert (ex["key"], ex["thread_id"], ex["window_source"]) == ("('x-1', 0)", 77,
                                                                 "worker-transitions")
    assert (ex["local_start_ns"], ex["local_stop_ns"]) == (100_200_000_000, 100_600_000_000)
    # the re-sent transfer row is dropped and counted; the truncated row is counted
    assert frames.transfers.height == 1
    reasons = dict(frames.rejects.select("reason", "count").iter_rows())
    assert reasons["duplicate row (Mofka plugin re-send bug)"] == 1
    assert any("truncated" in r for r in reasons)
    # unknown states are kept; graph edges parsed safely
    assert "deisa" in set(frames.transitions["finish"])
    assert frames.dependencies.select("key", "depends_on").rows() == [("('x-1', 0)",
                                                                      "('x-2', 0)")]
    # an external task's arrival is waited for
    tasks = correlate_frames(frames).tables["tasks"]
    assert tasks["wait_external_s"][0] == pytest.approx(0.9)


def test_unrecognised_folder_lists_what_was_found(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(InputError, match="found notes.txt; expected one of run-folder"):
        detect.detect(tmp_path)
    assert main([str(tmp_path)]) == 1
    assert "unrecognised folder" in capsys.readouterr().err


@pytest.fixture
def correlated(correlated_fixture):
    """(tasks, summary, output folder) of ``correlate FIXTURE`` (made once per session)."""
    def tables(name: str):
        out = correlated_fixture(name)
        return (pl.read_parquet(out / "tasks.parquet"),
                json.loads((out / "summary.json").read_text()), out)
    return tables


@pytest.mark.fixtures
def test_pmda_r1_matches_workers_by_thread_and_attributes_exactly(correlated):
    tasks, summary, out = correlated("xpdamoda-pmda-r1")
    assert tasks.height == 9 and summary["tasks"] == 9
    helper = tasks.filter(pl.col("key").str.starts_with("_dask_helper-9cc0ab9e")).row(
        0, named=True)
    assert (helper["pid"], helper["thread_id"], helper["read_ops"]) == (32541, 22515807322112,
                                                                      521)
    assert helper["attribution"] == "exact-thread"
    matched = summary["facts"]["matched_workers"]
    # every worker that ran a task is matched by its threads; the two idle ones by elimination
    assert {matched[w] for w in tasks["worker"].unique()} == {"thread-id"}
    assert sorted(matched.values()).count("thread-id") == 6 and len(matched) == 8
    assert any(r["reason"].startswith("duplicate row") for r in summary["rejects"])
    lines = (out / "task_lifecycles.jsonl").read_text().splitlines()
    assert len(lines) == 9


@pytest.mark.fixtures
def test_imageprocessing_r4_without_scheduler_transitions(correlated):
    tasks, summary, out = correlated("xpdamoda-imageprocessing-r4")
    deps = pl.read_parquet(out / "tasks.parquet")
    assert summary["tasks"] == tasks["key"].n_unique() > 3000
    assert any("scheduler_transition.csv missing" in w for w in summary["warnings"])
    dup = [r for r in summary["rejects"] if r["reason"].startswith("duplicate row")]
    assert dup and dup[0]["count"] == 1389
    assert deps.height == tasks.height


@pytest.mark.fixtures
def test_mofkadask_oldest_schema_falls_back_to_begins_ends(correlated):
    tasks, summary, _ = correlated("mofkadask-2024-04-10")
    assert summary["tasks"] == 129
    assert set(tasks["window_source"]) == {"startstops"}
    assert any("no worker transitions" in w for w in summary["warnings"])


@pytest.mark.fixtures
def test_recup_miniapp_task_stream_and_yappi(correlated):
    tasks, summary, _ = correlated("recup-miniapp-20240215")
    assert tasks.height == 8913
    # Dask's key_split drops the leading underscore: `_map_read_frame` tasks, as Yappi counted
    assert tasks.filter(pl.col("prefix") == "map_read_frame").height == 453
    assert any("cannot be split per task" in w for w in summary["warnings"])


@pytest.mark.fixtures
def test_groundtruth_task_stream_folder(correlated):
    tasks, summary, _ = correlated("dask-dxt-v2-groundtruth")
    assert tasks.height == 44 and summary["io"]["attributed"]["bytes"] >= 34_111_488


def test_story_prints_one_task(tmp_path, capsys):
    write_mofka(tmp_path, tmp_path / "m")
    assert main(["story", str(tmp_path), "x-1"]) == 0
    out = capsys.readouterr().out
    assert "('x-1', 0)" in out and "execution" in out
    assert main(["story", str(tmp_path), "('x-"]) == 1  # ambiguous: lists candidates
