"""What libdarshan-util itself reads from logs: bytes per (pid, path) from the POSIX or STDIO
counters, through PyDarshan's bundled library (``darshan.backend.cffi_backend``), so a test's
expected figures come from Darshan's own reader, not from our decoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl


def counter_bytes(folder: Path, module: str) -> pl.DataFrame:
    """pid, path, read, written of every ``module`` record of the logs in ``folder`` (the pid
    from the non-MPI log name, ``…_id<jobid>-<pid>_…``)."""
    from darshan.backend import cffi_backend as B

    names = B.counter_names(module)
    ir, iw = names.index(f"{module}_BYTES_READ"), names.index(f"{module}_BYTES_WRITTEN")
    rows = []
    for log in sorted(folder.glob("*.darshan")):
        pid = int(log.name.split("_id", 1)[1].split("-")[1].split("_")[0])
        h = B.log_open(str(log))
        try:
            paths = B.log_get_name_records(h)
            while (rec := B.log_get_record(h, module, dtype="numpy")) is not None:
                c = np.atleast_2d(rec["counters"])[0]
                rows.append({"pid": pid, "path": paths[rec["id"]], "read": int(c[ir]),
                             "written": int(c[iw])})
        finally:
            B.log_close(h)
    schema = {"pid": pl.Int64, "path": pl.String, "read": pl.Int64, "written": pl.Int64}
    return pl.DataFrame(rows, schema=schema).group_by("pid", "path").agg(
        pl.col("read", "written").sum())
