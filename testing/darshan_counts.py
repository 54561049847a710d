"""What libdarshan-util itself reads from logs: bytes, calls and time per (pid, path) from the
POSIX or STDIO counters, through PyDarshan's bundled library (``darshan.backend.cffi_backend``),
so a test's expected figures come from Darshan's own reader, not from our decoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

#: output column -> the module's counter (``{m}`` is POSIX or STDIO); ``*_s`` are fcounters
COUNTERS = {"read": "{m}_BYTES_READ", "written": "{m}_BYTES_WRITTEN", "reads": "{m}_READS",
            "writes": "{m}_WRITES", "read_s": "{m}_F_READ_TIME", "write_s": "{m}_F_WRITE_TIME"}


def counter_bytes(folder: Path, module: str) -> pl.DataFrame:
    """pid, path and ``COUNTERS`` (summed) of every ``module`` record of the logs in
    ``folder`` (the pid from the non-MPI log name, ``…_id<jobid>-<pid>_…``)."""
    from darshan.backend import cffi_backend as B

    names, fnames = B.counter_names(module), B.fcounter_names(module)
    where = {col: (fnames if col.endswith("_s") else names).index(c.format(m=module))
             for col, c in COUNTERS.items()}
    rows = []
    for log in sorted(folder.glob("*.darshan")):
        pid = int(log.name.split("_id", 1)[1].split("-")[1].split("_")[0])
        h = B.log_open(str(log))
        try:
            paths = B.log_get_name_records(h)
            while (rec := B.log_get_record(h, module, dtype="numpy")) is not None:
                c = np.atleast_2d(rec["counters"])[0]
                f = np.atleast_2d(rec["fcounters"])[0]
                rows.append({"pid": pid, "path": paths[rec["id"]],
                             **{col: float(f[i]) if col.endswith("_s") else int(c[i])
                                for col, i in where.items()}})
        finally:
            B.log_close(h)
    schema = {"pid": pl.Int64, "path": pl.String,
              **{col: pl.Float64 if col.endswith("_s") else pl.Int64 for col in COUNTERS}}
    return pl.DataFrame(rows, schema=schema).group_by("pid", "path").agg(
        pl.col(*COUNTERS).sum())
