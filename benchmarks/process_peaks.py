"""Benchmark: the peak resident memory of each process a command starts. Runs the command,
reads every process of its tree from /proc each 0.5 s, and prints its wall time, the tree's
peak (the sum at one reading) and the largest processes' peaks with their command lines:
``correlate RUN --cluster local:N`` runs a LocalCluster's workers (and the nannies that start
them) beside the driver, each with its own memory, which ``/usr/bin/time`` reports only as
the largest of them. Linux only (reads /proc).

    python benchmarks/process_peaks.py correlate RUN -o OUT --no-reports --cluster local:2
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

PAGE = os.sysconf("SC_PAGE_SIZE")
#: seconds between two readings of the tree
EVERY = 0.5


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (any of its threads), none once it has ended."""
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return found


def resident(pid: int) -> int:
    """``pid``'s resident bytes (0: ended)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except OSError:
        return 0


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read().replace("\0", " ").strip()[:100]
    except OSError:
        return "(ended)"


def tree(root: int) -> list[int]:
    todo, seen = [root], []
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo += children(pid)
    return seen


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    began = time.perf_counter()
    proc = subprocess.Popen(sys.argv[1:])
    peaks: dict[int, int] = {}
    names: dict[int, str] = {}
    tree_peak = 0
    while proc.poll() is None:
        total = 0
        for pid in tree(proc.pid):
            rss = resident(pid)
            total += rss
            if rss > peaks.get(pid, 0):
                peaks[pid] = rss
                names.setdefault(pid, command_line(pid))
        tree_peak = max(tree_peak, total)
        time.sleep(EVERY)
    print(f"exit {proc.returncode} after {time.perf_counter() - began:.1f} s; the tree's peak "
          f"{tree_peak / 1e9:.2f} GB (GB: 10^9 bytes)")
    for pid, peak in sorted(peaks.items(), key=lambda p: -p[1])[:6]:
        print(f"  {peak / 1e9:6.2f} GB  pid {pid}  {names[pid]}")
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
