"""What a user sees on a first run: results on stdout, diagnostics on stderr, tables and stories
that stay readable on 80 columns (a file, a CI log), and errors that say what to do."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from correlate.cli import main
from testing.darshan_counts import counter_bytes
from testing.raw_parts import read_raw
from testing.synthetic import write_run

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "run-v1"


@pytest.fixture(scope="module")
def posix() -> pl.DataFrame:
    """The sample's POSIX counters as libdarshan-util reads them (not our decoder)."""
    return counter_bytes(SAMPLE / "darshan", "POSIX")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``correlate ARGS`` as from a shell whose output goes to a file (80 columns)."""
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "correlate.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("sample") / "out"
    return _cli(str(SAMPLE), "-o", str(out), "--no-reports"), out


def test_the_summary_is_on_stdout_and_nothing_else_on_stderr(sample_run):
    proc, out = sample_run
    assert proc.returncode == 0, proc.stderr
    executions = read_raw(SAMPLE, "task_executions")  # what the workers recorded
    assert f"{executions.height} executions of {executions['key'].n_unique()} tasks" in (
        proc.stdout)
    assert "Heaviest task prefixes" in proc.stdout and "Busiest files" in proc.stdout
    assert f"tables written to {out}" in proc.stdout
    assert proc.stderr == ""


def test_tables_on_80_columns_never_break_a_name(sample_run):
    proc, out = sample_run
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines if "│" in line) <= 80
    rows = [line.split("│")[0].strip() for line in lines if "│" in line]
    assert all(rows), "a row with an empty name column is a name folded onto a second line"
    prefixes = set(pl.read_parquet(out / "tasks.parquet")["prefix"].to_list())
    paths = set(pl.read_parquet(out / "task_files.parquet")["path"].drop_nulls().to_list())
    for name in rows:
        whole = name in prefixes | paths
        cut = name.endswith("…") and any(p.startswith(name[:-1]) for p in prefixes)
        middle = "…" in name and any(p.startswith(name.split("…")[0])
                                     and p.endswith(name.split("…")[1]) for p in paths)
        assert whole or cut or middle, name
    assert "concatenate-from-value-ge…" in proc.stdout  # 30 characters, cut whole


def test_story_is_one_line_per_event_with_readable_numbers(capsys):
    assert main(["story", str(SAMPLE), "write_image-0"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "write_image-0" and lines[2].split() == ["t+", "s", "what", "clock",
                                                                 "details"]
    events = lines[3:]
    assert len(events) == 13
    assert all(re.match(r"\s*\d+\.\d{4}  \S", e) for e in events), events
    raw = read_raw(SAMPLE, "task_executions").filter(pl.col("key") == "write_image-0")
    assert f"cpu_s={raw['thread_cpu_ns'].item() / 1e9:.4g}," in out  # 4 significant digits


def test_an_unrecognised_folder_lists_names_not_a_python_list(tmp_path):
    (tmp_path / "manifest.json").write_text('{"exit_code": 1}')
    proc = _cli(str(tmp_path))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip() == (f"correlate: {tmp_path}: no Dask scheduler or worker "
                                   "recorded into it (manifest.json but no procs/: the job "
                                   "started none, or they could not write there); the job "
                                   "exited with code 1")
    (tmp_path / "manifest.json").rename(tmp_path / "notes.txt")
    (tmp_path / "more.txt").write_text("")
    proc = _cli(str(tmp_path))
    assert "found more.txt, notes.txt; expected" in proc.stderr and "[" not in proc.stderr


def test_a_folder_of_darshan_logs_suggests_correlate_darshan(tmp_path, capsys):
    for name in ("a.darshan", "b.darshan"):
        (tmp_path / name).write_bytes(b"x")
    assert main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "holds only Darshan logs (2 .darshan file(s))" in err
    assert f"correlate darshan {tmp_path} -o out.parquet" in err


def test_report_help_shows_no_default_and_a_run_folder_is_accepted(tmp_path, capsys, posix):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert "default" not in capsys.readouterr().out.split("positional arguments:")[1].split(
        "options:")[0]
    run = tmp_path / "run"
    run.mkdir()
    assert main([str(SAMPLE), "-o", str(run / "correlated"), "--no-reports"]) == 0
    capsys.readouterr()
    assert main(["report", str(run), "--kinds", "markdown"]) == 0
    assert f"wrote {run / 'correlated' / 'report.md'}" in capsys.readouterr().out
    md = (run / "correlated" / "report.md").read_text()
    assert "## Heaviest task prefixes (all 4, by wall time)" in md  # not "top 10 ... of 4"
    files = posix.filter(pl.col("reads") + pl.col("writes") > 0)["path"].n_unique()
    assert f"## Busiest files (top 10 of {files} by bytes)" in md


def test_summary_json_counts_bytes_and_ops_as_integers(sample_run, posix):
    summary = json.loads((sample_run[1] / "summary.json").read_text())
    io = summary["io"]
    # the run's every call is in DXT, so the totals are Darshan's own counters' (STDIO: none)
    assert counter_bytes(SAMPLE / "darshan", "STDIO").is_empty()
    total = int(posix["read"].sum() + posix["written"].sum())
    assert io["total"]["bytes"] == total and io["total"]["ops"] == int(
        posix["reads"].sum() + posix["writes"].sum())
    # the counters sum the same calls' times in float seconds: equal to a nanosecond per call
    assert io["total"]["io_time_s"] == pytest.approx(
        posix["read_s"].sum() + posix["write_s"].sum(), abs=1e-9 * io["total"]["ops"])
    assert f"{total}," in (sample_run[1] / "summary.json").read_text().replace(" ", "")
    assert all(type(r["bytes"]) is int for r in io["unattributed_by_reason"])


def test_compare_never_writes_into_an_input_folder(tmp_path):
    before, after = tmp_path / "run-v1", tmp_path / "run2"
    shutil.copytree(SAMPLE, before)
    shutil.copytree(SAMPLE, after)
    listing = sorted(p.relative_to(before) for p in before.rglob("*"))
    out = tmp_path / "cmp"
    proc = _cli("compare", str(before), str(after), "-o", str(out), "--top", "3")
    assert proc.returncode == 0, proc.stderr
    for run in (before, after):
        assert sorted(p.relative_to(run) for p in run.rglob("*")) == listing
    assert f"{before} has no correlate output yet: correlating it into {out / 'before'}" in (
        proc.stderr)
    assert (out / "before" / "tasks.parquet").exists() and (out / "compare.md").exists()
    assert "comparison written to" in proc.stdout and "comparison written" not in proc.stderr
    assert "Setup differences" in (out / "compare.md").read_text()


def _sample_copy(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    return run


def test_a_run_without_darshan_says_io_is_unknown_first_not_zero(tmp_path):
    run = _sample_copy(tmp_path)
    shutil.rmtree(run / "darshan")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["darshan"] = {"runtime": None, "reason": "--darshan off"}
    (run / "manifest.json").write_text(json.dumps(manifest))
    proc = _cli(str(run), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].startswith("data quality: I/O was not captured (no Darshan logs; Darshan: "
                               "--darshan off)")
    assert lines[2] == "I/O: unknown (not captured)"
    assert "write_image" in proc.stdout and " 0 B " not in proc.stdout
    md = (tmp_path / "out" / "report.md").read_text()
    top = md.split("## Run")[0]
    assert "I/O was not captured" in top and "--darshan off" in top
    assert "| 0 B |" not in md and "unknown | unknown | unknown |" in md
    assert "no warnings" not in md
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["io"]["captured"] is False and summary["facts"]["darshan_reason"] == (
        "--darshan off")


def test_a_truncated_darshan_log_is_in_the_headline_before_the_shares(tmp_path):
    run = _sample_copy(tmp_path)
    log = max((run / "darshan").glob("*.darshan"), key=lambda p: p.stat().st_size)
    log.write_bytes(log.read_bytes()[: log.stat().st_size // 2])
    proc = _cli(str(run), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    logs = len(list((run / "darshan").glob("*.darshan")))
    assert lines[1].startswith(f"data quality: 1 of {logs} Darshan log(s) incomplete")
    assert log.name in lines[1] and "truncated log" in lines[1]
    assert lines[2].startswith("I/O: ") and lines[2].endswith(
        "of the I/O that was read (see data quality above)")
    top = (tmp_path / "out" / "report.md").read_text().split("## Run")[0]
    assert f"1 of {logs} Darshan log(s) incomplete" in top and "truncated log" in top


def test_correlate_darshan_on_a_truncated_log_says_the_table_is_partial(tmp_path):
    log = max((SAMPLE / "darshan").glob("*.darshan"), key=lambda p: p.stat().st_size)
    cut = tmp_path / log.name
    cut.write_bytes(log.read_bytes()[: log.stat().st_size // 2])
    proc = _cli("darshan", str(cut), "-o", str(tmp_path / "seg.parquet"))
    assert proc.returncode == 0, proc.stderr  # the partial result is kept
    assert proc.stdout.startswith(
        "1 log(s) (1 incomplete: the table holds only what could be read), ")
    assert "truncated log" in proc.stderr and (tmp_path / "seg.parquet").exists()


def test_an_output_folder_holding_other_files_is_refused_unless_forced(tmp_path, capsys):
    """Outputs written among a folder's other files would mix with them: refused with one line
    naming the files; ``--force`` writes among them (they stay); a previous correlate output
    is replaced without it."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    assert main([str(SAMPLE), "-o", str(out), "--no-reports"]) == 1
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert err == [f"correlate: {out}: the output folder holds other files (notes.txt) and no "
                   "previous correlate output: name a new or empty folder with -o, or pass "
                   "--force to write among them"], err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert main([str(SAMPLE), "-o", str(out), "--no-reports", "--force"]) == 0
    assert (out / "notes.txt").read_text() == "my notes" and (out / "tasks.parquet").is_file()
    again = tmp_path / "again"
    assert main([str(SAMPLE), "-o", str(again), "--no-reports"]) == 0
    assert main([str(SAMPLE), "-o", str(again), "--no-reports"]) == 0  # its own output


def test_a_disk_that_fills_is_one_line_naming_where_correlate_writes(tmp_path, capsys,
                                                                     monkeypatch):
    """A full disk is the user's to fix, not a bug to report: every table's temporary file
    (``sinks.ParquetSink``) is a link to /dev/full, whose writes fail as a full disk's do,
    so polars' own error (a ``ComputeError`` that says so only in its text) reaches the CLI."""
    from correlate.schema import TABLES

    out, spill = tmp_path / "out", tmp_path / "spill"
    out.mkdir()
    spill.mkdir()
    monkeypatch.setenv("TMPDIR", str(spill))
    monkeypatch.setattr("tempfile.tempdir", None)  # (read from TMPDIR again)
    for name in TABLES:
        (out / f".{name}.parquet.{socket.gethostname()}-{os.getpid()}.tmp"
         ).symlink_to("/dev/full")
    assert main([str(SAMPLE), "-o", str(out), "--no-reports"]) == 1
    err = capsys.readouterr().err
    assert "internal error" not in err
    line = " ".join(err.split())  # (rich folds a long line on a narrow terminal)
    assert re.search(rf"no space left on device: correlate writes its output {out} "
                     rf"\([\d.]+ GB free\) and its spill folder \(TMPDIR\) {spill} "
                     r"\([\d.]+ GB free\)", line), err


def test_a_disk_that_fills_under_a_comparison_names_its_default_output_folder(
        tmp_path, capsys, monkeypatch):
    """``correlate compare`` without ``-o`` writes into ``./compare-<BEFORE>-vs-<AFTER>``,
    chosen inside the command: the full-disk line names that folder too (the sample run
    correlated into it, each table's temporary file a link to /dev/full)."""
    from correlate.schema import TABLES

    monkeypatch.chdir(tmp_path)
    before = tmp_path / "compare-run-v1-vs-run-v1" / "before"
    before.mkdir(parents=True)
    for name in TABLES:
        (before / f".{name}.parquet.{socket.gethostname()}-{os.getpid()}.tmp"
         ).symlink_to("/dev/full")
    assert main(["compare", str(SAMPLE), str(SAMPLE)]) == 1
    line = " ".join(capsys.readouterr().err.split())
    assert re.search(r"no space left on device: correlate writes its output "
                     r"compare-run-v1-vs-run-v1 \([\d.]+ GB free\) and its spill", line), line


def test_a_spill_that_fills_the_disk_during_the_load_is_not_blamed_on_the_run(
        tmp_path, capsys, monkeypatch):
    """The load spills a big table as it decodes it (here every table past ten rows): a
    spill file that cannot be written (a link to /dev/full) is the disk's fault, not
    unreadable data in the run folder's streams."""
    from correlate.frames import spill
    from correlate.sources import run_folder

    made = iter(range(1_000_000))

    def full(suffix: str) -> Path:
        link = tmp_path / f"spill-{next(made)}{suffix}"
        link.symlink_to("/dev/full")
        return link

    run = tmp_path / "run"  # (run format 3: its streams decoded a chunk at a time)
    write_run(run, workers=2, threads=2, executions=200, segments=400, seed=3)
    monkeypatch.setattr(run_folder, "CHUNK_ROWS", 10)
    monkeypatch.setattr(spill, "spill_path", full)
    assert main([str(run), "-o", str(tmp_path / "out"), "--no-reports"]) == 1
    err = capsys.readouterr().err
    assert "no space left on device" in err and "unreadable" not in err, err
