"""The findings' rules over I/O: small requests and repeated reads (docs/findings.md)."""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.findings.context import Context, finding, span_saved
from correlate.frames.beside import with_beside
from correlate.frames.rows import kept
from correlate.frames.scalars import integer, number

# --- small-requests ----------------------------------------------------------------------

#: a file's requests are small when their mean size is below this
SMALL_REQUEST = 64 * 1024
#: requests at least this large give the run's large-request throughput
LARGE_REQUEST = 1 << 20
#: a file read or written in fewer requests is not a pattern
SMALL_MIN_OPS = 64


def small_requests(ctx: Context) -> list[dict[str, Any]]:
    """Files read or written in requests whose mean size is under ``SMALL_REQUEST``: the time
    inside those requests less what their bytes would take at the best throughput of the run's
    large requests (none in the run: all of it, said in ``partial``)."""
    # (lazily: each step reads its columns only, where a filter of a big run's task_files
    # copies all of them)
    f = (ctx.task_files.lazy().filter(pl.col("io_time_s").is_not_null() & (pl.col("ops") > 0))
         .with_columns(mean=pl.col("bytes") / pl.col("ops")))
    # the best throughput of a file's large requests: the host's, least disturbed by others
    large = f.filter((pl.col("mean") >= LARGE_REQUEST) & (pl.col("io_time_s") > 0)).group_by(
        "op").agg(rate=(pl.col("bytes") / pl.col("io_time_s")).max())
    small = (f.filter((pl.col("mean") < SMALL_REQUEST) & (pl.col("ops") >= SMALL_MIN_OPS))
             .select("execution_id", "key", "path", "op", "bytes", "ops", "io_time_s",
                     pl.col("attribution").cast(pl.String))
             .join(large, on="op", how="left")
             .join(ctx.tasks.lazy().select("execution_id", "prefix"), on="execution_id")
             .collect())
    if small.is_empty():
        return []
    small = small.with_columns(excess_s=(pl.col("io_time_s") - pl.when(pl.col("rate") > 0)
                                         .then(pl.col("bytes") / pl.col("rate"))
                                         .otherwise(0.0)).clip(0.0))
    out = []
    for (prefix,), rows in sorted(small.partition_by("prefix", as_dict=True).items(),
                                  key=lambda kv: str(kv[0][0])):
        per_ex = rows.group_by("execution_id").agg(pl.col("excess_s").sum())
        files = (rows.group_by("path").agg(pl.col("io_time_s").sum(), pl.col("bytes").sum(),
                                          pl.col("ops").sum())
                 .sort("io_time_s", "path", descending=[True, False]))
        top = files.row(0, named=True)
        prefix_io = number(ctx.tasks.select(pl.col("io_time_s").filter(
            pl.col("prefix") == prefix)).to_series().sum()) or 0.0
        n_ops = number(rows.get_column("ops").sum()) or 0.0
        n_bytes = number(rows.get_column("bytes").sum()) or 0.0
        partial = []
        if rows.get_column("rate").is_null().all():
            partial.append("no request of 1 MiB or more in the run to compare with: the cost "
                           "counts all the time inside these requests")
        if rows.get_column("attribution").str.starts_with("counter").any():
            partial.append("no DXT for some: mean sizes from Darshan's POSIX counters")
        out.append(finding(
            "small-requests", span_saved(ctx, per_ex), [str(prefix)],
            rows.sort("io_time_s", descending=True).get_column("key").unique(
                maintain_order=True).to_list(), files.get_column("path").to_list(),
            f"{prefix} moved {_bytes(n_bytes)} in {n_ops:,.0f} requests of "
            f"{_bytes(n_bytes / n_ops)} on average (under {_bytes(SMALL_REQUEST)}), "
            f"{rows.get_column('io_time_s').sum():.3f} s inside them of the prefix's "
            f"{prefix_io:.3f} s of I/O; most in {top['path']} ({top['ops']:,.0f} requests)",
            "read and write in larger requests (a buffer of 1 MiB or more: open(..., "
            "buffering=...), a larger block or chunk size in the library)",
            "; ".join(partial) or None))
    return out


# --- repeated-reads ----------------------------------------------------------------------

#: a file counts when its reads moved at least this many bytes more than its distinct bytes
REPEATED_MIN_BYTES = 1 << 20


#: bits of a read's offset or end below its file's number in one 64-bit key: offsets and ends
#: up to 2 TiB, and up to 2^22 files (else the slower sort on two columns)
_END_BITS = 41


def distinct_read_bytes(segments: pl.LazyFrame, paths: list[str]) -> pl.DataFrame:
    """path → ``distinct_bytes``: the bytes of ``paths`` that DXT saw read, each byte once (the
    union of the reads' ranges). Each path is hashed once and its files numbered; the reads are
    sorted on one key (file number, offset) and each file's furthest end so far is a
    cumulative maximum of (file number, end): several times faster than sorting and grouping
    the strings of millions of segments."""
    names = pl.DataFrame({"path": paths}).with_columns(
        h=pl.col("path").hash(seed=0)).with_row_index("g")
    reads = (segments.filter((pl.col("op") == "read")
                             & pl.col("offset").is_not_null())
             .select(h=pl.col("path").hash(seed=0), offset="offset",
                     end=pl.col("offset") + pl.col("length"))
             .join(names.lazy().select("h", g=pl.col("g").cast(pl.Int64)), on="h")
             .collect())
    if reads.is_empty():
        return pl.DataFrame(schema={"path": pl.String, "distinct_bytes": pl.Int64})
    one_key = (len(paths) < 1 << (63 - _END_BITS - 1)
               and (integer(reads.get_column("end").max()) or 0) < 1 << _END_BITS)
    high = pl.col("g") * (1 << _END_BITS)
    if one_key:
        reads = reads.sort(high + pl.col("offset"))
        reach = (high + pl.col("end")).cum_max() - high
    else:
        reads = reads.sort("g", "offset")
        reach = pl.col("end").cum_max().over("g")
    # a range adds what it reaches beyond every earlier range of its file
    reads = reads.with_columns(reach=reach)
    before = pl.when(pl.col("g") == pl.col("g").shift(1)).then(pl.col("reach").shift(1))
    new = (pl.col("end") - pl.max_horizontal("offset", before.fill_null(pl.col("offset"))))
    per = reads.select("g", new=new.clip(0)).group_by("g").agg(
        distinct_bytes=pl.col("new").sum())
    return names.with_columns(pl.col("g").cast(pl.Int64)).join(per, on="g").select(
        "path", "distinct_bytes")


def repeat_shares(segments: pl.LazyFrame, paths: list[str]) -> pl.DataFrame:
    """(execution_id, path) → ``repeat``: the share of the time of the execution's reads of the
    file that re-read bytes an earlier read had read (the first read of a byte is no repeat,
    whoever made it: a cold first read and cached repeats cost what the repeats took).

    The file is cut at every read's offset and end; each piece's first reader is the read that
    began first among those covering it; a read's new bytes are the pieces it read first. A
    piece is as many rows as the reads covering it, so the rows grow with how many times the
    bytes were read, not with the file. Reads are weighed by their time, each held by the
    execution ``segments`` names (the largest share of a split read)."""
    reads = (segments.filter((pl.col("op") == "read")
                             & pl.col("offset").is_not_null() & (pl.col("length") > 0)
                             & pl.col("path").is_in(paths))
             .select("seg_id", "path", "execution_id", "start_ns", "offset",
                     end=pl.col("offset") + pl.col("length"),
                     spent=(pl.col("stop_ns") - pl.col("start_ns")).clip(0))
             .unique("seg_id").collect())
    cuts = (pl.concat([reads.select("path", at="offset"), reads.select("path", at="end")])
            .unique().sort("path", "at").with_columns(piece=pl.int_range(pl.len()).over("path")))
    pieces = cuts.with_columns(size=pl.col("at").shift(-1).over("path") - pl.col("at"))
    covered = (reads.join(cuts.rename({"at": "offset", "piece": "lo"}), on=["path", "offset"])
               .join(cuts.rename({"at": "end", "piece": "hi"}), on=["path", "end"])
               .select("seg_id", "path", "start_ns", piece=pl.int_ranges("lo", "hi"))
               .explode("piece"))
    first = (covered.sort("start_ns", "seg_id")
             .group_by("path", "piece", maintain_order=True).agg(pl.col("seg_id").first())
             .join(pieces.select("path", "piece", "size"), on=["path", "piece"])
             .group_by("seg_id").agg(new=pl.col("size").sum()))
    return (reads.join(first, on="seg_id", how="left")
            .with_columns(repeated=pl.col("spent") * (
                1 - pl.col("new").fill_null(0) / (pl.col("end") - pl.col("offset"))))
            .drop_nulls("execution_id")
            .group_by("execution_id", "path")
            .agg(repeat=pl.col("repeated").sum() / pl.col("spent").sum()))


def repeated_reads(ctx: Context) -> list[dict[str, Any]]:
    """Files whose bytes were read more than once (by several executions, or by one several
    times): DXT's byte ranges give the distinct bytes; ``times`` = bytes read / distinct
    bytes. An execution's excess is the time of its reads of the file that re-read bytes
    (``repeat_shares``); an execution holding only shares of split reads, none of its own,
    takes ``1 − 1/times`` of its time. Silent without DXT (counters have no ranges)."""
    if ctx.evidence.segments is None or not ctx.evidence.dxt:
        return []
    # (lazy: a filter of task_files copies every column of the rows it keeps, a big run's
    # reads are millions)
    f = (ctx.task_files.lazy().filter((pl.col("op") == "read")
                                      & pl.col("io_time_s").is_not_null())
         .select("execution_id", "key", "path", "bytes", "io_time_s"))
    # (grouped on the paths as held, codes in the engine's kept task_files; named as text
    # once per file, to meet the segments' paths)
    per_path = f.group_by("path").agg(read=pl.col("bytes").sum(),
                                      spent=pl.col("io_time_s").sum()).collect().with_columns(
        pl.col("path").cast(pl.String))
    # (the excess is a share of the reads' time: files whose reads took less than the floor
    # cannot be reported, and their ranges are not read)
    paths = per_path.filter((pl.col("read") >= REPEATED_MIN_BYTES)
                            & (pl.col("spent") >= ctx.floor_s)).get_column("path")
    if paths.is_empty():
        return []
    distinct = distinct_read_bytes(ctx.evidence.segments, paths.to_list())
    repeated = (per_path.join(distinct, on="path")
                .with_columns(times=pl.col("read") / pl.col("distinct_bytes"))
                .filter((pl.col("read") - pl.col("distinct_bytes") >= REPEATED_MIN_BYTES)
                        & (pl.col("times") > 1.05)))
    if repeated.is_empty():
        return []
    shares = repeat_shares(ctx.evidence.segments, repeated.get_column("path").to_list())
    out = []
    for r in repeated.sort("read", "path", descending=[True, False]).iter_rows(named=True):
        rows = f.filter(pl.col("path") == r["path"]).collect().with_columns(
            pl.col("path").cast(pl.String)).join(
            ctx.tasks.select("execution_id", "prefix"), on="execution_id")
        excess = rows.join(shares, on=["execution_id", "path"], how="left").group_by(
            "execution_id").agg(excess_s=pl.col("io_time_s").sum() * pl.col("repeat").first()
                                .fill_null(1 - 1 / r["times"]))
        readers = rows.group_by("key", "prefix").agg(pl.col("bytes").sum()).sort(
            "bytes", "key", descending=[True, False])
        out.append(finding(
            "repeated-reads", span_saved(ctx, excess),
            [p for p in readers.get_column("prefix").unique().sort().to_list() if p],
            readers.get_column("key").to_list(), [r["path"]],
            f"{r['path']}: {_bytes(r['read'])} read for {_bytes(r['distinct_bytes'])} of "
            f"distinct bytes ({r['times']:.1f} times) by {readers.height} execution(s), "
            f"{rows.get_column('io_time_s').sum():.3f} s inside the reads",
            "read the file once, in one task, and let the tasks that need it depend on that "
            "task's result (or persist it)"))
    return out


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GiB"


# --- metadata ----------------------------------------------------------------------------

#: a prefix's files are metadata-bound when the time in their metadata calls is at least this
#: share of that time and the time inside their reads and writes
METADATA_SHARE = 0.5


def metadata_shares(ctx: Context, counters: pl.DataFrame) -> pl.DataFrame:
    """Per execution and file: its share of the time Darshan counted in the file's metadata
    calls (opens, stats, seeks, closes: ``meta_time_s``, per process and file) and how many
    executions of its process used the file (``sharers``: the time is split evenly among
    them). Files no execution read or wrote are left out (no task to give them to)."""
    meta = (counters.filter(pl.col("meta_time_s") > 0)
            .group_by("host", "pid", "path")
            .agg(pl.col("meta_time_s").sum(), pl.col("opens").sum())
            # (as the task_files' paths are held: codes in the engine's kept table)
            .with_columns(pl.col("path").cast(ctx.task_files.schema["path"])))
    used = (ctx.task_files.join(meta.select("path").unique(), on="path", how="semi")
            .select("execution_id", "path").unique()
            .join(ctx.tasks.select("execution_id", "host", "pid", "prefix", "key"),
                  on="execution_id"))
    return (used.join(meta, on=["host", "pid", "path"])
            .with_columns(sharers=pl.len().over("host", "pid", "path"))
            .with_columns(meta_s=pl.col("meta_time_s") / pl.col("sharers"),
                          opens=pl.col("opens") / pl.col("sharers")))


def metadata(ctx: Context) -> list[dict[str, Any]]:
    """Prefixes whose files' metadata calls (Darshan's ``meta_time_s``: opens, stats, seeks)
    took at least ``METADATA_SHARE`` of their time in those files' calls; the cost is
    ``span_saved`` with each execution's excess its share of the metadata time (what opening
    each file once, or fewer files, would save at most). A file several executions of a process
    used has its time split evenly among them, and ``partial`` says so. Silent without
    Darshan's counters."""
    counters = ctx.evidence.file_counters
    if counters is None or counters.is_empty() or not ctx.evidence.io_captured:
        return []
    shares = metadata_shares(ctx, counters)
    if shares.is_empty():
        return []
    io = (ctx.task_files.filter(pl.col("io_time_s").is_not_null())
          .join(shares.select("execution_id", "path").unique(), on=["execution_id", "path"],
                how="semi")
          .join(ctx.tasks.select("execution_id", "prefix"), on="execution_id")
          .group_by("prefix").agg(io_s=pl.col("io_time_s").sum()))
    per = (shares.group_by("prefix").agg(meta_s=pl.col("meta_s").sum(),
                                         opens=pl.col("opens").sum(),
                                         split=(pl.col("sharers") > 1).any())
           .join(io, on="prefix", how="left").with_columns(pl.col("io_s").fill_null(0.0))
           .filter(pl.col("meta_s") >= METADATA_SHARE * (pl.col("meta_s") + pl.col("io_s")))
           .sort("meta_s", "prefix", descending=[True, False]))
    out = []
    for r in per.iter_rows(named=True):
        rows = shares.filter(pl.col("prefix") == r["prefix"])
        files = (rows.group_by("path").agg(pl.col("meta_s").sum())
                 .sort("meta_s", "path", descending=[True, False]))
        keys = (rows.group_by("key").agg(pl.col("meta_s").sum())
                .sort("meta_s", "key", descending=[True, False]).get_column("key"))
        excess = rows.group_by("execution_id").agg(excess_s=pl.col("meta_s").sum())
        out.append(finding(
            "metadata", span_saved(ctx, excess), [str(r["prefix"])], keys.to_list(),
            files.get_column("path").to_list(),
            f"{r['prefix']} spent {r['meta_s']:.3f} s in metadata calls (opens, stats, seeks; "
            f"{r['opens']:,.0f} opens) of {files.height} file(s) against {r['io_s']:.3f} s "
            f"inside their reads and writes; most on {files.row(0)[0]}",
            "open each file once per task (keep the handle, read what you need in one go), "
            "cache stat results and directory listings, and use fewer, larger files",
            "files used by several executions of one process: their metadata time is split "
            "evenly among them (Darshan counts it per process and file)" if r["split"]
            else None))
    return out


# --- shared-file -------------------------------------------------------------------------

#: a file is shared when at least this many executions used it at once
SHARED_MIN = 3


def users_at_once(uses: pl.DataFrame) -> pl.DataFrame:
    """path → ``at_once``: the most executions whose windows held one another's, of those that
    used the file (``uses``: path, execution_id, start_ns, stop_ns, one row per execution and
    file). One sweep per file over their starts and ends; a file one execution used needs
    none."""
    users = uses.group_by("path").agg(n=pl.len())
    one = pl.lit(1, pl.Int32)
    shared = uses.join(users.filter(pl.col("n") > 1), on="path", how="semi").with_columns(
        p=pl.col("path").hash(seed=0))  # (a hash sorts faster than the strings)
    ev = pl.concat([shared.select("p", t="start_ns", d=one),
                    shared.select("p", t="stop_ns", d=-one)]).sort("p", "t", "d")
    swept = (ev.with_columns(n=pl.col("d").cum_sum().over("p")).group_by("p")
             .agg(at_once=pl.col("n").max()))
    return (users.with_columns(p=pl.col("path").hash(seed=0))
            .join(swept, on="p", how="left")
            .select("path", at_once=pl.coalesce("at_once", pl.lit(1, pl.Int32))
                    .cast(pl.Int64)))


def held_before(calls: pl.DataFrame, at: str) -> pl.DataFrame:
    """``calls`` (path, first_ns, last_ns: each user's first and last call of the file) with
    ``held_ns``: how long, before ``at`` (a column of ``calls``), some user of the same file
    was between its first and last call (the union of those spans: one sort per file)."""
    spans = calls.select("path", a="first_ns", b="last_ns").sort("path", "a")
    reach = pl.col("b").cum_max().shift(1).over("path")
    merged = (spans.with_columns(new=(reach.is_null() | (pl.col("a") > reach)).cast(pl.Int32))
              .with_columns(g=pl.col("new").cum_sum().over("path"))
              .group_by("path", "g").agg(pl.col("a").min(), pl.col("b").max())
              .sort("path", "a")
              .with_columns(before=(pl.col("b") - pl.col("a")).cum_sum().over("path")
                            - (pl.col("b") - pl.col("a"))))
    found = calls.sort(at).join_asof(merged.select("path", "a", "b", "before"), left_on=at,
                                     right_on="a", by="path", strategy="backward",
                                     check_sortedness=False)
    inside = (pl.min_horizontal(pl.col(at), pl.col("b")) - pl.col("a")).clip(0)
    return found.with_columns(held_ns=(pl.col("before") + inside).fill_null(0)).drop(
        "a", "b", "before")


#: an execution's time outside CPU and I/O (``duration − max(CPU, I/O)``: a write into the page
#: cache is CPU): what a wait for a file's lock can take of it, at most
OUTSIDE_CPU_AND_IO = (pl.col("duration_s") - pl.max_horizontal("cpu_s", "io_time_s")
                      .fill_null(0.0)).clip(0.0)


def lock_waits(ctx: Context, shared: pl.DataFrame) -> pl.DataFrame:
    """execution_id, path → ``lock_s``: of the files some user wrote (an exclusive lock is
    taken to write), the time between an execution's start and its first call of the file
    while other users were between their first and last calls of it (the whole-file locks of
    HDF5 and NetCDF: a writer waits in its open until the holder closes the file), at most its
    time outside CPU and I/O (``OUTSIDE_CPU_AND_IO``). From DXT's segments; without them,
    none."""
    out = pl.DataFrame(schema={"execution_id": pl.Int64, "path": pl.String, "lock_s": pl.Float64})
    written = (shared.filter(pl.col("op") == "write").select(pl.col("path").cast(pl.String))
               .unique())
    if ctx.evidence.segments is None or not ctx.evidence.dxt or written.is_empty():
        return out
    calls = (ctx.evidence.segments.filter(pl.col("execution_id").is_not_null())
             .join(written.lazy(), on="path", how="semi")
             .group_by("path", "execution_id")
             .agg(first_ns=pl.col("start_ns").min(), last_ns=pl.col("stop_ns").max())
             .collect()
             .join(ctx.tasks.select("execution_id", "start_ns", "duration_s", "cpu_s",
                                    "io_time_s"), on="execution_id"))
    if calls.is_empty():
        return out
    calls = held_before(held_before(calls, "start_ns").rename({"held_ns": "at_start"}),
                        "first_ns")
    return calls.select("execution_id", "path", lock_s=pl.min_horizontal(
        (pl.col("held_ns") - pl.col("at_start")) * 1e-9, OUTSIDE_CPU_AND_IO).clip(0.0))


def shared_file(ctx: Context) -> list[dict[str, Any]]:
    """Files that ``SHARED_MIN`` or more executions read or wrote at once (their windows
    overlapping): per execution, the time inside its calls of the file less what its bytes take
    at the median throughput, for the same operation, of the run's files that a single
    execution used (none such: nothing), and, for files some of them wrote, the time it waited
    for the file while others used it (``lock_waits``). The cost is ``span_saved`` with those
    excesses."""
    # (the columns the rule reads, each table's joined as late as it can be, and the paths as
    # Categorical codes, grouped and joined as numbers: a big run's task_files are tens of
    # millions of rows, copied at each step)
    f = (ctx.task_files.lazy()
         .filter(pl.col("io_time_s").is_not_null() & (pl.col("bytes") > 0))
         .select("execution_id", "key", pl.col("path").cast(pl.Categorical),
                 "op", "bytes", "io_time_s")
         .with_columns(users=pl.col("execution_id").n_unique().over("path"))
         .collect())
    if f.is_empty():
        return []
    # (the usual cases first, before any join or sweep: no file had enough users, or no file
    # had a single user to compare with and none of them was written)
    if (integer(f.get_column("users").max()) or 0) < SHARED_MIN:
        return []
    lone = (f.lazy().filter((pl.col("users") == 1) & (pl.col("io_time_s") > 0))
            .group_by("op").agg(rate=(pl.col("bytes") / pl.col("io_time_s")).median())
            .collect())
    shared_rows = f.get_column("users") >= SHARED_MIN
    f = with_beside(kept(f, shared_rows), lone, ["op"])
    if f.is_empty() or (lone.is_empty() and not (f.get_column("op") == "write").any()):
        return []
    f = f.with_columns(excess_s=(pl.col("io_time_s") - pl.col("bytes") / pl.col("rate"))
                       .clip(0.0).fill_null(0.0))
    # (the paths that could reach the floor first, the rows of executions not timed among
    # them: their excesses only raise a bound; the usual case keeps none)
    reaching = _reaching(ctx, f)
    if reaching.is_empty():
        return []
    if reaching.height < f.get_column("path").n_unique():  # (else a copy keeping every row)
        f = f.join(reaching, on="path", how="semi")
    # (the timed executions' columns put beside the rows, which are not copied again)
    f = with_beside(f, ctx.tasks.select("execution_id", "start_ns", "stop_ns",
                                        outside_s=OUTSIDE_CPU_AND_IO), ["execution_id"])
    if f.get_column("start_ns").has_nulls():  # (an execution not timed)
        f = f.filter(pl.col("start_ns").is_not_null())
    at_once = users_at_once(f.select("path", "execution_id", "start_ns", "stop_ns").unique())
    shared = (f.drop("start_ns", "stop_ns", "outside_s", "users")  # (read no further)
              .join(at_once, on="path").filter(pl.col("at_once") >= SHARED_MIN)
              .join(ctx.tasks.select("execution_id", "prefix"), on="execution_id"))
    del f
    waits = lock_waits(ctx, shared)
    out = []
    for (path,), rows in sorted(shared.partition_by("path", as_dict=True).items(),
                                key=lambda kv: str(kv[0][0])):
        lock = waits.filter(pl.col("path") == path).select("execution_id", "lock_s")
        out.append(_shared_finding(ctx, str(path), rows, lock))
    return out


def _reaching(ctx: Context, f: pl.DataFrame) -> pl.DataFrame:
    """The paths of ``f`` whose cost could reach the floor: at most the excess of their calls
    and, for a written file, its timed users' time outside CPU and I/O (``lock_waits``'
    bound); the others are neither swept nor reported."""
    # (lazily: each step reads its columns only, where a filter or a semi join of ``f`` would
    # copy all of them first)
    lf = f.lazy()
    written = lf.filter(pl.col("op") == "write").select("path").unique()
    waits = (lf.select("path", "execution_id").join(written, on="path", how="semi").unique()
             .join(ctx.tasks.lazy().select("execution_id", outside_s=OUTSIDE_CPU_AND_IO),
                   on="execution_id")
             .select("path", excess_s="outside_s"))
    return (pl.concat([lf.select("path", "excess_s"), waits]).group_by("path")
            .agg(pl.col("excess_s").sum()).filter(pl.col("excess_s") >= ctx.floor_s)
            .select("path").collect())


def _shared_finding(ctx: Context, path: str, rows: pl.DataFrame, lock: pl.DataFrame
                    ) -> dict[str, Any]:
    excess = pl.concat([rows.select("execution_id", "excess_s"),
                        lock.select("execution_id", excess_s="lock_s")]).group_by(
        "execution_id").agg(pl.col("excess_s").sum())
    users = rows.group_by("key").agg(pl.col("io_time_s").sum()).join(
        rows.select("key", "execution_id").unique().join(lock, on="execution_id", how="left")
        .group_by("key").agg(pl.col("lock_s").sum()), on="key", how="left").sort(
        pl.col("io_time_s") + pl.col("lock_s").fill_null(0.0), "key", descending=[True, False])
    inside = number(rows.get_column("io_time_s").sum()) or 0.0
    moved = number(rows.get_column("bytes").sum()) or 0.0
    ops = ", ".join(sorted(set(rows.get_column("op").to_list())))
    rate = number(rows.get_column("rate").first())
    waited = number(lock.get_column("lock_s").sum()) or 0.0
    against = (f"against {_bytes(rate)}/s (median) for files a single execution used"
               if rate is not None else "no file a single execution used to compare with")
    return finding(
        "shared-file", span_saved(ctx, excess),
        [p for p in rows.get_column("prefix").unique().sort().to_list() if p],
        users.get_column("key").to_list(), [path],
        f"{path}: {users.height} execution(s), up to "
        f"{integer(rows.get_column('at_once').max())} at once, spent {inside:.3f} s inside "
        f"its calls ({ops}) for {_bytes(moved)} ({_bytes(moved / inside if inside else 0)}/s), "
        f"{against}; {waited:.3f} s waiting for it before their first call while others used "
        "it (a lock on the file)",
        "give each task its own file (or its own part of a dataset: one file per "
        "partition), or make one task do the file's I/O; on parallel file systems align "
        "each writer's regions to the stripe size",
        None if rate is not None else "no file a single execution used: the time inside the "
        "calls is not compared, only the waits for the file count")
