"""``correlate --cluster``: the per-process partitions run as tasks on a Dask LocalCluster and
the outputs are identical, row for row, to the single-process run."""

from __future__ import annotations

import json
from pathlib import Path

import dask
import polars as pl
import pytest

from correlate.cli import main
from correlate.engine import OUTPUT_TABLES
from testing.synthetic import without_thread_ids, write_run

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("threads", ["exact", "threadless"])
def test_cluster_mode_gives_the_same_tables_row_for_row(tmp_path: Path, threads: str) -> None:
    run = tmp_path / "run"
    exp = write_run(run, workers=3, threads=2, executions=600, segments=6000, seed=3)
    if threads == "threadless":  # every segment split over the windows it overlaps
        run = without_thread_ids(run, tmp_path / "run-v1")
    single, clustered = tmp_path / "single", tmp_path / "cluster"
    assert main([str(run), "-o", str(single), "--no-reports"]) == 0
    assert main([str(run), "-o", str(clustered), "--no-reports", "--cluster", "local:2"]) == 0
    for name in OUTPUT_TABLES:
        a = pl.read_parquet(single / f"{name}.parquet")
        b = pl.read_parquet(clustered / f"{name}.parquet")
        # (the synthetic job runs no coroutine, and may have no finding above the threshold)
        assert a.height > 0 or name in ("slices", "findings"), name
        assert a.equals(b), name
    assert (json.loads((single / "summary.json").read_text())
            == json.loads((clustered / "summary.json").read_text()))
    tasks = pl.read_parquet(single / "tasks.parquet")
    assert tasks.height == exp.executions
    methods = json.loads((single / "summary.json").read_text())["io"]["segments_by_method"]
    if threads == "exact":
        assert tasks["read_bytes"].sum() + tasks["write_bytes"].sum() == exp.attributed["bytes"]
    else:
        given_to_none = methods.get("none", 0) + methods.get("spill", 0)
        assert methods["window-split"] == exp.segments - given_to_none > 0


def test_unreachable_cluster_is_one_clear_line(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    write_run(run, workers=1, threads=1, executions=4, segments=8)
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        assert main([str(run), "--no-reports", "--cluster", "tcp://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert "cannot reach the Dask cluster at tcp://127.0.0.1:9" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("threads", ["exact", "threadless"])
def test_partitions_without_thread_ids_are_attributed_one_at_a_time(tmp_path: Path,
                                                                    threads: str) -> None:
    """Window-split partitions (several shares per segment) take a few times the memory of
    exact-thread ones: this process computes one of them at a time."""
    from correlate.attribution.driver import Partition
    from correlate.engine import correlate_frames
    from correlate.frames.mappers import local_map
    from correlate.sources import detect

    run = tmp_path / "run"
    write_run(run, workers=2, threads=2, executions=40, segments=200, seed=1)
    if threads == "threadless":
        run = without_thread_ids(run, tmp_path / "run-v1")
    asked = []

    def recording(fn, items, at_once=2):  # type: ignore[no-untyped-def]
        if items and isinstance(items[0], Partition):
            asked.append(at_once)
        return local_map(fn, items, at_once)

    correlate_frames(detect.load(run, lazy=True), mapper=recording)
    assert asked == [1 if threads == "threadless" else 2]


def test_the_workers_write_the_segments_and_this_process_receives_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With --cluster each partition's attributed segments are written by the worker that
    computed them into the output folder (a file per partition, in (host, pid) order): what
    comes back is where it wrote them, and the table is the single process's, row for row."""
    from correlate.attribution import driver
    from correlate.engine import correlate_to
    from correlate.frames.cluster import mapper_for
    from correlate.sinks import Written
    from correlate.sources import detect

    run = tmp_path / "run"
    write_run(run, workers=3, threads=2, executions=300, segments=3000, seed=4)
    monkeypatch.setattr(driver, "PARTITION_ROWS", 1500)  # (a partition per process)
    single = tmp_path / "single"
    correlate_to(detect.load(run, lazy=True), single)
    got: list[object] = []

    def recording(mapper):  # type: ignore[no-untyped-def]
        def mapped(fn, items, at_once=2):  # type: ignore[no-untyped-def]
            for result in mapper(fn, items, at_once):
                if isinstance(result, dict) and "segments" in result:
                    got.append(result["segments"])
                yield result
        return mapped

    clustered = tmp_path / "cluster"
    with mapper_for("local:2") as mapper:
        correlate_to(detect.load(run, lazy=True), clustered, mapper=recording(mapper))
    assert len(got) >= 3 and all(isinstance(w, Written) for w in got)
    parts = sorted((clustered / "segments.parquet").iterdir())
    assert [p.name for p in parts] == [f"part-{i:05d}.parquet" for i in range(len(got))]
    assert [pl.read_parquet(p).height for p in parts] == [w.height for w in got]
    pids = [pl.read_parquet(p)["pid"] for p in parts]  # (whole processes, in order)
    assert all(a.max() < b.min() for a, b in zip(pids, pids[1:], strict=False))
    assert len(list((single / "segments.parquet").iterdir())) == len(parts)  # (here too)
    for name in OUTPUT_TABLES:
        assert pl.read_parquet(single / f"{name}.parquet").equals(
            pl.read_parquet(clustered / f"{name}.parquet")), name


def test_workers_in_another_folder_read_and_write_by_the_paths_they_are_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`correlate run -o out --cluster ADDRESS` given relative paths, on a cluster whose
    workers run in another folder (as on other nodes): they read the Darshan logs and write
    the segments where this process means, and the tables are the single process's."""
    import os

    from distributed import Client, LocalCluster

    from correlate.attribution import driver
    from correlate.sources import run_folder

    write_run(tmp_path / "run", workers=3, threads=2, executions=300, segments=3000, seed=4)
    monkeypatch.setattr(driver, "PARTITION_ROWS", 1500)  # (more than one: run on the workers)
    monkeypatch.setattr(run_folder, "KEEP_SEGMENTS", 0)  # (read from the logs by the workers)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    assert main(["run", "-o", "single", "--no-reports"]) == 0
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, scheduler_kwargs={"dashboard_address": ":0"}
                      ) as cluster, Client(cluster) as client:
        client.run(os.chdir, str(tmp_path / "elsewhere"))
        assert main(["run", "-o", "clustered", "--no-reports", "--cluster",
                     cluster.scheduler_address]) == 0
    assert list((tmp_path / "elsewhere").iterdir()) == []
    for name in OUTPUT_TABLES:
        assert pl.read_parquet(tmp_path / "single" / f"{name}.parquet").equals(
            pl.read_parquet(tmp_path / "clustered" / f"{name}.parquet")), name
