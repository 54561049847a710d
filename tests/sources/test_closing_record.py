"""A process's closing record (rows, drops per table and reason, how it ended, …) reads the same
wherever it was written: proc.json's ``closed`` field (the collectors), closed.json (older
collectors, the sample run), or closed.json's reserve left under its own name (older collectors
in a folder that refused the rename)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from correlate.schema.run import CLOSED_RESERVE_NAME
from correlate.sources.detect import load

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "run-v1"
#: what one worker's record says beyond the sample's: every field correlate reports
SAID = {"dropped": {"task_executions": {"no space": 3}, "worker_transitions": {"buffer full": 5}},
        "write_errors": {"no space": 2}, "ended_by": "os._exit: the worker's parent process "
        "went away", "executions_running_at_close": 1, "executions_not_timed": 4,
        "hook_errors": {"_on_loop: OSError": 2},
        "transfers_lost_to_dask_log_limit": {"incoming": 6, "outgoing": 0}}


def _run(tmp_path: Path, layout: str) -> Path:
    run = Path(shutil.copytree(SAMPLE, tmp_path / layout))
    for proc in sorted((run / "procs").iterdir()):
        closed = json.loads((proc / "closed.json").read_text())
        if proc.name.startswith("worker") and proc.name.endswith("21009"):
            closed.update(SAID)
        if layout == "closed.json":
            (proc / "closed.json").write_text(json.dumps(closed))
            continue
        (proc / "closed.json").unlink()
        if layout == "reserve":
            (proc / CLOSED_RESERVE_NAME).write_text(json.dumps(closed) + " " * 4096)
        else:  # as collectors.sink.close_proc_json writes it
            info = json.loads((proc / "proc.json").read_text())
            (proc / "proc.json").write_text(json.dumps({**info, "closed": closed}, indent=1))
    return run


def _read(run: Path) -> tuple[list, list, list, list]:
    frames = load(run)
    rejects = sorted((r["source"], r["reason"], r["count"])
                     for r in frames.rejects.iter_rows(named=True))
    return (frames.processes.select("pid", "closed_cleanly").sort("pid").rows(),
            sorted(frames.warnings), rejects, [frames.facts["ended_ns"]])


@pytest.mark.parametrize("layout", ["reserve", "proc.json"])
def test_the_closing_record_reads_the_same_in_every_layout(tmp_path, layout):
    old = _read(_run(tmp_path, "closed.json"))
    assert all(closed for _pid, closed in old[0])
    assert any("was ended without a clean close" in w for w in old[1])
    assert ("collector", "task_executions: rows dropped (no space)", 3) in old[2]
    assert _read(_run(tmp_path, layout)) == old


def test_a_blank_reserve_is_no_clean_close(tmp_path):
    run = _run(tmp_path, "reserve")
    reserve = next((run / "procs").glob("worker-*")) / CLOSED_RESERVE_NAME
    reserve.write_bytes(b" " * 16384)  # (reserved at start, never written)
    closed = dict(load(run).processes.select("pid", "closed_cleanly").rows())
    assert sorted(closed.values()) == [False, True, True]
