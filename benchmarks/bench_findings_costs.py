"""Benchmark: each planted problem's ``cost_s`` against the span saved by removing it.

Every pair of ``tests/engine/findings_job.py`` (the job with one planted problem, and the same
job without it) is recorded under ``collect`` side by side, alternating, ``--repeat`` times, and
correlated; printed per pair and run: the cost of the findings of its kind (their sum, where
the rule made one per prefix), the task window of each job, the window saved (planted −
without) and cost ÷ saved; then the medians. Without a darshan-runtime the jobs' own record of
their I/O calls is written as genuine Darshan logs afterwards, as the tests do.

    python benchmarks/bench_findings_costs.py [--repeat 3] [--pairs small,reread,...]
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JOBS = REPO / "tests" / "engine"

#: planted variant → (the finding's kind, the job without the problem)
PAIRS = {
    "chain": ("serial-section", "apart"),
    "gil": ("thread-contention", "gil-apart"),
    "straggler": ("straggler", "clean"),
    "pinned": ("idle-threads", "clean"),
    "small": ("small-requests", "large"),
    "reread": ("repeated-reads", "once"),
    "meta": ("metadata", "meta-once"),
    "tiny": ("tiny-tasks", "batched"),
    "shared": ("shared-file", "own"),
    "spill": ("spill", "nospill"),
    "stored": ("spill", "nospill"),
    "transfer": ("waiting-for-inputs", "local"),
}


def record(tmp: Path, variant: str, lib: str | None) -> tuple[float, list[dict]]:
    """(the task window, the findings) of one recorded run of ``variant``."""
    sys.path[:0] = [str(JOBS), str(REPO)]
    from collect_job import job_environment

    from correlate.engine import correlate_frames
    from correlate.sources.run_folder import load
    from testing.darshan_writer import write_logs_from_truth

    out, truth_path = tmp / variant, tmp / f"{variant}.truth"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    proc = subprocess.run(
        [sys.executable, "-m", "collectors.launcher", "-o", str(out), "--darshan",
         lib or "off", "--profile", "off", "--", sys.executable, "findings_job.py", variant,
         f"{truth_path},{tmp}"], capture_output=True, text=True, timeout=300, cwd=JOBS,
        env=job_environment(lib))
    if proc.returncode:
        raise SystemExit(f"{variant}: {proc.stderr[-2000:]}")
    truth = pickle.loads(truth_path.read_bytes())
    if truth["io"] and not lib:
        write_logs_from_truth(out, truth["io"])
    result = correlate_frames(load(out))
    tasks = result.tables["tasks"]
    window = (tasks["stop_ns"].max() - tasks["start_ns"].min()) / 1e9
    return window, result.summary["findings"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pairs", default=",".join(PAIRS))
    args = ap.parse_args()
    from collectors.darshan_env import find_runtime

    lib, _how = find_runtime("auto")
    print(f"darshan-runtime: {lib or 'none (logs written from the jobs record)'}")
    print(f"{'planted':>10} {'kind':>15} {'run':>3} {'cost s':>7} {'window':>7} "
          f"{'without':>7} {'saved s':>7} {'cost/saved':>10}")
    for planted in args.pairs.split(","):
        kind, without = PAIRS[planted]
        ratios = []
        for i in range(args.repeat):
            with tempfile.TemporaryDirectory() as d:
                w_planted, found = record(Path(d), planted, lib)
                w_without, _ = record(Path(d), without, lib)
            # (a rule makes one finding per prefix: the cost of removing the problem is theirs
            # together, e.g. spill waited for by two prefixes of one chain)
            costs = [f["cost_s"] for f in found if f["kind"] == kind]
            cost = sum(costs) if costs else None
            saved = w_planted - w_without
            ratio = cost / saved if cost is not None and saved > 0 else None
            ratios += [ratio] if ratio is not None else []
            print(f"{planted:>10} {kind:>15} {i:>3} "
                  f"{cost if cost is not None else float('nan'):7.3f} {w_planted:7.3f} "
                  f"{w_without:7.3f} {saved:7.3f} "
                  f"{ratio if ratio is not None else float('nan'):10.2f}", flush=True)
        if ratios:
            print(f"{planted:>10} {kind:>15} median cost/saved {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
