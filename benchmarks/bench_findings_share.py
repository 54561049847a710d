"""Benchmark: the share of the critical path and the findings in the whole ``correlate``
command at 1M task executions + 10M DXT segments (the synthetic run of bench_scale.py; issue
59's target: at most 10%).

Side by side in one run, alternating, each in a fresh process: ``correlate RUN --no-reports``
as it is (``with``), and the same command with ``correlate.findings.analyse`` replaced by one
that returns empty tables (``without``). The ``with`` runs also time the stage itself inside
the command. Printed: each pair's wall and CPU (all threads of the process), the medians, the
ratio with ÷ without, and the stage's share of the ``with`` command.

    python benchmarks/bench_findings_share.py [--executions 1000000] [--repeat 3]
                                              [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def child(mode: str, run: Path, out: Path) -> None:
    """Run the command in this process with the findings stage ``mode`` (with: timed, without:
    empty), then print the stage's seconds as JSON."""
    from correlate import findings
    from correlate.cli import main
    from correlate.schema import TABLES

    spent: list[float] = []
    real = findings.analyse

    def timed(*args: Any, **kw: Any) -> findings.Analysis:
        t = time.perf_counter()
        try:
            return real(*args, **kw)
        finally:
            spent.append(time.perf_counter() - t)

    def empty(*_args: Any, **_kw: Any) -> findings.Analysis:
        return findings.Analysis(critical_path=TABLES["critical_path"].empty(),
                                 findings=TABLES["findings"].empty(),
                                 summary={"critical_path": None, "findings": []})

    # (the engine calls findings.analyse through the package: replaced there)
    setattr(findings, "analyse", timed if mode == "with" else empty)  # noqa: B010
    assert main(["run", str(run), "-o", str(out), "--no-reports"]) == 0
    print(json.dumps({"stage_s": sum(spent)}))


def timed_child(mode: str, run: Path, out: Path) -> dict[str, float]:
    """Wall and CPU seconds of one fresh ``child`` process, and its stage's seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--child", mode, str(run), str(out)],
                          capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"correlate ({mode} findings) failed:\n{proc.stderr[-3000:]}")
    stage = json.loads(proc.stdout.strip().splitlines()[-1])["stage_s"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "stage": stage}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--executions", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None,
                    help="folder for the synthetic run (reused when it is already there)")
    ap.add_argument("--child", nargs=3, metavar=("MODE", "RUN", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return
    sys.path.insert(0, str(REPO))  # testing/ (support code, not installed)
    from testing.synthetic import write_run

    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-findings-share-"))
    n = args.executions
    run = root / f"run-{n}"
    if not (run / "manifest.json").exists():
        t = time.perf_counter()
        write_run(run, workers=8, threads=4, executions=n, segments=10 * n)
        print(f"synthetic run of {n:,} executions and {10 * n:,} segments written in "
              f"{time.perf_counter() - t:.1f} s", flush=True)
    pairs = []
    for i in range(args.repeat):
        w = timed_child("with", run, root / "out-with")
        wo = timed_child("without", run, root / "out-without")
        pairs.append((w, wo))
        print(f"  pair {i + 1}: with findings {w['wall']:.1f} s wall, {w['cpu']:.1f} s CPU "
              f"(the stage {w['stage']:.2f} s); without {wo['wall']:.1f} s wall, "
              f"{wo['cpu']:.1f} s CPU; ×{w['wall'] / wo['wall']:.3f} wall, "
              f"×{w['cpu'] / wo['cpu']:.3f} CPU", flush=True)

    def med(side: int, what: str) -> float:
        return statistics.median(p[side][what] for p in pairs)
    share = statistics.median(p[0]["stage"] / p[0]["wall"] for p in pairs)
    print(f"\n{n:,} executions + {10 * n:,} segments, {len(pairs)} pairs: median with "
          f"{med(0, 'wall'):.1f} s wall / {med(0, 'cpu'):.1f} s CPU, without "
          f"{med(1, 'wall'):.1f} s / {med(1, 'cpu'):.1f} s; ratio ×"
          f"{med(0, 'wall') / med(1, 'wall'):.3f} wall, ×{med(0, 'cpu') / med(1, 'cpu'):.3f} "
          f"CPU; the stage itself {med(0, 'stage'):.2f} s, {share:.1%} of the command "
          "(target ≤ 10%)")


if __name__ == "__main__":
    main()
