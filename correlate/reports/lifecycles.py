"""``task_lifecycles.jsonl`` as an output of ``correlate RUN``: one JSON object per task with
its whole life (``correlate.timeline.lifecycles``), on the run timeline of the clocks just
written into the same folder."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from correlate.reports.writer import ReportOptions
from correlate.sources.frames import RunFrames
from correlate.timeline.lifecycles import write_lifecycles

NAME = "task_lifecycles.jsonl"
#: ``correlate RUN`` writes it for runs of at most this many tasks (about 3 KB a task, and
#: slow to build beyond: ``correlate lifecycles`` writes it on demand)
MAX_TASKS = 200_000


def write_task_lifecycles(frames: RunFrames, out_dir: Path, options: ReportOptions
                          ) -> list[Path]:
    """Write ``out_dir/task_lifecycles.jsonl``; the clocks are the folder's ``clocks``
    table where correlate wrote one (else computed from the run)."""
    clocks = out_dir / "clocks.parquet"
    path = out_dir / NAME
    write_lifecycles(frames, path, clocks=pl.read_parquet(clocks) if clocks.exists() else None)
    return [path]
