"""Run-folder faults for tests: a small tmpfs that can be filled, freed and made read-only, and
a file size limit that makes this process's writes fail.

Mounting needs root (or CAP_SYS_ADMIN); without it the tests that need a real full or read-only
file system skip with that reason. The size limit (``RLIMIT_FSIZE``) needs neither: the kernel
fails every write that would grow a file past it with EFBIG, so those tests run anywhere."""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def file_size_limit(size: int) -> Iterator[None]:
    """While inside: every write of this process that would make a file larger than ``size``
    bytes fails with EFBIG (SIGXFSZ ignored, so the write returns the error instead of killing
    the process). Keep the block short: pytest's own capture files obey it too."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


class Tmpfs:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / f".filler-{uuid.uuid4().hex}"

    def fill(self) -> None:
        """Take every free byte (writes until ENOSPC, in smaller and smaller pieces)."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for size in (65536, 4096, 1):
                try:
                    while True:
                        os.write(fd, b"\0" * size)
                except OSError as err:
                    if err.errno != errno.ENOSPC:
                        raise
        finally:
            os.close(fd)

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def read_only(self, flag: bool = True) -> None:
        """Remount read-only (or back): retried while a writer holds a file open (EBUSY)."""
        for _ in range(200):
            done = subprocess.run(["mount", "-o", f"remount,{'ro' if flag else 'rw'}",
                                   str(self.path)], capture_output=True, text=True)
            if done.returncode == 0:
                return
            time.sleep(0.01)
        raise OSError(f"cannot remount {self.path}: {done.stderr.strip()}")


def mount_error(path: Path) -> str | None:
    """Why a tmpfs cannot be mounted at ``path`` here (None: it can)."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)],
                       check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as err:
        return f"cannot mount a tmpfs ({getattr(err, 'stderr', '') or err}); needs root"
    subprocess.run(["umount", str(path)], check=False, capture_output=True)
    return None


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Tmpfs]:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                   check=True, capture_output=True)
    try:
        yield Tmpfs(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)
