"""Benchmark: where each stage of ``correlate`` reaches its peak memory. Correlates RUN into
OUT (tables only, as ``correlate RUN -o OUT --no-reports`` does) in this process while a
thread reads the resident memory every 10 ms; at each new high-water mark of a stage it
keeps the main thread's innermost calls inside correlate, and prints, stage by stage, its
wall time, the memory it began with, its peak and where the peak was reached. A stage's peak
is what the stage holds on entry plus its own transient tables: the place named is where the
transient was largest. (Freed memory stays resident for the allocator's decay time: run with
``_RJEM_MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0`` to see what is live.)

    python benchmarks/stage_peaks.py RUN OUT
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import traceback
from pathlib import Path

from correlate.frames import allocator

allocator.configure()  # (before polars loads, as the command does)

from correlate import console  # noqa: E402
from correlate.engine import correlate_to  # noqa: E402
from correlate.sources import run_folder  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
#: innermost calls inside correlate named per peak
DEPTH = 5


class Peaks:
    """The high-water mark of the stage begun last, and the calls that reached it."""

    def __init__(self) -> None:
        self.stage, self.peak, self.where, self.began = "load", 0, [""], time.perf_counter()
        self.entry = _rss()
        self.main = threading.main_thread().ident

    def sample(self) -> None:
        rss = _rss()
        if rss > self.peak:
            frame = sys._current_frames().get(self.main)
            stack = traceback.extract_stack(frame) if frame is not None else []
            self.peak, self.where = rss, [
                f"{Path(s.filename).parent.name}/{Path(s.filename).name}:{s.lineno} {s.name}"
                for s in stack if "/correlate/" in s.filename
                and not s.filename.endswith("console.py")][-DEPTH:]

    def next(self, stage: str) -> None:
        now = time.perf_counter()
        print(f"{self.stage}: {now - self.began:.1f} s, at entry {self.entry / 1e9:.2f} GB, "
              f"peak {self.peak / 1e9:.2f} GB at", *self.where, sep="\n    ", flush=True)
        self.stage, self.peak, self.where, self.began = stage, 0, [""], now
        self.entry = _rss()


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path)
    p.add_argument("out", type=Path)
    args = p.parse_args()
    peaks = Peaks()

    def sampler() -> None:
        while True:
            peaks.sample()
            time.sleep(0.01)

    threading.Thread(target=sampler, daemon=True).start()
    begin = console.Progress.begin

    def begin_logged(self: console.Progress, name: str, rows: int | None = None) -> None:
        peaks.next(name)
        begin(self, name, rows)

    console.Progress.begin = begin_logged  # type: ignore[method-assign]
    t = time.perf_counter()
    correlate_to([run_folder.load(args.run)], args.out)
    peaks.next("end")
    print(f"whole: {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
