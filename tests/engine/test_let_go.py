"""The engine lets go of each stage's per-execution tables once the next is made: frames handed
over (a one-element list, as `correlate RUN` hands a run too big for task_lifecycles.jsonl)
no longer hold the executions as loaded by the summary and the findings, and the numbered and
aligned executions are gone by then too (what the summary and the findings read is the tasks
table)."""

from __future__ import annotations

import gc
import weakref

import polars as pl
import pytest

from correlate import console, engine, findings
from correlate.sources import run_folder
from testing.synthetic import write_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("let_go") / "run"
    write_run(folder, workers=2, threads=2, executions=400, segments=2000, seed=5)
    return folder


def _alive_at(stages: tuple[str, ...], monkeypatch, watched: dict[str, weakref.ref]
              ) -> dict[str, dict[str, bool]]:
    """At each of ``stages`` as it begins: which of ``watched`` are still alive."""
    seen: dict[str, dict[str, bool]] = {}
    begin = console.Progress.begin

    def spying(self, name, rows=None):
        if name in stages:
            gc.collect()
            seen[name] = {what: ref() is not None for what, ref in watched.items()}
        return begin(self, name, rows)

    monkeypatch.setattr(console.Progress, "begin", spying)
    return seen


def test_handed_frames_let_the_executions_go_before_the_summary(run, tmp_path, monkeypatch):
    frames = run_folder.load(run).collected()
    watched = {"loaded": weakref.ref(frames.executions)}
    numbered = engine.number_executions
    monkeypatch.setattr(engine, "number_executions", lambda ex: _watched(
        numbered(ex), watched, "numbered"))
    seen = _alive_at(("attribution", "summary", "findings"), monkeypatch, watched)
    handed = [frames]
    del frames
    engine.correlate_to(handed, tmp_path / "out")
    assert handed == []
    assert not seen["attribution"]["loaded"]  # (once numbered)
    assert seen["summary"] == seen["findings"] == {"loaded": False, "numbered": False}
    assert pl.read_parquet(tmp_path / "out" / "tasks.parquet").height == 400


def test_frames_the_caller_keeps_stay_whole(run, tmp_path, monkeypatch):
    frames = run_folder.load(run).collected()
    seen = _alive_at(("findings",), monkeypatch, {"loaded": weakref.ref(frames.executions)})
    engine.correlate_to(frames, tmp_path / "out")
    assert seen["findings"] == {"loaded": True}
    assert frames.executions.height == 400  # (the caller's frames are not changed)


def _watched(df: pl.DataFrame, watched: dict[str, weakref.ref], name: str) -> pl.DataFrame:
    watched[name] = weakref.ref(df)
    return df


def test_each_side_of_the_tasks_table_goes_once_its_columns_are_made(run, tmp_path,
                                                                       monkeypatch):
    frames = run_folder.load(run).collected()
    sides: list[weakref.ref] = []
    alive_then: list[int] = []
    beside = engine.beside

    def spying(ex, side, on, nulls_equal=False):
        gc.collect()
        alive_then.append(sum(ref() is not None for ref in sides))
        sides.append(weakref.ref(side))
        return beside(ex, side, on, nulls_equal)

    monkeypatch.setattr(engine, "beside", spying)
    engine.correlate_to([frames], tmp_path / "out")
    assert len(sides) == 7
    # (each side's table, made for the tasks table or held by the attribution, is gone by
    # the time the next side's columns are made)
    assert alive_then == [0] * 7


def test_the_startstops_go_before_the_findings_rules_run(run, tmp_path, monkeypatch):
    """What the rules read of the startstops (the results stored to disk) is taken first; a
    big run's startstops are not held while the rules copy the tasks table's columns."""
    watched: dict[str, weakref.ref] = {}
    alive: list[bool] = []
    stored, analyse = findings.stored, findings.analyse

    def taking(startstops):
        watched["startstops"] = weakref.ref(startstops)
        return stored(startstops)

    def analysing(*args, **kwargs):
        gc.collect()
        alive.append(watched["startstops"]() is not None)
        return analyse(*args, **kwargs)

    monkeypatch.setattr(findings, "stored", taking)
    monkeypatch.setattr(findings, "analyse", analysing)
    engine.correlate_to([run_folder.load(run).collected()], tmp_path / "out")
    assert alive == [False]
    assert pl.read_parquet(tmp_path / "out" / "findings.parquet").columns  # (written)


def test_no_text_stays_in_polars_categories_once_the_tables_are_written(run, tmp_path):
    """Once `correlate RUN` has written its tables, before its reports, nothing of the run
    holds polars' categories (each text ever cast to Categorical, a big run's keys: gigabytes
    the reports would run beside): a new text cast to Categorical is the first category. In
    a process of its own (the test process's modules may hold some)."""
    import subprocess
    import sys

    probe = (
        "import sys, polars as pl\n"
        "import correlate.reports as reports\n"
        "def first_code(out):\n"
        "    code = pl.select(pl.lit('probe').cast(pl.Categorical)).to_series()\n"
        "    print('first code', code.to_physical()[0])\n"
        "    return []\n"
        "reports.write_reports = first_code\n"
        "from correlate.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    done = subprocess.run([sys.executable, "-c", probe, str(run), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "first code 0" in done.stdout.splitlines(), done.stdout[-1000:]
