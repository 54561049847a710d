"""Darshan records whose file name is doubtful: labelled so, never shown as a plain file read.

Darshan names a record (and its DXT segments) by the path given when the descriptor or stream
was opened, as it resolved it then. Three cases make that name wrong or doubtful:

- a *relative* path: Darshan named the file against a directory it did not record;
- one of the collectors' own files (``proc.json``, a table's ``.arrows`` stream, the closing
  record) outside any ``procs/<role>-<host>-<pid>/`` folder: the collectors write them through
  a directory descriptor (``openat``), and Darshan named them relative to another directory
  (the job's working directory): bytes of ours, on a path where no such file exists;
- a name *the record of opens contradicts*: the process's tasks opened the file, but never in a
  mode that allows the operation Darshan counted (reads of a file opened only for writing):
  Darshan files a descriptor's later calls under the name of what was first opened on it, so a
  reused descriptor's bytes land there.

Only the I/O no task explains is relabelled (``unattributed``): its reason says which case,
and the files tables say the name is doubtful. What the rules cannot see (opens outside task
contexts are not recorded) is not decided: a file no task opened is not contradicted.
"""

from __future__ import annotations

import polars as pl

from correlate.attribution import local_dir

PREFIX = "doubtful path: "
RELATIVE = PREFIX + "relative (Darshan named it against a directory it did not record)"
MISPLACED = (PREFIX + "a collectors' file (proc.json, a table stream) outside any procs/ "
             "folder: ours, written through a directory descriptor and named by Darshan "
             "in another directory")
CONTRADICTED = (PREFIX + "the record of opens contradicts it (the process's tasks opened this "
                "file, never for {op}ing): a reused descriptor's bytes filed under its name")
#: the collectors' files in a process folder (collectors.sink): proc.json and its temp file,
#: the closing record and its reserve, the hook error log, table streams and snapshots, parts
_OURS = (r"/(\.?proc\.json(\.tmp)?|\.?closed\.json(\.tmp|\.reserve)?|hook_errors\.log"
         r"|[^/]+\.arrows|[^/]+\.snapshot\.arrow|snapshot\.arrow|part-\d+\.(arrow|parquet))$")
_PROC_FOLDER = r"/procs/[a-z]+-[^/]+-\d+(\.\d+)?/([^/]+/)?[^/]+$"
#: reasons that already name what the bytes are: kept
_NAMED = ("collector clock marker", local_dir.SPILL, local_dir.P2P, local_dir.LOCK,
          local_dir.FOLDER)


def labels(rows: pl.DataFrame, opens: pl.DataFrame) -> pl.Series:
    """Per row of ``rows`` (host, pid, path, op; same order): why its path is doubtful, else
    null. ``opens``: the record of opens (``file_opens``: host, pid, path, access)."""
    allowed = (opens.group_by("host", "pid", "path").agg(
        known=pl.col("access").is_not_null().all(),
        read=pl.col("access").is_in(["read", "read-write"]).any(),
        write=pl.col("access").is_in(["write", "read-write"]).any())
        if not opens.is_empty() else
        pl.DataFrame(schema={"host": pl.String, "pid": pl.Int64, "path": pl.String,
                             "known": pl.Boolean, "read": pl.Boolean, "write": pl.Boolean}))
    r = rows.select("host", "pid", "path", pl.col("op").cast(pl.String)).join(
        allowed, on=["host", "pid", "path"], how="left", nulls_equal=True,
        maintain_order="left")
    path = pl.col("path")
    contradicted = pl.col("known").fill_null(False) & (
        ((pl.col("op") == "read") & ~pl.col("read").fill_null(True))
        | ((pl.col("op") == "write") & ~pl.col("write").fill_null(True)))
    # (Darshan's own names of the standard streams, ``<STDOUT>``…, are no paths)
    relative = (path.is_not_null() & ~path.str.starts_with("/")
                & ~path.str.contains(r"^<[A-Z]+>$"))
    return r.select(
        pl.when(relative).then(pl.lit(RELATIVE))
        .when(path.str.contains(_OURS) & ~path.str.contains(_PROC_FOLDER))
        .then(pl.lit(MISPLACED))
        .when(contradicted)
        .then(pl.format(CONTRADICTED.replace("{op}", "{}"), pl.col("op")))
        .alias("doubt")).to_series()


def relabel(unattributed: pl.DataFrame, opens: pl.DataFrame) -> pl.DataFrame:
    """``unattributed`` with the reason of each row whose path is doubtful saying why (rows
    whose reason already names what the bytes are keep it)."""
    if unattributed.is_empty():
        return unattributed
    doubt = labels(unattributed, opens)
    # a reason that names the bytes (the spill store, a non-Dask process…) stays, unless the
    # file is ours: more precise, and known too
    keep = ((pl.col("reason").is_in(_NAMED) | pl.col("reason").str.ends_with(" process"))
            & (doubt != MISPLACED).fill_null(True))
    return unattributed.with_columns(
        reason=pl.when(doubt.is_not_null() & ~keep).then(doubt).otherwise(pl.col("reason")))


def is_doubtful(reason: pl.Expr) -> pl.Expr:
    """An ``unattributed`` reason that says the path is doubtful."""
    return reason.str.starts_with(PREFIX)
