"""Yappi mode on a long job, side by side with an earlier commit in one run: ``collect
--profile yappi`` around ``long_yappi_job.py N`` (N short tasks of 7 small Python functions,
2 workers × 1 thread, no memory limit), then ``correlate``. Per run: wall time, each worker's
RSS after the first 10,000 tasks and at the end, the executions with function rows (the
summary's ``profile``), the workers that closed cleanly, and whether Yappi was stopped.

The earlier commit runs from a ``git worktree`` of it (``--base``, default: the commit before
the tag pool), with the same interpreter and packages.

    python benchmarks/bench_yappi_long.py [--tasks 40000] [--base a62da18] [--repeat 1]
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


def run(tree: Path, tasks: int, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "collectors.launcher", "-o", str(out / "run"),
                           "--darshan", "off", "--profile", "yappi", "--", sys.executable,
                           str(HERE / "long_yappi_job.py"), str(tasks)],
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    rss = next((line.split("=", 1)[1] for line in proc.stdout.splitlines()
                if line.startswith("rss_mb=")), "")
    # correlated by this tree's correlate, so both runs are read alike
    subprocess.run([sys.executable, "-m", "correlate.cli", str(out / "run"), "-o",
                    str(out / "out"), "--no-reports"], capture_output=True, text=True,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    summary = json.loads((out / "out" / "summary.json").read_text())
    closed = [p["closed_cleanly"] for p in summary["processes"] if p["role"] == "worker"]
    stopped = any("Yappi was stopped" in w for w in summary["warnings"])
    return {"exit": proc.returncode, "wall_s": wall, "rss_mb": rss,
            "profiled": summary["profile"]["executions_with_functions"],
            "executions": summary["executions"], "closed": closed, "stopped": stopped}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=40_000)
    ap.add_argument("--base", default="a62da18")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(base),
                        args.base], check=True)
        try:
            print(f"{args.tasks:,} tasks, load average {os.getloadavg()[0]:.1f} at start")
            for i in range(args.repeat):
                for name, tree in (("base " + args.base, base), ("this tree", REPO)):
                    got = run(tree, args.tasks, Path(tmp) / f"{i}-{name.split()[0]}")
                    print(f"{name:>14}: wall {got['wall_s']:.1f} s; worker RSS MB at 10k,end: "
                          f"{got['rss_mb']}; executions with function rows "
                          f"{got['profiled']:,}/{got['executions']:,}; workers closed cleanly "
                          f"{got['closed']}; Yappi stopped: {got['stopped']}; exit {got['exit']}")
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)])


if __name__ == "__main__":
    main()
