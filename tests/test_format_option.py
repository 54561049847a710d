"""``correlate --format F FOLDER`` on a folder in another format: one line that names the
format the folder is in, never an internal error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from correlate.cli import main

SAMPLE = Path(__file__).parent.parent / "samples" / "run-v1"


@pytest.mark.parametrize("fmt,needs", [("miniapp", "task_stream.yaml"),
                                       ("mofka-csv", "scheduler_transition.csv"),
                                       ("task-stream", "task_stream.parquet")])
def test_a_run_folder_given_as_another_format(tmp_path, capsys, fmt, needs):
    assert main([str(SAMPLE), "--format", fmt, "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    [line] = err.splitlines()
    assert line.startswith(f"correlate: {SAMPLE}: --format {fmt} needs {needs}"), err
    assert line.endswith("not found here; the folder is in format run-folder: drop --format "
                         "or give --format run-folder"), err
    assert not (tmp_path / "out").exists()


def test_the_command_line_says_it_in_one_line_without_internal_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "correlate.cli", "--format", "miniapp",
                           str(SAMPLE), "-o", str(tmp_path / "o")], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode != 0 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "internal error" not in proc.stderr and "--format run-folder" in proc.stderr


def test_a_folder_in_no_format_says_what_to_do(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    assert main([str(tmp_path), "--format", "miniapp"]) == 1
    assert "drop --format to be told what the folder lacks" in capsys.readouterr().err


def test_the_right_format_still_reads(tmp_path):
    assert main([str(SAMPLE), "--format", "run-folder", "-o", str(tmp_path / "out"),
                 "--no-reports"]) == 0
    assert (tmp_path / "out" / "summary.json").is_file()
