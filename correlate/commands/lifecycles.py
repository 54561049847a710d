"""``correlate lifecycles RUN_DIR``: write the per-task lifecycle view (``task_lifecycles.jsonl``)
of a run of any size. ``correlate RUN`` writes it itself up to ``reports.lifecycles.MAX_TASKS``
tasks;
beyond that the file is large (about 3 KB per task) and slow to build, so it is on demand."""

from __future__ import annotations

import argparse
from pathlib import Path

from correlate.commands import memory
from correlate.errors import InputError
from correlate.sources import FORMATS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, help="run folder (ours or imported)")
    p.add_argument("-o", "--out", type=Path, default=None,
                   help="file to write (default: RUN_DIR/correlated/task_lifecycles.jsonl)")
    p.add_argument("--format", default=None,
                   choices=tuple(FORMATS),
                   help="input format (default: detected)")
    memory.add_argument(p, "told from the bytes of a run folder of ours before it is loaded")


def run(args: argparse.Namespace) -> int:
    from correlate.console import console, results
    from correlate.sources.detect import load
    from correlate.timeline.lifecycles import write_lifecycles

    if not args.run_dir.exists():
        raise InputError(args.run_dir, "no such file or directory")
    out = args.out or (args.run_dir / "correlated" / "task_lifecycles.jsonl")
    memory.check_load(args.run_dir, memory.limit_of(args))
    with console().status(f"reading {args.run_dir}") as status:
        frames = load(args.run_dir, args.format, lazy=True)
        status.update(f"writing {out}")
        n = write_lifecycles(frames, out)
    results().print(f"{out}: {n:,} tasks")
    return 0
