"""``correlate story RUN KEY``: exact keys, unique substrings, ambiguous and unknown keys."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import fixture_path
from sources.test_mofka_csv import make_folder

from correlate.cli import main


@pytest.fixture
def run(tmp_path):
    make_folder(tmp_path, tmp_path / "m")
    return tmp_path


def test_exact_key(run, capsys):
    assert main(["story", str(run), "('x-1', 0)"]) == 0
    out = capsys.readouterr().out
    assert "('x-1', 0)" in out and "execution" in out and "scheduler-transition" in out


def test_unique_substring_and_graph_only_key(run, capsys):
    assert main(["story", str(run), "twic"]) == 0
    assert "2 execution(s)" in capsys.readouterr().out
    assert main(["story", str(run), "x-2"]) == 0


def test_ambiguous_lists_candidates_and_unknown_fails(run, capsys):
    assert main(["story", str(run), "('x-"]) == 1
    err = capsys.readouterr().err
    assert "2 task keys contain" in err and "('x-1', 0)" in err and "('x-2', 0)" in err
    assert main(["story", str(run), "nope"]) == 1
    assert "no task key contains 'nope'" in capsys.readouterr().err


def test_format_option_and_missing_folder(run, tmp_path, capsys):
    assert main(["story", "--format", "mofka-csv", str(run), "twice"]) == 0
    assert main(["story", str(tmp_path / "absent"), "k"]) == 1
    assert "no such file" in capsys.readouterr().err


@pytest.mark.fixtures
def test_story_on_a_real_run(capsys):
    assert main(["story", str(fixture_path("xpdamoda-pmda-r1")), "9cc0ab9e"]) == 0
    out = capsys.readouterr().out
    assert "_dask_helper-9cc0ab9e" in out and "pid=32541" in out


SAMPLE = Path(__file__).parent.parent / "samples" / "run-v1"


@pytest.fixture(scope="module")
def correlated(tmp_path_factory):
    """The sample run correlated twice: into RUN/correlated and into a folder elsewhere."""
    tmp = tmp_path_factory.mktemp("story-out")
    run = tmp / "run"
    shutil.copytree(SAMPLE, run)
    assert main([str(run), "--no-reports"]) == 0
    assert main([str(run), "-o", str(tmp / "elsewhere"), "--no-reports"]) == 0
    return run


def _story(capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(["story", *args]) == 0
    return capsys.readouterr().out


def test_the_output_folder_inside_the_run_folder_tells_the_same_story(correlated, capsys):
    key = "write_image-2"
    from_run = _story(capsys, str(correlated), key)
    assert "execution" in from_run
    assert _story(capsys, str(correlated / "correlated"), key) == from_run


def test_an_output_folder_elsewhere_tells_it_from_its_lifecycles(correlated, capsys):
    key = "write_image-2"
    assert _story(capsys, str(correlated.parent / "elsewhere"), key) == _story(
        capsys, str(correlated), key)


def test_an_output_folder_without_lifecycles_says_which_folder_to_give(correlated, capsys):
    out = correlated.parent / "elsewhere"
    (out / "task_lifecycles.jsonl").unlink()
    capsys.readouterr()
    assert main(["story", str(out), "write_image-2"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "give the run folder it was made from" in err
