"""``correlate RUN --memory-limit``: a run that needs more than the limit is refused before the
heavy stages with one line giving the figure it needs; under a generous limit it completes.
Progress: nothing of it on a stderr that is not a terminal."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from correlate.cli import main
from correlate.commands import memory
from correlate.sources import detect
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
    needed = memory.need(detect.load(run, lazy=True))
    assert float(m.group(1)) == round(needed.alone / 1e9, 1)
    assert "--cluster local:2" in err or "--memory-limit none" in err
    assert not (out / "tasks.parquet").exists()  # refused before any table was written


def test_a_generous_limit_completes(run: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main([str(run), "-o", str(out), "--no-reports", "--memory-limit", "64GB"]) == 0
    assert (out / "tasks.parquet").exists()
    err = capsys.readouterr().err
    # stderr is not a terminal here: no progress bar, no stage names
    for shown in ("━", "attribution partitions", "rows/s", "load run folder"):
        assert shown not in err


def test_the_need_grows_with_the_rows_and_leaves_the_segments_to_a_cluster(
        run: Path, tmp_path: Path) -> None:
    small = memory.need(detect.load(run, lazy=True))
    bigger = tmp_path / "bigger"
    write_run(bigger, workers=2, threads=2, executions=800, segments=16_000, seed=5)
    big = memory.need(detect.load(bigger, lazy=True))
    assert big.alone > small.alone
    assert big.alone - big.with_cluster > small.alone - small.with_cluster > 0
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
