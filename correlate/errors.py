"""One exception family for user-facing problems; ``cli.main`` is the only catch site.

Record-level problems are not exceptions: they become rows of the ``rejects`` table.
"""

from __future__ import annotations

import errno
from pathlib import Path


class CorrelateError(Exception):
    """A problem with an input or option that the user can fix; printed as one line."""

    exit_code = 1

    def __init__(self, path: str | Path | None, problem: str) -> None:
        self.path = str(path) if path is not None else None
        self.problem = problem
        super().__init__(f"{self.path}: {problem}" if self.path else problem)


class InputError(CorrelateError):
    """A file or folder that cannot be read as what it claims to be."""


class SchemaError(CorrelateError):
    """A table whose columns or types do not match ``correlate.schema``."""


class UnsupportedVersionError(CorrelateError):
    """A run folder written by a newer collector than this correlate understands."""


def first_line(err: BaseException) -> str:
    """An error's first line (polars' errors run over several)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def no_space_left(err: BaseException) -> bool:
    """Whether ``err`` is a disk that filled: Python's ``OSError`` has its errno; polars' (a
    file written from Rust: an ``OSError`` or, from a sink, a ``ComputeError``) says so only
    in its text."""
    return (isinstance(err, OSError) and err.errno == errno.ENOSPC) or any(
        text in str(err) for text in ("(os error 28)", "No space left on device"))
