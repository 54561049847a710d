"""Function profiles per execution: the collectors' profile rows (each tagged with the
execution that made it, ``execution_seq``) joined to the numbered executions, one process at a
time, as the ``task_functions`` output table."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import polars as pl

from correlate.frames.per_process import Process, by_process
from correlate.frames.sorting import sorted_for_output
from correlate.schema import TABLES, conform


def functions_per_execution(func_stats: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    """One process's profile rows tagged with an execution → its ``task_functions`` rows: the
    rows of one function in one execution summed (the key is joined after summing: carried
    through the join it tripled the join's memory).

    A function has one row per execution and thread, and a task runs on one thread, so rows to
    sum are rare (two code objects with one identity, such as two lambdas on one line). They
    can only be among the rows whose (execution, line, clock) repeats, a check on integers;
    only those go through the group-by on the string columns."""
    ex = executions.filter(pl.col("execution_seq").is_not_null()).select(
        "execution_seq", "execution_id")
    function = ["module", "name", "file", "line", "clock", "ncall_kind"]
    rows = func_stats.select(*function, "ncall", "tsub_s", "ttot_s", "execution_seq").join(
        ex, on="execution_seq", how="inner").drop("execution_seq")
    maybe_repeated = rows.select(pl.struct("execution_id", "line", "clock").is_duplicated()
                                 ).to_series()
    if maybe_repeated.any():
        summed = rows.filter(maybe_repeated).group_by("execution_id", *function).agg(
            ncall=pl.col("ncall").sum(), tsub_s=pl.col("tsub_s").sum(),
            ttot_s=pl.col("ttot_s").sum())
        rows = pl.concat([rows.filter(~maybe_repeated).select(summed.columns), summed])
    return rows.join(executions.select("execution_id", "key"), on="execution_id", how="left")


def functions_by_process(rows_per_process: Iterable[tuple[Process, pl.DataFrame]],
                         ex: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """``task_functions`` one process at a time (the join and group-by of one process's
    profile rows alive at once), in the order of ``rows_per_process``: output order when it
    is ``process_order`` (``execution_id`` runs over processes so: ``number_executions``)."""
    # (the columns the join reads, as slices where each process's rows are together: a
    # partition copies what it is given, and a big run's executions are gigabytes)
    executions = by_process(ex.select("host", "pid", "execution_seq", "execution_id", "key"))
    table = TABLES["task_functions"]
    for process, rows in rows_per_process:
        own = executions.get(process)
        if own is not None:
            yield sorted_for_output(conform(functions_per_execution(rows, own),
                                            table, path="task_functions"), table)
