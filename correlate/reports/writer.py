"""What every output implements: a ``Writer`` renders its input (``In``: an output folder's
``Outputs``, a ``Comparison``, a run in memory, its ``RunFrames``) into a folder and returns
the paths it wrote (none for an output printed on the terminal), with the run's
``ReportOptions``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

In = TypeVar("In", contravariant=True)


@dataclass(frozen=True)
class ReportOptions:
    #: the trace's (start, end) in seconds after the first task start (end None: to the
    #: last); None: a large run's trace shows its first executions
    trace_window: tuple[float, float | None] | None = None
    #: rows of a table printed on the terminal
    top: int = 10


class Writer(Protocol[In]):
    def __call__(self, data: In, out_dir: Path, options: ReportOptions, /) -> list[Path]: ...
