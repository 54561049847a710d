"""Run format 3 against the format before it (issue 44), side by side in one invocation.

1. ``--sizes``: on-disk bytes per task of each table after ``client.map(inc, range(N))`` under
   ``collect --profile off`` (or ``--profile MODE``; LocalCluster 2 workers x 2 threads), this tree and
   ``--baseline-tree`` (format 2: a part per table and flush), and the files each process left.
2. ``--files``: files (and folders) per process after a job that flushes ``--flushes`` times
   (``--flush-interval 0.2`` for ``0.2 × flushes`` seconds of no-op tasks: 120 flushes is a
   10-minute job at the default 5 s), both trees.
3. ``--read``: ``correlate``'s reading of a synthetic run folder (``testing.synthetic``, this
   tree's format) of ``--many`` worker processes against the same executions in 4: seconds of
   ``run_folder.load`` plus reading the transitions (its Darshan logs removed: one per process,
   read by another reader), medians of ``--repeat`` interleaved runs.

CPU per task is ``bench_many_tasks.py --workloads noop --tasks 20000 --modes off
--baseline-tree DIR``.

    python benchmarks/bench_run_format.py --baseline-tree /tmp/base44 [--sizes] [--files] [--read]
"""

from __future__ import annotations

import argparse
import os
import re
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

#: the no-op job of a given length (prints tasks=N)
TIMED_JOB = REPO / "testing" / "timed_job.py"


def collect(tree: Path, out: Path, job: list[str], interval: float | None = None,
            profile: str = "off") -> int:
    """Run ``job`` under ``tree``'s ``collect --profile PROFILE``; the number of tasks it ran."""
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(out), "--profile", profile,
           "--darshan", "off", *(["--flush-interval", str(interval)] if interval else []),
           "--", sys.executable, *job]
    env = dict(os.environ, PYTHONPATH=str(tree))
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
    out = [("this tree (format 3)", REPO)]
    if args.baseline_tree:
        out.insert(0, ("baseline (format 2)", args.baseline_tree.resolve()))
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
    print(f"\nfiles per process after {seconds:.0f} s of no-op tasks flushed every 0.2 s "
          f"({args.flushes} flushes: a {args.flushes * 5 / 60:.0f}-minute job at 5 s)")
    print("| tree | tasks | process | files | folders |\n|---|---:|---|---:|---:|")
    for i, (name, tree) in enumerate(trees(args)):
        out = work / f"files-{i}"
        n = collect(tree, out, [str(TIMED_JOB), str(seconds), "--batch", "200"], interval=0.2)
        for proc, (f, d) in census(out)[1].items():
            print(f"| {name} | {n:,} | {proc.split('-')[0]} | {f:,} | {d} |")


READ = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from correlate.sources import run_folder
    t0 = time.perf_counter()
    frames = run_folder.load(Path(sys.argv[1]))
    n = frames.table("transitions").height + frames.executions.height
    print(time.perf_counter() - t0, n, frames.rejects.height)
""")


def read(args: argparse.Namespace, work: Path) -> None:
    sys.path.insert(0, str(REPO))
    from testing.synthetic import write_run

    runs = {}
    for workers in (4, args.many):
        folder = work / f"read-{workers}"
        t0 = time.perf_counter()
        write_run(folder, workers=workers, threads=2, executions=args.executions,
                  segments=max(20 * workers, 2 * args.executions), profile="off", seed=1)
        # the run folder's tables alone: Darshan logs (one per process) are another reader's
        shutil.rmtree(folder / "darshan")
        runs[workers] = folder
        n = sum(1 for _ in folder.glob("procs/*/*"))
        print(f"synthetic run of {workers} workers written in {time.perf_counter() - t0:.0f} s "
              f"({n:,} files in its process folders)")
    times: dict[int, list[float]] = {w: [] for w in runs}
    rows = {}
    for _ in range(args.repeat):
        for workers, folder in runs.items():
            out = subprocess.run([sys.executable, "-c", READ, str(folder)], capture_output=True,
                                 text=True, check=True, cwd=REPO,
                                 env=dict(os.environ, PYTHONPATH=str(REPO))).stdout.split()
            times[workers].append(float(out[0]))
            rows[workers] = (int(out[1]), int(out[2]))
    base = statistics.median(times[4])
    print(f"\nreading the run folder (run_folder.load + its transitions), {args.executions:,} "
          f"executions, medians of {args.repeat} interleaved runs")
    print("| worker processes | rows (transitions + executions) | rejects | seconds | ratio |")
    print("|---:|---:|---:|---:|---:|")
    for workers, t in times.items():
        m = statistics.median(t)
        print(f"| {workers:,} | {rows[workers][0]:,} | {rows[workers][1]} | {m:.2f} | "
              f"{m / base:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-tree", type=Path, default=None)
    ap.add_argument("--sizes", action="store_true")
    ap.add_argument("--files", action="store_true")
    ap.add_argument("--read", action="store_true")
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
        if args.read:
            read(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
