"""Yappi mode on a long job, side by side with an earlier commit in one run: ``collect
--profile yappi`` around ``long_yappi_job.py N`` (N short tasks of 7 small Python functions,
2 workers × 1 thread, no memory limit), then ``correlate``. Per run: wall time, each worker's
RSS after the first 10,000 tasks and at the end, the executions with function rows (the
summary's ``profile``), the workers that closed cleanly, and whether Yappi was stopped.

The earlier commit runs from a ``git worktree`` of it (``--base``, default: the commit before
the tag pool), with the same interpreter and packages.

    python benchmarks/bench_yappi_long.py [--tasks 40000] [--base a62da18] [--repeat 1]
        [--threads 1] [--only-this]

Also per run: Yappi's clears (done, forced, executions cut; the closing records'
``profile_clears``)
and the RSS after every batch of 10,000 tasks (``--trace``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def run(tree: Path, tasks: int, out: Path, threads: int = 1) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "collectors.launcher", "-o", str(out / "run"),
                           "--darshan", "off", "--profile", "yappi", "--", sys.executable,
                           str(HERE / "long_yappi_job.py"), str(tasks), str(threads)],
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    printed = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    rss, trace = printed.get("rss_mb", ""), printed.get("rss_trace", "")
    clears = {"clears": 0, "forced": 0, "executions_cut": 0}
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from collectors.sink import closing_record  # (this tree's: it reads older folders)

    for proc in (out / "run").glob("procs/worker-*"):
        for name, n in (closing_record(proc) or {}).get("profile_clears", {}).items():
            clears[name] = clears.get(name, 0) + n
    # correlated by this tree's correlate, so both runs are read alike
    subprocess.run([sys.executable, "-m", "correlate.cli", str(out / "run"), "-o",
                    str(out / "out"), "--no-reports"], capture_output=True, text=True,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    summary = json.loads((out / "out" / "summary.json").read_text())
    closed = [p["closed_cleanly"] for p in summary["processes"] if p["role"] == "worker"]
    stopped = any("Yappi was stopped" in w for w in summary["warnings"])
    return {"exit": proc.returncode, "wall_s": wall, "rss_mb": rss,
            "profiled": summary["profile"]["executions_with_functions"],
            "executions": summary["executions"], "closed": closed, "stopped": stopped,
            "clears": clears, "trace": trace}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=40_000)
    ap.add_argument("--base", default="a62da18")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="threads per worker")
    ap.add_argument("--only-this", action="store_true", help="this tree only, no base")
    ap.add_argument("--trace", action="store_true", help="RSS after every 10,000 tasks")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(base),
                        args.base], check=True)
        try:
            print(f"{args.tasks:,} tasks, 2 workers x {args.threads} thread(s), load average "
                  f"{os.getloadavg()[0]:.1f} at start", flush=True)
            trees = (("this tree", REPO),) if args.only_this else (
                ("base " + args.base, base), ("this tree", REPO))
            for i in range(args.repeat):
                for name, tree in trees:
                    got = run(tree, args.tasks, Path(tmp) / f"{i}-{name.split()[0]}",
                              args.threads)
                    print(f"{name:>14}: wall {got['wall_s']:.1f} s; worker RSS MB at 10k,end: "
                          f"{got['rss_mb']}; executions with function rows "
                          f"{got['profiled']:,}/{got['executions']:,}; workers closed cleanly "
                          f"{got['closed']}; Yappi stopped: {got['stopped']}; clears "
                          f"{got['clears']}; exit {got['exit']}; load average "
                          f"{os.getloadavg()[0]:.1f}", flush=True)
                    if args.trace:
                        print(f"{'':>16}RSS MB after each batch: {got['trace']}", flush=True)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)])


if __name__ == "__main__":
    main()
