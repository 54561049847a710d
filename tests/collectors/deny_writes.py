"""A Dask preload for the fault tests: while the file named by ``$DENY_WRITES_FLAG`` exists,
creating, renaming or making anything under ``$DENY_WRITES_UNDER`` fails with EACCES (or the
errno named by ``$DENY_WRITES_ERRNO``, e.g. EIO: a failing device), as
``chmod a-w`` on the run folder would for a user other than root (root, which runs these
tests, ignores permissions). Files that exist stay writable in place, as they do after chmod."""

from __future__ import annotations

import errno
import os
import pathlib

_UNDER = os.environ.get("DENY_WRITES_UNDER", "")
_FLAG = os.environ.get("DENY_WRITES_FLAG", "")
_ERRNO = getattr(errno, os.environ.get("DENY_WRITES_ERRNO", "EACCES"))


def _denied(path: object) -> bool:
    return bool(_UNDER) and os.fspath(path).startswith(_UNDER) and os.path.exists(_FLAG)


def _guard(fn, *, arg: int = 0):  # noqa: ANN001, ANN202
    def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        if _denied(args[arg]):
            raise OSError(_ERRNO, os.strerror(_ERRNO), os.fspath(args[arg]))
        return fn(*args, **kwargs)

    return wrapped


def _install() -> None:
    if getattr(os.replace, "_denying", False):
        return
    os.replace = _guard(os.replace)
    os.replace._denying = True
    for name in ("write_bytes", "write_text", "mkdir", "touch"):
        setattr(pathlib.Path, name, _guard(getattr(pathlib.Path, name)))


def dask_setup(server) -> None:  # noqa: ANN001
    _install()
