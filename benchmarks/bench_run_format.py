"""Run format 3 against the format before it (issue 44), side by side in one invocation.

1. ``--sizes``: on-disk bytes per task of each table after ``client.map(inc, range(N))`` under
   ``collect --profile off`` (or ``--profile MODE``; LocalCluster 2 workers x 2 threads), this tree and
   ``--baseline-tree`` (format 2: a part per table and flush), and the files each process left.
2. ``--files``: files (and folders) per process after a job that flushes ``--flushes`` times
   (``--flush-interval 0.2`` for ``0.2 × flushes`` seconds of no-op tasks: 120 flushes is a
   10-minute job at the default 5 s), both trees; ``--heaviest``: in ``--profile yappi`` with
   every table a process can write (tasks opening files, coroutine tasks, transfers, spans and
   annotations, data scattered from the client, Darshan clock markers).
3. ``--read``: ``correlate``'s reading of a synthetic run folder (``testing.synthetic``, this
   tree's format) of ``--many`` worker processes against the same executions in 4: seconds of
   ``run_folder.load`` plus reading the transitions (its Darshan logs removed: one per process,
   read by another reader), medians of ``--repeat`` interleaved runs.
4. ``--whole``: the whole ``correlate RUN --no-reports`` (every table, summary.json and
   task_lifecycles.jsonl) on the same two folders, interleaved with ``--read``'s runs;
   ``--darshan``: the same on the folders with their Darshan logs (one per process: the
   per-process I/O attribution). ``--tree DIR`` (repeatable) times these checkouts'
   ``correlate`` on the same folders, interleaved (before/after a change); the load average
   is printed with each table.

CPU per task is ``bench_many_tasks.py --workloads noop --tasks 20000 --modes off
--baseline-tree DIR``.

    python benchmarks/bench_run_format.py --baseline-tree /tmp/base44 [--sizes] [--files] [--read]
    python benchmarks/bench_run_format.py --read --whole --darshan --repeat 5 [--tree DIR ...]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOOP = REPO / "benchmarks" / "many_tasks_job.py"

#: the no-op job of a given length (prints tasks=N), and its options that make the processes
#: write every table they can (``--files --heaviest``)
TIMED_JOB = REPO / "testing" / "timed_job.py"
HEAVIEST = ["--open", "--coroutines", "--transfers", "--spans", "--scatter"]


def collect(tree: Path, out: Path, job: list[str], interval: float | None = None,
            profile: str = "off", markers: bool = False) -> int:
    """Run ``job`` under ``tree``'s ``collect --profile PROFILE`` (``markers``: with Darshan's
    clock markers, asked for as its environment does); the number of tasks it ran."""
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(out), "--profile", profile,
           "--darshan", "off", *(["--flush-interval", str(interval)] if interval else []),
           "--", sys.executable, *job]
    env = dict(os.environ, PYTHONPATH=str(tree), DASK_CORRELATE_MARKERS="1" if markers else "0")
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tree, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return int(re.search(r"tasks=([0-9]+)", done.stdout).group(1))


def table_of(proc: Path, f: Path) -> str:
    """The table a file holds: format 2's ``<table>/part-*``, format 3's ``<table>.arrows`` /
    ``<table>.snapshot.arrow`` (``strings``: format 3's strings), or the file (JSON)."""
    if f.parent != proc:
        return f.parent.name
    for suffix in (".snapshot.arrow", ".arrows"):
        if f.name.endswith(suffix):
            return f.name.removesuffix(suffix)
    return f.name


def census(run: Path) -> tuple[Counter, dict[str, tuple[int, int]]]:
    """(bytes per table over all processes, process -> (files, folders))."""
    sizes: Counter = Counter()
    per_proc = {}
    for proc in sorted((run / "procs").iterdir()):
        files = [p for p in proc.rglob("*") if p.is_file()]
        dirs = [p for p in proc.rglob("*") if p.is_dir()]
        for f in files:
            sizes[table_of(proc, f)] += f.stat().st_size
        per_proc[proc.name] = (len(files), len(dirs))
    return sizes, per_proc


def trees(args: argparse.Namespace) -> list[tuple[str, Path]]:
    out = [("this tree", REPO)]
    if args.baseline_tree:
        out.insert(0, ("baseline tree", args.baseline_tree.resolve()))
    return out


def sizes(args: argparse.Namespace, work: Path) -> None:
    found = {}
    for name, tree in trees(args):
        out = work / f"sizes-{len(found)}"
        n = collect(tree, out, [str(NOOP), "noop", "--tasks", str(args.tasks)],
                    profile=args.profile)
        found[name] = (n, *census(out))
    tables = sorted({t for _n, s, _p in found.values() for t in s},
                    key=lambda t: -max(s.get(t, 0) / n for n, s, _p in found.values()))
    names = list(found)
    print(f"\non-disk bytes per task, client.map(inc, range({args.tasks})), --profile "
          f"{args.profile}, all processes")
    print("| table | " + " | ".join(names) + " |\n|---|" + "---:|" * len(names))
    for t in tables:
        print(f"| {t} | " + " | ".join(
            f"{s.get(t, 0) / n:.1f}" for n, s, _p in found.values()) + " |")
    print("| **all** | " + " | ".join(
        f"**{sum(s.values()) / n:.1f}**" for n, s, _p in found.values()) + " |")
    for name, (_n, _s, per_proc) in found.items():
        print(f"{name}: files (folders) per process: " + ", ".join(
            f"{p.split('-')[0]} {f} ({d})" for p, (f, d) in per_proc.items()))


def files(args: argparse.Namespace, work: Path) -> None:
    seconds = 0.2 * args.flushes
    heaviest = HEAVIEST if args.heaviest else []
    print(f"\nfiles per process after {seconds:.0f} s of no-op tasks flushed every 0.2 s "
          f"({args.flushes} flushes: a {args.flushes * 5 / 60:.0f}-minute job at 5 s)"
          + (f", --profile yappi, {' '.join(heaviest)}, Darshan clock markers" if heaviest
             else ""))
    print("| tree | tasks | process | files | folders |\n|---|---:|---|---:|---:|")
    for i, (name, tree) in enumerate(trees(args)):
        out = work / f"files-{i}"
        n = collect(tree, out, [str(TIMED_JOB), str(seconds), "--batch", "200", *heaviest],
                    interval=0.2, profile="yappi" if heaviest else "off",
                    markers=bool(heaviest))
        for proc, (f, d) in census(out)[1].items():
            print(f"| {name} | {n:,} | {proc.split('-')[0]} | {f:,} | {d} |")


READ = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from correlate.sources import run_folder
    t0, c0 = time.perf_counter(), time.process_time()
    frames = run_folder.load(Path(sys.argv[1]))
    n = frames.table("transitions").height + frames.executions.height
    print(time.perf_counter() - t0, n, frames.rejects.height, time.process_time() - c0)
""")


def _timed(cmd: list[str], tree: Path) -> list[str]:
    """``cmd``'s stdout split, run with ``tree`` on the path; its wall seconds and CPU seconds
    (user + system, all its threads) appended."""
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=tree,
                         env=dict(os.environ, PYTHONPATH=str(tree)))
    wall, c1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    cpu = c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime
    return [*out.stdout.split(), str(wall), str(cpu)]


def read(args: argparse.Namespace, work: Path) -> None:
    sys.path.insert(0, str(REPO))
    from testing.synthetic import write_run

    trees = [t.resolve() for t in args.tree or [REPO]]
    runs, logs = {}, {}
    for workers in (4, args.many):
        folder = work / f"read-{workers}"
        t0 = time.perf_counter()
        write_run(folder, workers=workers, threads=2, executions=args.executions,
                  segments=max(20 * workers, 2 * args.executions), profile="off", seed=1)
        if args.darshan:  # the same folder with its logs (hard links: no second copy)
            shutil.copytree(folder, work / f"darshan-{workers}", copy_function=os.link)
            logs[workers] = work / f"darshan-{workers}"
        # the run folder's tables alone: Darshan logs (one per process) are another reader's
        shutil.rmtree(folder / "darshan")
        runs[workers] = folder
        n = sum(1 for _ in folder.glob("procs/*/*"))
        print(f"synthetic run of {workers} workers written in {time.perf_counter() - t0:.0f} s "
              f"({n:,} files in its process folders)")
    # (tree, what, workers) -> seconds of each repetition
    times: dict[tuple[Path, str, int], list[float]] = {}
    cpus: dict[tuple[Path, str, int], list[float]] = {}  # CPU seconds: steadier when shared
    rows = {}
    loads = [os.getloadavg()[0]]
    for i in range(args.repeat):
        for tree in trees:
            for workers, folder in runs.items():
                if args.read:
                    out = _timed([sys.executable, "-c", READ, str(folder)], tree)
                    times.setdefault((tree, "read", workers), []).append(float(out[0]))
                    cpus.setdefault((tree, "read", workers), []).append(float(out[3]))
                    rows[workers] = (int(out[1]), int(out[2]))
                whole = [("whole", folder)] if args.whole else []
                if args.darshan:
                    whole.append(("whole with Darshan logs", logs[workers]))
                for what, run in whole:
                    cmd = [sys.executable, "-m", "correlate.cli", str(run), "--no-reports",
                           "-o", str(work / f"out-{i}")]
                    *_out, wall, cpu = _timed(cmd, tree)
                    times.setdefault((tree, what, workers), []).append(float(wall))
                    cpus.setdefault((tree, what, workers), []).append(float(cpu))
                    shutil.rmtree(work / f"out-{i}")
            loads.append(os.getloadavg()[0])
    load = f"load average (1 min) {min(loads):.1f} to {max(loads):.1f} during the runs"
    for tree in trees:
        if args.read:
            print(f"\nreading the run folder (run_folder.load + its transitions), "
                  f"{args.executions:,} executions, medians of {args.repeat} interleaved runs; "
                  f"{load}; tree {tree}")
            print("| worker processes | rows (transitions + executions) | rejects | seconds | "
                  "ratio | CPU seconds | ratio |")
            print("|---:|---:|---:|---:|---:|---:|---:|")
            base = statistics.median(times[tree, "read", 4])
            cbase = statistics.median(cpus[tree, "read", 4])
            for workers in runs:
                m = statistics.median(times[tree, "read", workers])
                c = statistics.median(cpus[tree, "read", workers])
                print(f"| {workers:,} | {rows[workers][0]:,} | {rows[workers][1]} | {m:.2f} | "
                      f"{m / base:.2f}x | {c:.2f} | {c / cbase:.2f}x |")
        for what in ("whole", "whole with Darshan logs"):
            if (tree, what, 4) not in times:
                continue
            print(f"\n`correlate RUN --no-reports` ({what}): wall seconds of the command, "
                  f"medians of {args.repeat} interleaved runs; {load}; tree {tree}")
            print("| worker processes | seconds (each run) | median | ratio | CPU seconds "
                  "(median) | ratio |\n|---:|---|---:|---:|---:|---:|")
            base = statistics.median(times[tree, what, 4])
            cbase = statistics.median(cpus[tree, what, 4])
            for workers in runs:
                t = times[tree, what, workers]
                c = statistics.median(cpus[tree, what, workers])
                print(f"| {workers:,} | {', '.join(f'{x:.1f}' for x in t)} | "
                      f"{statistics.median(t):.2f} | {statistics.median(t) / base:.2f}x | "
                      f"{c:.2f} | {c / cbase:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-tree", type=Path, default=None)
    ap.add_argument("--sizes", action="store_true")
    ap.add_argument("--files", action="store_true")
    ap.add_argument("--heaviest", action="store_true",
                    help="--files: every table a process can write, --profile yappi")
    ap.add_argument("--read", action="store_true")
    ap.add_argument("--whole", action="store_true",
                    help="time the whole `correlate RUN --no-reports` on --read's folders")
    ap.add_argument("--darshan", action="store_true",
                    help="time the whole `correlate RUN --no-reports` on --read's folders "
                         "with their Darshan logs")
    ap.add_argument("--tree", type=Path, action="append", default=None,
                    help="--read/--whole/--darshan: a checkout whose correlate is timed, "
                         "repeatable, interleaved (default: this one)")
    ap.add_argument("--tasks", type=int, default=20_000)
    ap.add_argument("--profile", default="off", help="--sizes: the collectors' profile mode")
    ap.add_argument("--flushes", type=int, default=120)
    ap.add_argument("--many", type=int, default=1000)
    ap.add_argument("--executions", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-run-format-"))
    try:
        if args.sizes:
            sizes(args, work)
        if args.files:
            files(args, work)
        if args.read or args.whole or args.darshan:
            read(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
