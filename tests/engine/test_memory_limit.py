"""``correlate RUN --memory-limit``: a run that needs more than the limit is refused before its
run folder is loaded (from row counts read without decoding) with one line giving the figure
it needs; under a generous limit it completes. Progress: nothing of it on a stderr that is not
a terminal."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from correlate.cli import main
from correlate.commands import memory
from correlate.sources import detect, row_counts
from testing.synthetic import write_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("memory") / "run"
    write_run(folder, workers=2, threads=2, executions=400, segments=4000, seed=5)
    return folder


def test_a_tiny_limit_refuses_at_once_with_the_figure_needed(run: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    out = tmp_path / "out"
    assert main([str(run), "-o", str(out), "--no-reports", "--memory-limit", "10MB"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    m = re.search(r"needs about ([\d.]+) GB of memory \(400 executions, ([\d,]+) "
                  r"transitions.* more than the 0\.0 GB", err)
    assert m, err
    needed = memory.need_before_load(row_counts.count(run))
    assert float(m.group(1)) == round(needed.alone / 1e9, 1)
    assert "--memory-limit none" in err
    cluster = re.search(r"with --cluster this process needs about ([\d.]+) GB", err)
    assert cluster and float(cluster.group(1)) == round(needed.with_cluster / 1e9, 1), err
    assert not (out / "tasks.parquet").exists()  # refused before any table was written


def test_the_refusal_comes_before_the_load_decodes_anything(
        run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The streams' decoder and the loader itself fail if called: the refusal is made of the
    counts alone. With a limit just above the need, the same run is loaded (the spy is hit)."""
    from correlate.sources import run_folder, run_streams

    def decoded(*_args: object, **_kw: object) -> None:
        raise AssertionError("decoded before the check")

    for name in ("read_many", "decode"):
        monkeypatch.setattr(run_streams, name, decoded)
    monkeypatch.setattr(run_folder, "load", decoded)
    needed = memory.need_before_load(row_counts.count(run)).alone
    args = [str(run), "-o", str(tmp_path / "out"), "--no-reports", "--memory-limit"]
    assert main([*args, str(needed - 1)]) == 1
    assert "needs about" in capsys.readouterr().err
    assert main([*args, str(needed)]) == 3  # (the spy's AssertionError: an internal error)
    assert "decoded before the check" in capsys.readouterr().err


def test_a_cluster_is_not_started_for_a_run_its_tables_already_refuse(
        run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """With --cluster, the tables' counts are checked before the cluster starts (the Darshan
    logs are read on it): a limit below what the tables alone need is refused with "at least"
    and no DXT segment count (they were not counted), and no cluster is asked for."""
    from correlate.frames import cluster

    def started(*_args: object) -> None:
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(cluster, "mapper_for", started)
    tables = memory.need_before_load(row_counts.count_tables(run))
    assert tables.without_darshan and "DXT segments" not in tables.rows
    assert main([str(run), "-o", str(tmp_path / "out"), "--no-reports", "--cluster", "local:2",
                 "--memory-limit", str(tables.alone - 1)]) == 1
    err = capsys.readouterr().err
    assert "at least: its Darshan logs not read yet" in err and "DXT segments" not in err
    assert "a cluster was started" not in err


@pytest.mark.parametrize("command", ["story", "lifecycles"])
def test_story_and_lifecycles_refuse_a_run_whose_load_needs_more(
        run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], command: str) -> None:
    """They load the whole run folder too: refused before the load (the loader fails if
    called) with the load's figure, which names no --cluster (they have none)."""
    from correlate.sources import detect as detect_module

    def loaded(*_args: object, **_kw: object) -> None:
        raise AssertionError("loaded before the check")

    monkeypatch.setattr(detect_module, "load", loaded)
    args = [command, str(run), *(["burn"] if command == "story" else
                                 ["-o", str(tmp_path / "l.jsonl")]), "--memory-limit"]
    load = memory.need_to_load(row_counts.count_tables(run)).alone
    assert main([*args, str(load - 1)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"needs about {load / 1e9:.1f} GB" in err, err
    assert "--cluster" not in err and "loaded before the check" not in err
    assert main([*args, str(load)]) == 3  # (past the check: the spy's internal error)
    assert "loaded before the check" in capsys.readouterr().err


def test_the_load_is_part_of_the_need(run: Path) -> None:
    """A run whose streams are large against its rows needs at least what its load holds."""
    counts = row_counts.count(run)
    small = memory.need_before_load(counts)
    counts.stream_bytes *= 1000
    big = memory.need_before_load(counts)
    assert big.alone > small.alone and big.with_cluster > small.with_cluster
    assert big.alone >= min(factor for _fixed, factor in memory.LOAD_LINES) * counts.stream_bytes


def test_a_generous_limit_completes(run: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main([str(run), "-o", str(out), "--no-reports", "--memory-limit", "64GB"]) == 0
    assert (out / "tasks.parquet").exists()
    err = capsys.readouterr().err
    # stderr is not a terminal here: no progress bar, no stage names
    for shown in ("━", "attribution partitions", "rows/s", "load run folder"):
        assert shown not in err


def test_the_need_grows_with_the_rows_and_a_cluster_lowers_it_by_the_partitions(
        run: Path, tmp_path: Path) -> None:
    """Before the load and after it (an imported format's check) the need is told the same
    way; with --cluster the partitions run on the workers, which write their segments: this
    process holds one partition's at most (a run of one partition runs here)."""
    small = memory.need_before_load(row_counts.count(run))
    loaded = memory.need(detect.load(run, lazy=True))
    assert small.rows == loaded.rows
    assert small.alone == pytest.approx(loaded.alone, rel=0.01)  # (bytes of a row: measured)
    bigger = tmp_path / "bigger"
    write_run(bigger, workers=6, threads=2, executions=800, segments=16_000, seed=5)
    big = memory.need_before_load(row_counts.count(bigger))
    assert big.alone > small.alone
    assert small.with_cluster < small.alone and big.with_cluster < big.alone
    # (the largest process's segments held, not the three largest)
    per_process = [n for n in row_counts.count(bigger).segments.values()]
    assert big.alone - big.with_cluster == pytest.approx(
        memory.MARGIN * memory.SEGMENT_BYTES * sum(sorted(per_process)[-3:-1]), abs=2)
    assert big.rows["DXT segments"] == 16_000


@pytest.mark.parametrize(("text", "size"), [("4GB", 4 * 10**9), ("500 MB", 500 * 10**6),
                                            ("2GiB", 2 * 2**30), ("none", None)])
def test_sizes(text: str, size: int | None) -> None:
    assert memory.parse_size(text) == size


def test_a_size_that_is_not_one_is_one_clear_line(run: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(run), "--no-reports", "--memory-limit", "lots"]) == 1
    assert "--memory-limit lots: not a size" in capsys.readouterr().err


def test_large_lazy_tables_spilled_to_a_file_give_the_same_outputs(
        run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A format-3 run's transitions and profile rows above ``SPILL_ROWS`` are read from a file
    of their own once decoded, not held in memory: the outputs are the same row for row."""
    from correlate.sources import run_folder
    from testing.same_outputs import differences

    kept, spilled = tmp_path / "kept", tmp_path / "spilled"
    assert main([str(run), "-o", str(kept), "--no-reports", "--memory-limit", "none"]) == 0
    monkeypatch.setattr(run_folder, "SPILL_ROWS", 100)
    transitions = detect.load(run, lazy=True).transitions
    assert isinstance(transitions, pl.LazyFrame)
    assert "correlate-spill-" in transitions.explain()  # read from the spilled file
    assert main([str(run), "-o", str(spilled), "--no-reports", "--memory-limit", "none"]) == 0
    assert differences(kept, spilled) == []
