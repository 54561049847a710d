"""A folder named like a subcommand is still a folder (`correlate run` where ./run exists),
while the subcommands keep working with their own arguments."""

from __future__ import annotations

import pytest

from correlate import cli


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_existing_folder_named_like_a_command_is_the_folder(in_tmp, name):
    (in_tmp / name).mkdir()
    _parser, args = cli._parse([name])
    assert args.command == "run" and str(args.run_dir) == name


def test_folder_with_run_options(in_tmp):
    (in_tmp / "report").mkdir()
    _parser, args = cli._parse(["report", "--no-reports", "-o", "out"])
    assert args.command == "run" and str(args.run_dir) == "report" and args.no_reports


def test_command_with_its_arguments_stays_the_command(in_tmp):
    (in_tmp / "compare").mkdir()
    (in_tmp / "run").mkdir()
    _parser, args = cli._parse(["compare", "a", "b"])
    assert args.command == "compare" and list(map(str, args.runs)) == ["a", "b"]
    _parser, args = cli._parse(["compare", "a", "b", "--after", "c", "d"])
    assert args.command == "compare" and list(map(str, args.after_runs)) == ["c", "d"]
    _parser, args = cli._parse(["run", "run"])
    assert args.command == "run" and str(args.run_dir) == "run"


def test_without_such_a_folder_the_word_is_the_command(in_tmp, capsys):
    with pytest.raises(SystemExit):
        cli._parse(["story"])  # the story command, missing its arguments
    assert "the following arguments are required" in capsys.readouterr().err


def test_main_correlates_a_folder_named_run(in_tmp, capsys):
    """End to end: an empty folder `run` is read as a folder (and refused as one, naming it)."""
    (in_tmp / "run").mkdir()
    assert cli.main(["run"]) != 0
    err = capsys.readouterr().err
    assert "run" in err and "unrecognised folder" in err and "required" not in err
