"""Darshan logs of a job script's helper commands (``sleep``, ``uname``, ``mpiexec``…): the
exported ``LD_PRELOAD`` reaches every command a batch script runs, and where the runtime does
not apply the generated config's ``APP_EXCLUDE`` (before Darshan 3.4.0, or a user's own
``DARSHAN_APP_EXCLUDE``) they write logs of their own. Their I/O is named as such, by the
command Darshan recorded for the process, not as an unknown process's."""

from __future__ import annotations

import polars as pl

from correlate.attribution.shares import UNKNOWN_PROCESS
from correlate.schema.run import APP_EXCLUDE

#: the reasons of processes known only from their Darshan log (role unknown, or ``other``:
#: a log whose process is no scheduler, worker, nanny or client of the run)
NOT_DASK = (UNKNOWN_PROCESS, "other process")


def helper_reason(app: pl.Expr) -> pl.Expr:
    """The unattributed reason of a helper command's I/O (ends in " process": a process's
    own, known and no task's, as ``summary`` counts it)."""
    return pl.format("helper command {} of the job script: not a Dask process",
                     app.str.extract(r"([^/]+)$"))


def relabel(unattributed: pl.DataFrame, logs: pl.DataFrame) -> pl.DataFrame:
    """``unattributed`` with the rows of processes known only from their Darshan log
    (``NOT_DASK``) whose log's command is a helper's (``correlate.schema.run.HELPER_APPS``) named so (``logs``: the run's
    ``darshan_logs``, host, pid, exe)."""
    if unattributed.is_empty() or logs.is_empty():
        return unattributed
    apps = (logs.select("host", "pid", app=pl.col("exe").str.extract(r"^\s*(\S+)"))
            .filter(pl.col("app").str.contains(APP_EXCLUDE)).drop_nulls("pid"))
    if apps.is_empty():
        return unattributed
    rows = unattributed.with_row_index("_row").select("_row", "host", "pid", "reason")
    found = (rows.filter(pl.col("reason").is_in(NOT_DASK))
             .join(apps, on="pid", suffix="_log")
             # (a log without DXT names no host: its pid alone)
             .filter(pl.col("host_log").is_null() | (pl.col("host_log") == pl.col("host")))
             .unique("_row", keep="first").select("_row", "app"))
    if found.is_empty():
        return unattributed
    return (unattributed.with_row_index("_row")
            .join(found, on="_row", how="left", maintain_order="left")
            .with_columns(reason=pl.when(pl.col("app").is_not_null())
                          .then(helper_reason(pl.col("app"))).otherwise(pl.col("reason")))
            .drop("_row", "app"))
