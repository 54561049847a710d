"""The host's load while the job runs: one sample at a worker's start and one per flush
(``host_load_samples``, written in the clock samples' stream: no file of its own; ``correlate``
makes one figure per host of them). Workers sample it: task timings stretch on their hosts.

A sample reads the 1-minute load average and the processes runnable at that instant
(``/proc/loadavg``), the CPU time all CPUs of the host spent busy since boot (``/proc/stat``:
user, nice, system, irq, softirq and steal) and this process's own CPU time: the host's busy
CPU minus the job processes' own is the CPU that other processes took. Off Linux only the load
average is known (``os.getloadavg``); the rest is null, never 0. A sample is two small reads
from procfs, once per flush: cheap beside the flush itself.
"""

from __future__ import annotations

import os
import time
from typing import Any

from collectors.guard import never_raise

#: ``/proc/stat``'s busy fields of the ``cpu`` line: user nice system idle iowait irq softirq
#: steal: everything but idle and iowait
_BUSY = (0, 1, 2, 5, 6, 7)
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _loadavg() -> tuple[float | None, int | None]:
    try:
        with open("/proc/loadavg", "rb") as f:
            fields = f.read().split()
        return float(fields[0]), int(fields[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        try:
            return os.getloadavg()[0], None
        except (OSError, AttributeError):
            return None, None


def _host_busy_s() -> float | None:
    try:
        with open("/proc/stat", "rb") as f:
            ticks = f.readline().split()[1:]
        return sum(int(ticks[i]) for i in _BUSY if i < len(ticks)) / _TICK
    except (OSError, ValueError, IndexError):
        return None


def sample() -> tuple[int, float | None, int | None, int | None, float | None, float]:
    """One ``host_load_samples`` row."""
    load1, runnable = _loadavg()
    t = os.times()
    return (time.time_ns(), load1, runnable, os.cpu_count(), _host_busy_s(), t.user + t.system)


def attach(sink: Any) -> None:
    """Sample now and before every flush of ``sink`` (a ``collectors.sink.ProcessSink`` whose
    tables hold ``host_load_samples``)."""
    def add() -> None:
        sink.append("host_load_samples", sample())

    never_raise(add)()
    sink.before_flush.append(add)  # (the flush guards its hooks)
