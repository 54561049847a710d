"""Spill per key: whose data a worker wrote to disk, how much, and what reading it back cost.

Dask's spill store (``distributed.spill``, over ``zict.File``) writes one file per key under
``<local_directory>/storage/``, named ``quote(str(key), safe="")`` followed by ``#<n>`` (a
counter, since zict 3; without it before): a string key ``x-1`` is ``x-1#0``, a tuple key
``('x', 3)`` is ``%28%27x%27%2C%203%29#4``. ``str(key)`` is how every source renders keys
(``correlate.frames.keys``), so the file name gives the key exactly. Each write of a key is a new file
(a new counter), so the files written count the times it was spilled.

Dask's own ``disk-read`` startstops (raw worker clock) say how long an execution waited for
its inputs to be read back before it started; they need no Darshan.
"""

from __future__ import annotations

from urllib.parse import unquote

import polars as pl

from correlate.attribution.shares import IO_SECONDS

STORAGE = "/storage/"


def spill_keys(segments: pl.DataFrame, processes: pl.DataFrame) -> pl.Series:
    """Per segment (same order): the key whose spill file it read or wrote, else null. Only
    segments not wholly given to an execution (``attributed_weight`` < 1, when present) are
    looked at, and only their paths under their process's storage folder."""
    local = processes.select("host", "pid", storage=pl.col("local_directory") + STORAGE
                             ).drop_nulls("storage").unique(["host", "pid"])
    loose = (segments.select(pl.arg_where(pl.col("attributed_weight") < 1)).to_series()
             if "attributed_weight" in segments.columns else None)
    rest = segments.select("host", "pid", "path")
    rest = rest if loose is None else rest[loose]
    rows = pl.int_range(pl.len(), dtype=pl.UInt32) if loose is None else pl.lit(loose)
    found = (rest.with_columns(row=rows).join(local, on=["host", "pid"], how="inner")
             .filter(pl.col("path").str.starts_with(pl.col("storage")))
             .select("row", name=pl.col("path").str.slice(pl.col("storage").str.len_chars())))
    found = found.filter(~pl.col("name").str.contains("/", literal=True)).with_columns(
        pl.col("name").str.replace(r"#\d+$", ""))
    keys = pl.Series("spill_key", [None] * segments.height, pl.String)
    if found.is_empty():
        return keys
    names = found.get_column("name")
    distinct = names.unique()  # a file per spill: few, unquoted one by one
    return keys.scatter(found.get_column("row"), names.replace_strict(
        distinct, [unquote(n) for n in distinct], return_dtype=pl.String))


def storage_keys(records: pl.DataFrame, processes: pl.DataFrame, known: pl.Series
                 ) -> pl.Series:
    """Per row of ``records`` (host, pid, path; same order): the key whose spill file the
    path is, else null. A file right below a ``storage/`` folder, its name the quoted key and
    ``#<n>``: under the process's local directory where the run recorded it; elsewhere (an
    imported run names no local directory) only a name that is the text of a key of the run
    (``known``), so that no other ``storage/`` folder is taken for Dask's."""
    local = processes.select("host", "pid", storage=pl.col("local_directory") + STORAGE
                             ).drop_nulls("storage").unique(["host", "pid"])
    rows = records.select("host", "pid", "path").with_row_index("row").join(
        local, on=["host", "pid"], how="left", nulls_equal=True)
    named = rows.with_columns(name=pl.col("path").str.extract(r"/storage/([^/]+)$", 1)).filter(
        pl.col("name").is_not_null()
        & (pl.col("storage").is_null() | pl.col("path").str.starts_with(pl.col("storage"))))
    names = named.get_column("name").str.replace(r"#\d+$", "").unique()
    # a file per spill: few names, unquoted one by one (a join, not a scatter into a column of
    # nulls: polars 2.1 then groups equal texts apart)
    unquoted = pl.DataFrame({"bare": names, "spill_key": [unquote(n) for n in names]},
                            schema={"bare": pl.String, "spill_key": pl.String})
    found = (named.with_columns(bare=pl.col("name").str.replace(r"#\d+$", ""))
             .join(unquoted, on="bare")
             .filter(pl.col("storage").is_not_null()
                     | pl.col("spill_key").is_in(known.unique().implode()))
             .select("row", "spill_key"))
    return (records.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"))
            .join(found, on="row", how="left", maintain_order="left")
            .get_column("spill_key"))


def counter_spill_io(records: pl.DataFrame, keys: pl.Series) -> pl.DataFrame:
    """``spill_io``'s frame from counter records (``shares.darshan_records``: one row per
    process, file and op) of spill files (``keys``: their ``storage_keys``): each file is one
    spill of its key, written and read back whole."""
    own = records.with_columns(key=keys).filter(pl.col("key").is_not_null())
    return own.group_by("host", "pid", "key", pl.col("op").cast(pl.String)).agg(
        bytes=pl.col("bytes").sum().cast(pl.Float64), io_time_s=pl.col("io_time_s").sum(),
        files=pl.col("path").n_unique().cast(pl.Int64))


def spill_io(segments: pl.DataFrame, key: pl.Series) -> pl.DataFrame:
    """host, pid, key, op, bytes, io_time_s, files: the spill I/O of one or more processes per
    key and direction (aligned segments: ``host_start_ns``/``host_stop_ns``; ``key``: their
    ``spill_keys``)."""
    own = segments.select("host", "pid", "op", "path", "length", io_s=IO_SECONDS).with_columns(
        key=key).filter(pl.col("key").is_not_null())
    return own.group_by("host", "pid", "key", pl.col("op").cast(pl.String)).agg(
        bytes=pl.col("length").sum().cast(pl.Float64), io_time_s=pl.col("io_s").sum(),
        files=pl.col("path").n_unique().cast(pl.Int64))


def per_key(spill: pl.DataFrame) -> pl.DataFrame:
    """key → spilled_bytes, spill_write_s, spill_writes, unspilled_bytes, unspill_read_s
    (over every worker that spilled it)."""
    def by_op(op: str, col: str) -> pl.Expr:
        return pl.col(col).filter(pl.col("op") == op).sum()
    return spill.group_by("key").agg(
        spilled_bytes=by_op("write", "bytes"), spill_write_s=by_op("write", "io_time_s"),
        spill_writes=by_op("write", "files"), unspilled_bytes=by_op("read", "bytes"),
        unspill_read_s=by_op("read", "io_time_s"))


def per_execution(ex: pl.DataFrame, spill: pl.DataFrame, counted: bool
                  ) -> tuple[pl.DataFrame, int | None]:
    """execution_id → its key's spill figures (``per_key``), on the key's last execution; zero
    where the run's Darshan logs count every file (``counted``: DXT, or POSIX counters) and
    none is the key's spill, null where no log did; null on a spilled key's other executions
    (which of its runs wrote the files is not known). Returned as the rows of the executions
    whose figures are not that zero or null (a spilled key's executions) and the figure of
    every execution without a row: a big run's executions would otherwise hold a column of
    zeros per figure until the tasks table is made."""
    keyed = per_key(spill)
    absent = 0 if counted else None
    if keyed.is_empty():  # (the usual case: no string group-by over every key)
        return (keyed.drop("key").select(pl.lit(0, pl.Int64).alias("execution_id"), pl.all())
                .clear(), absent)
    # (the columns it reads first: a group-by of every column of the executions copies them)
    last = ex.select("key", "execution_id").group_by("key").agg(pl.col("execution_id").max())
    # (the spilled keys, read off file names, as text: coded like the engine's to join them)
    keyed = keyed.with_columns(pl.col("key").cast(last.schema["key"]))
    figures = last.join(keyed, on="key", how="inner").drop("key")
    if not counted:
        return figures, absent
    earlier = (ex.select("key", "execution_id").join(figures.select("execution_id"),
                                                     on="execution_id", how="anti")
               .join(keyed.select("key"), on="key", how="semi").drop("key"))
    return pl.concat([figures, earlier], how="diagonal"), absent


def input_read_back(startstops: pl.DataFrame) -> pl.DataFrame:
    """key, worker → input_read_back_s: Dask's ``disk-read`` time for the inputs of that
    task's execution on that worker."""
    return startstops.filter(pl.col("action") == "disk-read").group_by("key", "worker").agg(
        input_read_back_s=(pl.col("reported_stop_ns") - pl.col("reported_start_ns")).sum()
        / 1e9)


#: what Dask's ``disk-read`` startstop of an execution measures (distributed's
#: ``Worker._prepare_args_for_execution``: the wall time taking its inputs out of the worker's
#: store, recorded when above 5 ms), beside what Darshan measures of it
READ_BACK_MEANS = ("Dask's disk-read: the wall time an execution's inputs took to come out "
                   "of the worker's store (reading the files, unpickling, and writing other "
                   "keys out to make room), each recorded when above 5 ms; Darshan's read "
                   "time: only the time inside the read calls of the spill files")


def read_back(startstops: pl.DataFrame, tasks: pl.DataFrame, segments: pl.LazyFrame,
              traced: bool) -> dict[str, float | None]:
    """Dask's ``disk-read`` time of the executions' inputs, split by what the DXT segments of
    the spill files (``attribution`` spill) show inside those windows, on the same process:
    seconds and bytes in read calls, in write calls (keys written out to make room), and the
    rest (unpickling, the store's own work). Darshan's figures are null without DXT
    (``traced``) and for the windows of a worker whose clock offset no execution gives."""
    win = startstops.filter(pl.col("action") == "disk-read").select(
        "worker", start=pl.col("reported_start_ns"), stop=pl.col("reported_stop_ns"))
    dask_s = float((win["stop"] - win["start"]).sum()) / 1e9 if win.height else 0.0
    out: dict[str, float | None] = {"dask_disk_read_s": dask_s, "in_read_calls_s": None,
                                    "read_bytes": None, "in_write_calls_s": None,
                                    "write_bytes": None, "rest_s": None}
    if not traced or win.is_empty():
        return out
    # the worker's clock onto the run timeline, as its executions were placed (disk-read
    # startstops are on the raw worker clock, as the executions' local times)
    offsets = (tasks.filter(pl.col("local_start_ns").is_not_null()
                            & pl.col("start_ns").is_not_null())
               .group_by("worker").agg(pl.col("host").first(), pl.col("pid").first(),
                                       off=(pl.col("start_ns") - pl.col("local_start_ns"))
                                       .median().round().cast(pl.Int64)))
    w = (win.join(offsets, on="worker", how="inner")
         .select("host", "pid", w0=pl.col("start") + pl.col("off"),
                 w1=pl.col("stop") + pl.col("off")).sort("w0"))
    if w.height < win.height:  # a window no offset places: its split is unknown
        return out
    segs = (segments.filter(pl.col("attribution") == "spill")
            .select("host", "pid", pl.col("op").cast(pl.String), "length", "start_ns",
                    "stop_ns").collect()
            .with_columns(mid=(pl.col("start_ns") + pl.col("stop_ns")) // 2).sort("mid"))
    # (both sorted by time: within each process too)
    inside = segs.join_asof(w, left_on="mid", right_on="w0", by=["host", "pid"],
                            strategy="backward", check_sortedness=False
                            ).filter(pl.col("mid") <= pl.col("w1"))
    inside = inside.with_columns(
        s=((pl.min_horizontal("stop_ns", "w1") - pl.max_horizontal("start_ns", "w0"))
           .clip(lower_bound=0) / 1e9))

    def of(op: str, col: str) -> float:
        return float(inside.filter(pl.col("op") == op)[col].sum())
    read_s, write_s = of("read", "s"), of("write", "s")
    return {**out, "in_read_calls_s": read_s, "read_bytes": of("read", "length"),
            "in_write_calls_s": write_s, "write_bytes": of("write", "length"),
            "rest_s": dask_s - read_s - write_s}
