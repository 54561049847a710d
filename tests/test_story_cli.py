"""``correlate story RUN KEY``: exact keys, unique substrings, ambiguous and unknown keys."""

from __future__ import annotations

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
