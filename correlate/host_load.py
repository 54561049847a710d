"""The host's load during the run, per host, from the samples every recording process took
(``host_load`` frame: ``collectors.host_load``, sampled by the workers), for ``summary.json``
``host_load``.

Per host, over the window of the process that sampled longest (first to last sample): the
load average (mean, max), the processes runnable at the sampled instants (mean), the host's
busy CPU (cores: busy CPU seconds over the window), the CPU of the job's workers on the host
over the same window (each one's CPU at the window's ends, interpolated between its samples)
and the rest: **other processes' CPU**, every process but the workers (the scheduler, the
client, Dask's nannies, ``collect`` and everything else on the host). What a system does not tell (no ``/proc``) is null.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from correlate.frames.scalars import integer, number, rounded


def _at(times: np.ndarray, values: np.ndarray, t: float) -> float:
    """A cumulative figure at ``t``: interpolated between samples, held at the ends."""
    return float(np.interp(t, times, values))


def _host(rows: pl.DataFrame) -> dict[str, Any]:
    busy = rows.filter(pl.col("host_busy_s").is_not_null())
    load = rows.get_column("load1").drop_nulls()
    runnable = rows.get_column("runnable_count").drop_nulls()
    cpus = rows.get_column("cpus").drop_nulls()
    out: dict[str, Any] = {
        "samples": rows.height,
        "cpus": integer(cpus.max()),
        "load1_mean": rounded(load.mean(), 3),
        "load1_max": rounded(load.max(), 3),
        "runnable_mean": rounded(runnable.mean(), 3),
        "window_s": None, "busy_cores": None, "recorded_cores": None, "other_cores": None,
    }
    spans = (busy.group_by("pid").agg(first=pl.col("local_time_ns").min(),
                                      last=pl.col("local_time_ns").max())
             .with_columns(span=pl.col("last") - pl.col("first"))
             .sort("span", "pid", descending=[True, False]))
    if spans.is_empty() or spans.row(0, named=True)["span"] <= 0:
        return out
    ref = spans.row(0, named=True)
    t0, t1 = ref["first"], ref["last"]
    window = (t1 - t0) / 1e9
    own = busy.filter(pl.col("pid") == ref["pid"]).sort("local_time_ns")
    busy_s = (number(own["host_busy_s"][-1]) or 0.0) - (number(own["host_busy_s"][0]) or 0.0)
    recorded = 0.0
    for _pid, p in rows.filter(pl.col("process_cpu_s").is_not_null()).sort(
            "local_time_ns").group_by("pid", maintain_order=True):
        times = p["local_time_ns"].to_numpy().astype(float)
        cpu = p["process_cpu_s"].to_numpy()
        recorded += _at(times, cpu, t1) - _at(times, cpu, t0)
    out.update(window_s=round(window, 3), busy_cores=round(busy_s / window, 3),
               recorded_cores=round(recorded / window, 3),
               # busy and recorded CPU come from different counters (ticks, rusage): a host
               # running nothing else can read a hair below zero, which is none
               other_cores=round(max(busy_s - recorded, 0.0) / window, 3))
    return out


def summary(samples: pl.DataFrame) -> list[dict[str, Any]]:
    """One entry per host (empty: the run recorded no load, e.g. an imported run)."""
    return [{"host": host, **_host(rows)}
            for (host,), rows in samples.sort("host").group_by("host", maintain_order=True)]
