"""`collect` passes the job's outcome through: exit status 128+N for a job killed by signal N,
SIGTERM and SIGINT sent to `collect` reach the job (which may handle them and exit as it
chooses) and `collect` waits for it; the manifest records the status; no traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

#: a job that writes "ready", then exits 0 after handling SIGTERM, 7 after SIGINT
HANDLER_JOB = """
import signal, sys, time, pathlib
def on_term(*_):
    pathlib.Path(sys.argv[1], "term").write_text("x"); sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
try:  # (ready written inside: the file exists from its open, and a SIGINT may come before
    # its write returns)
    pathlib.Path(sys.argv[1], "ready").write_text("x")
    time.sleep(60)
except KeyboardInterrupt:
    pathlib.Path(sys.argv[1], "int").write_text("x"); sys.exit(7)
"""


def _default_sigint() -> None:
    # (a shell script's background job, this suite's too, starts with SIGINT ignored, and so
    # would the job: a Ctrl-C never reaches such a job, under `collect` or not)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(tmp_path, *job: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "collectors.launcher", "-o",
                             str(tmp_path / "run"), "--darshan", "off", "--", *job],
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)


def wait_for(path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def manifest(tmp_path) -> dict:
    return json.loads((tmp_path / "run" / "manifest.json").read_text())


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_job_killed_by_a_signal_exits_128_plus_n(tmp_path, sig):
    proc = start(tmp_path, sys.executable, "-c",
                 f"import os, signal; signal.signal({int(sig)}, signal.SIG_DFL) "
                 f"if {int(sig)} != 9 else None; os.kill(os.getpid(), {int(sig)})")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig
    assert manifest(tmp_path)["exit_code"] == 128 + sig
    assert "Traceback" not in err


@pytest.mark.parametrize(("sig", "marker", "code"),
                         [(signal.SIGTERM, "term", 0), (signal.SIGINT, "int", 7)])
def test_a_signal_to_collect_reaches_the_job_and_its_own_exit_code_is_kept(
        tmp_path, sig, marker, code):
    proc = start(tmp_path, sys.executable, "-c", HANDLER_JOB, str(tmp_path))
    wait_for(tmp_path / "ready")
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    assert (tmp_path / marker).exists()
    assert proc.returncode == code
    assert manifest(tmp_path)["exit_code"] == code
    assert "Traceback" not in err


def test_sigterm_to_collect_ends_a_job_that_does_not_handle_it_with_143(tmp_path):
    proc = start(tmp_path, sys.executable, "-c",
                 f"import pathlib, time; pathlib.Path({str(tmp_path)!r}, 'ready').touch(); "
                 "time.sleep(60)")
    wait_for(tmp_path / "ready")
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 == manifest(tmp_path)["exit_code"]
    assert "Traceback" not in err


#: a job that counts the SIGINTs it receives and exits with that count
COUNTING_JOB = """
import signal, sys, time, pathlib
got = []
signal.signal(signal.SIGINT, lambda *_: got.append(1))
pathlib.Path(sys.argv[1], "ready").write_text("x")
deadline = time.monotonic() + 60
while not got and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(1.0)
sys.exit(len(got))
"""


def test_ctrl_c_at_a_terminal_reaches_the_job_once(tmp_path):
    """A terminal's Ctrl-C goes to its whole foreground process group, the job included:
    `collect` does not send it a second time (a job would take it for a second interrupt)."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: collect in the pty's foreground process group
        os.execv(sys.executable, [sys.executable, "-m", "collectors.launcher", "-o",
                                  str(tmp_path / "run"), "--darshan", "off", "--",
                                  sys.executable, "-c", COUNTING_JOB, str(tmp_path)])
    output = bytearray()
    try:
        wait_for(tmp_path / "ready")
        os.write(fd, b"\x03")  # ^C: the kernel signals the foreground group
        _, status = os.waitpid(pid, 0)
    finally:
        try:
            output += os.read(fd, 65536)
        except OSError:
            pass
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 1, output.decode(errors="replace")
    assert manifest(tmp_path)["exit_code"] == 1
