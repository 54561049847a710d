"""Clock alignment: one timeline for every source, and how sure we are.

Two corrections, both expressed as rows of the ``clocks`` table (``offset_ns`` to add):

- ``darshan`` domain, per (host, pid): Darshan's absolute segment times (header start time +
  relative time) are off the process's ``time.time()`` by milliseconds. Our collectors write
  marker records at known ``time.time_ns()`` instants; the matching DXT segments give the offset
  (median) and its residual (max deviation). Without markers the offset is 0 and the uncertainty
  unknown — say so.
- ``worker`` domain, per (host, pid): a worker's local clock → the scheduler's clock (the run
  timeline) is Dask's own ``scheduler_delay`` estimate (median of the samples; the uncertainty is
  half the median round-trip latency plus the spread of the estimates).

``apply`` adds aligned columns and never overwrites the raw ``local_*`` ones.
"""

from __future__ import annotations

import polars as pl

from correlate.schema import TABLES, conform


def worker_offsets(clock_samples: pl.DataFrame) -> pl.DataFrame:
    """``clocks`` rows (domain worker) from Dask's scheduler_delay samples."""
    samples = clock_samples.filter(pl.col("scheduler_delay_s").is_not_null())
    if samples.is_empty():
        return TABLES["clocks"].empty()
    out = samples.group_by("host", "pid").agg(
        offset_ns=(pl.col("scheduler_delay_s").median() * 1e9).round().cast(pl.Int64),
        spread_ns=((pl.col("scheduler_delay_s").max() - pl.col("scheduler_delay_s").min())
                   * 0.5e9),
        half_latency_ns=(pl.col("latency_s").median() * 0.5e9).fill_null(0.0),
        samples=pl.len().cast(pl.Int64),
    ).with_columns(
        domain=pl.lit("worker"),
        uncertainty_ns=(pl.col("spread_ns") + pl.col("half_latency_ns")).round().cast(pl.Int64),
        method=pl.lit("dask scheduler_delay (median of heartbeat samples)"),
    )
    return conform(out, TABLES["clocks"])


def darshan_offsets(io_segments: pl.DataFrame, clock_markers: pl.DataFrame) -> pl.DataFrame:
    """``clocks`` rows (domain darshan) from marker writes found in the DXT segments."""
    if clock_markers.is_empty() or io_segments.is_empty():
        return TABLES["clocks"].empty()
    writes = io_segments.filter(pl.col("op") == "write").select(
        "host", "pid", "path", "offset", "length", seg_start_ns="local_start_ns")
    matched = clock_markers.join(writes, on=["host", "pid", "path", "offset", "length"],
                                 how="inner")
    if matched.is_empty():
        return TABLES["clocks"].empty()
    diffs = matched.with_columns(diff_ns=pl.col("local_time_ns") - pl.col("seg_start_ns"))
    out = diffs.group_by("host", "pid").agg(
        offset_ns=pl.col("diff_ns").median().round().cast(pl.Int64),
        diffs=pl.col("diff_ns"),
        samples=pl.len().cast(pl.Int64),
    ).with_columns(
        uncertainty_ns=(pl.col("diffs").list.eval(
            (pl.element() - pl.element().median()).abs()).list.max()).round().cast(pl.Int64),
        domain=pl.lit("darshan"),
        method=pl.lit("collector marker writes found in DXT"),
    )
    return conform(out, TABLES["clocks"])


def estimate(clock_samples: pl.DataFrame, io_segments: pl.DataFrame,
             clock_markers: pl.DataFrame) -> pl.DataFrame:
    """All clock offsets of a run, sorted (the ``clocks`` output table)."""
    clocks = pl.concat([worker_offsets(clock_samples),
                        darshan_offsets(io_segments, clock_markers)])
    return clocks.sort("host", "pid", "domain", nulls_last=True)


def _offsets(clocks: pl.DataFrame, domain: str, name: str) -> pl.DataFrame:
    return clocks.filter(pl.col("domain") == domain).select("host", "pid",
                                                            pl.col("offset_ns").alias(name))


def _host_offsets(clocks: pl.DataFrame) -> pl.DataFrame:
    """Median worker offset per host: used for processes on that host without their own."""
    return (clocks.filter(pl.col("domain") == "worker").group_by("host")
            .agg(host_offset_ns=pl.col("offset_ns").median().round().cast(pl.Int64)))


def align_executions(executions: pl.DataFrame, clocks: pl.DataFrame) -> pl.DataFrame:
    """Add ``start_ns``/``stop_ns`` (run timeline) to executions."""
    off = (executions.join(_offsets(clocks, "worker", "w_off"), on=["host", "pid"], how="left",
                           nulls_equal=True)
           .join(_host_offsets(clocks), on="host", how="left", nulls_equal=True))
    shift = pl.coalesce("w_off", "host_offset_ns", pl.lit(0, dtype=pl.Int64))
    return off.with_columns(start_ns=pl.col("local_start_ns") + shift,
                            stop_ns=pl.col("local_stop_ns") + shift).drop("w_off",
                                                                          "host_offset_ns")


def align_segments(io_segments: pl.DataFrame, clocks: pl.DataFrame) -> pl.DataFrame:
    """Add ``host_start_ns``/``host_stop_ns`` (Darshan times corrected onto the process's own
    ``time.time()`` clock, used for attribution) and ``start_ns``/``stop_ns`` (run timeline)."""
    seg = (io_segments.join(_offsets(clocks, "darshan", "d_off"), on=["host", "pid"],
                            how="left", nulls_equal=True)
           .join(_offsets(clocks, "worker", "w_off"), on=["host", "pid"], how="left",
                 nulls_equal=True)
           .join(_host_offsets(clocks), on="host", how="left", nulls_equal=True))
    d = pl.col("d_off").fill_null(0)
    w = pl.coalesce("w_off", "host_offset_ns", pl.lit(0, dtype=pl.Int64))
    return seg.with_columns(
        host_start_ns=pl.col("local_start_ns") + d,
        host_stop_ns=pl.col("local_stop_ns") + d,
    ).with_columns(
        start_ns=pl.col("host_start_ns") + w,
        stop_ns=pl.col("host_stop_ns") + w,
    ).drop("d_off", "w_off", "host_offset_ns")
