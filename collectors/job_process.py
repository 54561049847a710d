"""Run the job's command under ``collect``: SIGINT and SIGTERM sent to ``collect`` are passed on
to the job, and ``collect`` waits for it; the job's exit status comes back as a shell does
(``128 + N`` for a job killed by signal N).

Signals are taken synchronously (``sigtimedwait``) so that their sender is known: a Ctrl-C at
the terminal reaches the job itself (same foreground process group) and is not sent twice,
while a ``kill`` of ``collect`` (a batch system ending the job, a user) is forwarded."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence

FORWARDED = (signal.SIGINT, signal.SIGTERM)
_WATCHED = {*FORWARDED, signal.SIGCHLD}


def exit_status(returncode: int) -> int:
    """A shell's exit status for a child's return code (``-N``: killed by signal N)."""
    return 128 - returncode if returncode < 0 else returncode


def _unblock() -> None:  # in the child, before exec: the job gets signals as usual
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _WATCHED)


def run(command: Sequence[str], env: dict[str, str]) -> subprocess.Popen:
    """Start the job with the forwarded signals held back in this process (``wait`` takes
    them)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
    try:
        return subprocess.Popen(list(command), env=env, preexec_fn=_unblock)  # noqa: PLW1509
    except BaseException:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _WATCHED)
        raise


def wait(proc: subprocess.Popen) -> int:
    """Wait for the job, forwarding SIGINT and SIGTERM sent to this process by another one
    (``si_code <= 0``: ``kill``, ``sigqueue``); its exit status."""
    try:
        while proc.poll() is None:
            info = signal.sigtimedwait(_WATCHED, 0.5)
            if info is not None and info.si_signo in FORWARDED and info.si_code <= 0:
                try:
                    os.kill(proc.pid, info.si_signo)
                except ProcessLookupError:
                    pass
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _WATCHED)
    return exit_status(proc.returncode)
