"""Benchmark: ``--memory-limit``'s check before the load, on a run folder (the 1M executions +
10M segments synthetic run: ``python -m testing.synthetic RUN --executions 1000000 --workers 8
--threads 4``).

1. Side by side in fresh processes, ``--repeat`` times interleaved: the row counts of the
   streams and footers (what the check adds), the Darshan logs' records read (done before the
   check now, for the load: moved, not added) and the load after them; wall and CPU seconds and
   each process's peak RSS.
2. ``correlate RUN --memory-limit`` one byte below the need it tells: the time to the refusal
   and the process's peak RSS, against the load's.
3. ``correlate RUN --no-reports`` alone and with ``--cluster local:2``: the need told
   (``memory.need_before_load``) against this process's measured peak RSS (the largest of its
   stages' in ``CORRELATE_STAGE_LOG``: with ``--cluster``, the driver's alone) and the stage
   that set it.

    python benchmarks/bench_memory_limit.py RUN [--repeat 3] [--skip-correlate]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: each step in a fresh process: prints {"wall_s", "cpu_s", "peak_mb", ...}
STEP = r"""
import json, resource, sys, time
from pathlib import Path
from correlate.frames import allocator
allocator.configure()
from correlate.sources import row_counts, run_folder
run, step = Path(sys.argv[1]), sys.argv[2]
darshan = run_folder.read_darshan(run) if step == "load" else None
t, cpu = time.perf_counter(), time.process_time()
if step == "count":
    row_counts.count_tables(run)
elif step == "darshan":
    run_folder.read_darshan(run)
else:
    run_folder.load(run, darshan=darshan)
print(json.dumps({"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - cpu,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3}))
"""


def step(run: Path, name: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", STEP, str(run), name], check=True, cwd=REPO,
                         capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def told(run: Path) -> tuple[int, int, dict[str, int]]:
    from correlate.commands import memory
    from correlate.sources import row_counts

    need = memory.need_before_load(row_counts.count(run))
    return need.alone, need.with_cluster, need.rows


def correlate(run: Path, *extra: str) -> tuple[int, float, list[dict]]:
    """(exit code, wall seconds, stage log) of ``correlate RUN --no-reports`` in a fresh
    process."""
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        log = Path(tmp) / "stages.jsonl"
        t = time.perf_counter()
        code = subprocess.run([sys.executable, "-m", "correlate.cli", "run", str(run), "-o",
                               str(Path(tmp) / "out"), "--no-reports", *extra], cwd=REPO,
                              env={**os.environ, "CORRELATE_STAGE_LOG": str(log)},
                              capture_output=True, text=True).returncode
        wall = time.perf_counter() - t
        stages = ([json.loads(line) for line in log.read_text().splitlines()]
                  if log.exists() else [])
    return code, wall, stages


def refusal_peak_mb(run: Path, limit: int) -> tuple[int, float, float]:
    """(exit code, wall s, peak RSS MB) of a correlate refused at ``limit``."""
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        t = time.perf_counter()
        got = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m",
                              "correlate.cli", "run", str(run), "-o", str(Path(tmp) / "out"),
                              "--no-reports", "--memory-limit", str(limit)], cwd=REPO,
                             capture_output=True, text=True)
    return got.returncode, time.perf_counter() - t, int(got.stderr.split()[-1]) / 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-correlate", action="store_true")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    runs: dict[str, list[dict[str, float]]] = {"count": [], "darshan": [], "load": []}
    for _ in range(args.repeat):
        for name, got in runs.items():
            got.append(step(args.run, name))
    print("step      wall s (median)  CPU s   peak RSS MB   (each in a fresh process)")
    for name, got in runs.items():
        print(f"{name:9} {statistics.median(g['wall_s'] for g in got):14.3f} "
              f"{statistics.median(g['cpu_s'] for g in got):7.3f} "
              f"{max(g['peak_mb'] for g in got):12.0f}")
    load = statistics.median(g["wall_s"] for g in runs["load"])
    count = statistics.median(g["wall_s"] for g in runs["count"])
    print(f"count ÷ load (wall): {count / load:.4f}")
    alone, cluster, rows = told(args.run)
    print(f"told: {alone / 1e9:.2f} GB alone, {cluster / 1e9:.2f} GB with --cluster ({rows})")
    code, wall, peak = refusal_peak_mb(args.run, alone - 1)
    print(f"refused at the need - 1 B: exit {code}, {wall:.2f} s, peak RSS {peak:.0f} MB "
          f"(the load's: {max(g['peak_mb'] for g in runs['load']):.0f} MB)")
    if args.skip_correlate:
        return
    print(f"load average {os.getloadavg()[0]:.1f}")
    for extra, need in (((), alone), (("--cluster", "local:2"), cluster)):
        code, wall, stages = correlate(args.run, "--memory-limit", "64GB", *extra)
        top = max(stages, key=lambda s: s["peak_rss_mb"] or 0)
        print(f"correlate {' '.join(extra) or '(alone)'}: exit {code}, {wall:.1f} s; told "
              f"{need / 1e9:.2f} GB, this process's peak {top['peak_rss_mb'] / 1e3:.2f} GB "
              f"(stage {top['stage']!r}); ratio {need / 1e6 / top['peak_rss_mb']:.2f}")
        for s in stages:
            print(f"    {s['stage']:45} {s['wall_s']:7.1f} s {s['peak_rss_mb']:8.0f} MB")


if __name__ == "__main__":
    main()
