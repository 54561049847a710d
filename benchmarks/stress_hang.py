"""Stress: does any collector mode hang a job? Runs ``stress_hang_job.py`` under ``collect`` in
every profile mode, ``--repeat`` times each, with a CPU burner process on each core, and counts
the runs that finished and those still running after ``--timeout`` seconds (killed: a hang).
``--unguarded`` also runs the job with the collectors' guard of sys._current_frames() taken off
again in each worker (the control). Use ``--python`` to run the job with another interpreter
(a venv with this project installed). Prints one line per mode and a table at the end.

    python benchmarks/stress_hang.py --repeat 5 [--unguarded] [--python /tmp/venv-3.13.0/bin/python]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("sample", "yappi", "yappi-all", "yappi-cpu", "off")


def burn(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        sum(range(10_000))


def run_once(python: str, mode: str, unguarded: bool, timeout: float) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "STRESS_UNGUARDED": "1" if unguarded else "0",
               "PYTHONPATH": str(HERE.parent)}
        cmd = [python, "-m", "collectors.launcher", "-o", f"{tmp}/run", "--darshan", "off",
               "--profile", mode, "--", python, str(HERE / "stress_hang_job.py")]
        job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, start_new_session=True)
        try:
            out, err = job.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.communicate()
            return "hung"
        return "ok" if job.returncode == 0 else f"exit {job.returncode}: {err[-300:]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--unguarded", action="store_true")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    version = subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True).stdout.strip()
    variants = [(m, False) for m in args.modes.split(",")]
    if args.unguarded:
        variants += [(m, True) for m in args.modes.split(",")]
    results: dict[tuple[str, bool], list[str]] = {v: [] for v in variants}
    for _ in range(args.repeat):
        for mode, unguarded in variants:
            burners = [multiprocessing.Process(target=burn, args=(time.monotonic()
                                                                  + args.timeout,))
                       for _ in range(os.cpu_count() or 1)]
            for b in burners:
                b.start()
            try:
                outcome = run_once(args.python, mode, unguarded, args.timeout)
            finally:
                for b in burners:
                    b.terminate()
                    b.join()
            results[mode, unguarded].append(outcome)
            print(f"python {version} {mode}{' unguarded' if unguarded else ''}: {outcome}",
                  flush=True)
    print(f"\n| Python | mode | guard | runs | finished | hung (killed after {args.timeout:g} s) |")
    print("|---|---|---|---|---|---|")
    for (mode, unguarded), outcomes in results.items():
        print(f"| {version} | {mode} | {'off' if unguarded else 'on'} | {len(outcomes)} | "
              f"{outcomes.count('ok')} | {outcomes.count('hung')} |")


if __name__ == "__main__":
    main()
