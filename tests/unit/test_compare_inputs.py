"""``compare`` uses a run folder's ``correlated/`` output only when it was made from that run
folder (``summary.json`` ``input``: run id and a digest of the input files): the recorded
sample run and a small synthetic run, correlated in place or into each other's folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from correlate.cli import main
from testing.synthetic.run import write_run

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "run-v1"


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    r1, r2 = tmp_path / "r1", tmp_path / "r2"
    shutil.copytree(SAMPLE, r1)
    write_run(r2, executions=60, segments=300, seed=3)
    assert main(["run", str(r1), "--no-reports"]) == 0
    return r1, r2


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_an_output_of_another_run_in_a_run_folder_is_refused(two_runs, tmp_path, capsys):
    r1, r2 = two_runs
    ids = [json.loads((r / "manifest.json").read_text())["run_id"] for r in (r1, r2)]
    # r1/correlated holds a previous correlate output: replacing it is allowed ...
    assert main(["run", str(r2), "-o", str(r1 / "correlated"), "--no-reports"]) == 0
    made = json.loads((r1 / "correlated" / "summary.json").read_text())["input"]
    assert made["run_id"] == ids[1] and made["run_dir"] == str(r2.resolve())
    capsys.readouterr()
    # ... but compare does not take it for r1's, whichever way it is named
    for args in ([str(r1), str(r2)], [str(r1 / "correlated"), str(r2)]):
        assert main(["compare", *args, "-o", str(tmp_path / "cmp")]) == 1
        line = _error(capsys)
        assert line.startswith(f"correlate: {r1 / 'correlated'}: made from run {ids[1]} "), line
        assert f"not from {r1} (run {ids[0]})" in line and "correlate" in line, line
    assert not (tmp_path / "cmp" / "compare.md").exists()


def test_its_own_output_is_used_also_in_a_copy_of_the_run_folder(two_runs, tmp_path):
    r1, _ = two_runs
    copy = tmp_path / "elsewhere" / "r1"
    shutil.copytree(r1, copy)  # new paths and modification times: the same run
    assert main(["compare", str(r1), str(copy), "-o", str(tmp_path / "cmp")]) == 0
    assert (tmp_path / "cmp" / "compare.md").is_file()


def test_inputs_changed_since_correlating_are_refused(two_runs, tmp_path, capsys):
    r1, r2 = two_runs
    # a Darshan log arrived after the run was correlated (same run id: the digest tells)
    log = next((r1 / "darshan").rglob("*.darshan"))
    shutil.copy(log, log.with_name("late-" + log.name))
    capsys.readouterr()
    assert main(["compare", str(r1), str(r2), "-o", str(tmp_path / "cmp")]) == 1
    line = _error(capsys)
    files = json.loads((r1 / "correlated" / "summary.json").read_text())["input"]["files"]
    assert f"made from other input files than {r1} holds now ({files} files" in line, line
    assert f"{files + 1} files" in line, line
