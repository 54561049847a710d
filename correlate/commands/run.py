"""``correlate RUN_DIR``: read a run folder (ours, Mofka-Dask CSVs or MiniApp outputs), correlate,
write the output tables and reports into ``RUN_DIR/correlated/`` (or ``-o``) and print a short
summary."""

from __future__ import annotations

import argparse
import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from correlate.commands import memory
from correlate.errors import InputError
from correlate.sources import FORMATS


def output_folder(args: argparse.Namespace) -> Path:
    """Where ``correlate RUN`` writes: ``-o``, else the run folder's ``correlated``."""
    return Path(args.out or (args.run_dir / "correlated"))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, help="run folder written by `collect`, or an imported one")
    p.add_argument("-o", "--out", type=Path, default=None,
                   help="output folder (default: RUN_DIR/correlated)")
    p.add_argument("--format", choices=("auto", *FORMATS), default="auto",
                   help="input format (default: detected from the files present)")
    p.add_argument("--top", type=int, default=10, help="rows in the terminal summary tables")
    p.add_argument("--cluster", metavar="ADDRESS", default=None,
                   help="read the Darshan logs and attribute each process's I/O as tasks on this "
                        "Dask scheduler (tcp://host:8786), or on a LocalCluster started for the "
                        "run: `local` (2 worker processes) or `local:N`; same output as without "
                        "(the workers read the run folder and write segments.parquet's parts: "
                        "both on a file system they share)")
    memory.add_argument(p, "told from its row counts (before a run folder of ours is loaded, "
                           "and before --cluster starts one; once an imported one is)")
    p.add_argument("--group-by", metavar="KEY", action="append", default=[],
                   help="also group the tasks by this key of their Dask annotations "
                        "(dask.annotate(KEY=...)); repeatable")
    p.add_argument("--force", action="store_true",
                   help="write into an output folder that holds other files than a previous "
                        "correlate output (they stay; correlate's files are replaced)")
    p.add_argument("--no-reports", action="store_true",
                   help="write only the tables, not report.md/report.html/trace.json "
                        "(`correlate report OUT` renders them later)")


#: what correlate writes into an output folder besides its tables: summary.json, the
#: lifecycles, and the reports (``correlate.reports.WRITERS``) with their figures
OUTPUT_FILES = ("summary.json", "task_lifecycles.jsonl", "report.md", "report.html",
                "trace.json", "figures")


def refuse_other_files(out: Path) -> None:
    """Raise unless ``out`` is new, empty or a previous correlate output (its ``summary.json``
    says so, or it holds only names correlate writes, as a run killed before its summary
    leaves): outputs written among other files would mix with them."""
    from correlate.engine import OPTIONAL_TABLES, OUTPUT_TABLES

    if not out.exists():
        return
    if not out.is_dir():
        raise InputError(out, "the output folder is a file")
    ours_names = {*OUTPUT_FILES, *(f"{t}.parquet" for t in (*OUTPUT_TABLES, *OPTIONAL_TABLES))}
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    if all(n in ours_names for n in names):
        return
    try:
        ours = "output_format_version" in json.loads((out / "summary.json").read_text())
    except (OSError, ValueError, TypeError):
        ours = False
    if not ours:
        shown = ", ".join(names[:5]) + (f", … ({len(names)} in all)" if len(names) > 5 else "")
        raise InputError(out, f"the output folder holds other files ({shown}) and no "
                              "previous correlate output: name a new or empty folder with -o, "
                              "or pass --force to write among them")


def _check_group_keys(run_dir: Path, frames: Any, keys: tuple[str, ...]) -> None:
    """Before the work: a typo in ``--group-by`` would group every task as not annotated."""
    from correlate.timeline.spans import unknown_group_keys

    if keys and (unknown := unknown_group_keys(frames.task_labels.get_column("annotations"),
                                               keys)):
        raise InputError(run_dir, unknown)


def _count_before_load(run_dir: Path, fmt: str, limit: int | None, cluster: str | None,
                       stages: Any) -> Any:
    """The row counts of a run folder of ours, read without decoding it (``row_counts``), its
    need checked against ``limit`` before anything is loaded or a cluster started (without the
    Darshan logs' segments: a lower bound of the need); None where there is no limit or the
    format's rows can only be counted once loaded."""
    from correlate.sources import row_counts, run_folder

    if limit is None or fmt != "run-folder" or not run_folder.looks_like(run_dir):
        return None
    stages.begin("count rows")
    counts = row_counts.count_tables(run_dir)
    stages.end()
    memory.check(run_dir, memory.need_before_load(counts), limit, cluster)
    return counts


def _load(run_dir: Path, fmt: str, counts: Any, limit: int | None, cluster: str | None,
          stages: Any, mapper: Any) -> Any:
    """The run's frames: the Darshan logs' records read (through ``mapper``) and the need
    checked with their segments before the rest of a counted run folder is loaded; an
    imported format checked once it is loaded."""
    from correlate.sources import row_counts, run_folder
    from correlate.sources.detect import load

    if cluster:  # (its workers read the Darshan logs by the paths the load gives them: from
        run_dir = run_dir.absolute()  # a folder of their own, a relative one names another)
    if counts is not None:
        stages.begin("read the Darshan logs' records")
        row_counts.add_darshan(counts, run_dir, mapper)
        stages.end()
        memory.check(run_dir, memory.need_before_load(counts), limit, cluster)
    stages.begin("load run folder")
    if counts is not None:
        # (handed over: kept in the counts, its tables outlived the engine's use of them, and
        # a Categorical column of theirs kept every text of polars' categories alive, a big
        # run's keys, through the reports)
        darshan, counts.darshan = counts.darshan, None
        frames = run_folder.load(run_dir, mapper, darshan)
        del darshan
    else:
        frames = load(run_dir, fmt, mapper, lazy=True)
    stages.end()
    if counts is None and limit is not None:  # an imported format: counted once loaded
        memory.check(run_dir, memory.need(frames), limit, cluster)
    return frames


def run(args: argparse.Namespace) -> int:
    from correlate.console import console, progress, results
    from correlate.engine import correlate_to
    from correlate.frames import spill
    from correlate.frames.cluster import mapper_for
    from correlate.provenance import record
    from correlate.reports import write_reports
    from correlate.reports.lifecycles import MAX_TASKS, NAME, write_task_lifecycles
    from correlate.reports.terminal import print_run
    from correlate.reports.writer import ReportOptions
    from correlate.sources.detect import detect

    spill.sweep()  # (what a killed correlate left in the temporary folder)
    run_dir: Path = args.run_dir
    if not run_dir.exists():
        raise InputError(run_dir, "no such file or directory")
    out = output_folder(args)
    if not args.force:
        refuse_other_files(out)
    limit = memory.limit_of(args)
    fmt = detect(run_dir) if args.format == "auto" else args.format
    with progress() as stages, ExitStack() as cluster:
        counts = _count_before_load(run_dir, fmt, limit, args.cluster, stages)
        mapper = cluster.enter_context(mapper_for(args.cluster))  # (started once counted)
        frames = _load(run_dir, fmt, counts, limit, args.cluster, stages, mapper)
        _check_group_keys(run_dir, frames, tuple(args.group_by))
        inputs = record(run_dir, out, frames.facts.get("run_id"))
        # kept here only for task_lifecycles.jsonl: a run with more keys has more tasks than
        # it is written for (records on other threads carry their execution's key), and is
        # handed to the engine, which lets each table go once done with it
        kept = frames if frames.executions.get_column("key").n_unique() <= MAX_TASKS else None
        handed = [frames]
        del frames
        result = correlate_to(handed, out, mapper, group_by=tuple(args.group_by),
                              inputs=inputs, progress=stages)
        tasks = result.summary["tasks"]
        lifecycles = out / NAME
        if kept is not None and tasks <= MAX_TASKS:
            stages.begin("task_lifecycles.jsonl")
            # on the run timeline of the tables just written (their clock offsets)
            write_task_lifecycles(kept, out, ReportOptions())
        else:
            lifecycles.unlink(missing_ok=True)  # never leave an earlier run's file beside these
        stages.end()
    # the summary first: the run's frames and tables are let go before the reports read theirs
    print_run(result, out, ReportOptions(top=args.top))
    del kept, result
    if tasks > MAX_TASKS:
        console().print(f"task_lifecycles.jsonl not written: {tasks:,} tasks (about 3 KB each; "
                        f"written up to {MAX_TASKS:,}). `correlate lifecycles "
                        f"{run_dir} -o {lifecycles}` writes it; `correlate story {run_dir} KEY` "
                        "shows one task.")
    reports = []
    if not args.no_reports:
        with console().status(f"writing reports into {out}"):
            reports = write_reports(out)
    if reports:
        results().print("reports: " + ", ".join(sorted({p.name if p.parent == out else
                                                       p.parent.name + "/" for p in reports})))
    return 0
