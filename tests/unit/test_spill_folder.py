"""The spill folder of a correlate that was killed (no exit hook ran) is removed by the next
correlate on the host; those of live processes, and of other hosts, are left."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from correlate.frames import spill


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_folders_of_processes_that_are_gone_are_removed(tmp_path):
    mine = f"correlate-spill-{socket.gethostname()}-"
    gone = tmp_path / f"{mine}{_gone_pid()}-abc"
    live = tmp_path / f"{mine}{os.getpid()}-def"
    other_host = tmp_path / f"correlate-spill-not-{socket.gethostname()}-{_gone_pid()}-ghi"
    unnamed = tmp_path / f"{mine}xyz"
    for folder in (gone, live, other_host, unnamed):
        folder.mkdir()
        (folder / "part.arrow").write_bytes(b"x" * 10)
    spill.remove_orphans(tmp_path, mine)
    assert not gone.exists()
    assert live.exists() and other_host.exists() and unnamed.exists()


def test_this_process_names_its_folder_by_host_and_pid():
    folder = spill.spill_path(".arrow").parent
    assert folder.name.startswith(f"correlate-spill-{socket.gethostname()}-{os.getpid()}-")


def test_correlate_run_removes_what_a_killed_correlate_left(tmp_path):
    """A small run never spills: the run command sweeps as it starts."""
    from pathlib import Path

    left = tmp_path / f"correlate-spill-{socket.gethostname()}-{_gone_pid()}-abc"
    left.mkdir()
    (left / "part.arrow").write_bytes(b"x" * 10)
    sample = Path(__file__).resolve().parents[2] / "samples" / "run-v1"
    done = subprocess.run([sys.executable, "-m", "correlate.cli", str(sample), "-o",
                           str(tmp_path / "out"), "--no-reports"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert not left.exists()
