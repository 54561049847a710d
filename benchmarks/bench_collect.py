"""Benchmark: what `collect` costs the job. Runs samples/workload.py plain and under `collect`
in each mode, interleaved, several times, in one invocation; prints medians and overhead ratios
of the compute phase (cluster start-up excluded) and of the whole command.

    python benchmarks/bench_collect.py [--repeat 5] [--images 24]

Modes: off (transitions + per-task CPU), sample (default), yappi, yappi-all, yappi-cpu, and
+ Darshan DXT and Darshan counters only (``--dxt off``: darshan-counters) when a runtime is
found (DARSHAN_RUNTIME, darshan-config, common paths). ``--modes plain,darshan,...`` runs some.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"off": 0.03, "sample": 0.15, "darshan": 0.05}


def run(mode: str | None, workdir: Path, images: int, darshan: str | None) -> tuple[float, float]:
    job = [sys.executable, str(REPO / "samples" / "workload.py"), "--out",
           str(workdir / "images"), "--images", str(images)]
    if mode is None:
        cmd = job
    else:
        out = workdir / f"run-{mode}-{time.monotonic_ns()}"
        with_darshan = mode.startswith("darshan")
        profile = "off" if with_darshan else mode
        cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(out), "--profile", profile,
               "--darshan", darshan if with_darshan else "off",
               *(["--dxt", "off"] if mode == "darshan-counters" else []), "--", *job]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    total = time.perf_counter() - t0
    compute = float(re.search(r"compute_seconds=([0-9.]+)", proc.stdout).group(1))
    return compute, total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--images", type=int, default=24)
    ap.add_argument("--modes", default=None, help="comma-separated subset (plain = no collect)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from collectors.darshan_env import find_runtime

    lib, how = find_runtime("auto")
    modes: list[str | None] = [None, "off", "sample", "yappi", "yappi-all", "yappi-cpu"]
    if lib:
        modes += ["darshan", "darshan-counters"]
    if args.modes:
        wanted = set(args.modes.split(","))
        modes = [m for m in modes if (m or "plain") in wanted]
        modes = modes if None in modes else [None, *modes]
    results: dict[str | None, list[tuple[float, float]]] = {m: [] for m in modes}
    work = Path(tempfile.mkdtemp(prefix="bench-collect-"))
    run(None, work, args.images, lib)  # warm caches (imports, page cache)
    for _ in range(args.repeat):
        for m in modes:
            results[m].append(run(m, work, args.images, lib))
    base_c = statistics.median(c for c, _ in results[None])
    base_t = statistics.median(t for _, t in results[None])
    print(f"workload: {args.images} images, 2 workers x 2 threads, {args.repeat} interleaved "
          f"repetitions, medians")
    print(f"{'mode':<18}{'compute s':>10}{'overhead':>10}{'whole s':>9}{'overhead':>10}"
          f"{'target':>8}")
    for m in modes:
        c = statistics.median(x for x, _ in results[m])
        t = statistics.median(x for _, x in results[m])
        name = m or "plain"
        target = f"{TARGETS[m]:.0%}" if m in TARGETS else ""
        print(f"{name:<18}{c:>10.3f}{c / base_c - 1:>+10.1%}{t:>9.2f}{t / base_t - 1:>+10.1%}"
              f"{target:>8}")
    if not lib:
        print(f"darshan: not measured ({how})")
    else:
        print("darshan: profile off + DXT via LD_PRELOAD, vs plain; darshan-counters: the same "
              "with --dxt off")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
