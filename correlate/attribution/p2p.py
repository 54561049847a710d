"""P2P shuffle I/O: each shard file's bytes to its shuffle, and the shard writes to a task.

distributed's P2P shuffle buffers shards in ``<local_directory>/shuffle-<id>-<run>/``
(``attribution.local_dir``). The unpack task that needs a partition reads its file back on its
own executor thread, so those reads are attributed like any task's (``exact-thread`` …). The
writes are issued by the worker itself (its event loop, or an offload thread in some
versions) as shards arrive from every worker's transfer tasks: no thread ties them to one task,
and which transfer task sent the bytes of a shard is not recorded.

The rule (method ``p2p-shuffle``): a write into a shuffle's folder that no thread-exact rule
(``exact-thread``, ``inferred-thread``, ``helper-context``) gave to an execution is given whole
to that shuffle's barrier task (``shuffle-barrier-<id>``), the one task every transfer of the
shuffle feeds and every unpack waits for: the shuffle's owner. Time-overlap shares
(``window-split``, ``helper-split``, ``helper-file``) are replaced: the tasks that happened to
run meanwhile did not write them. Without a recorded barrier execution the writes stay
unattributed, with the reason ``local_dir.P2P`` (counted as the shuffles' part of the I/O in
``summary.json`` ``io.by_destination``); a run in which no barrier ran is not searched for
shards at all (that costs a test on every segment's path), so it lists no shuffles.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from correlate.attribution import local_dir
from correlate.attribution.passes import Partition, segment_pass
from correlate.attribution.shares import IO_SECONDS, METHOD, IOAttribution
from correlate.frames.scalars import count as _count
from correlate.frames.scalars import integer
from correlate.frames.scalars import rounded as _round
from correlate.schema.methods import THREAD_EXACT

METHOD_NAME = "p2p-shuffle"
NO_READS = ("no read of its shards traced: array rechunks read them back through a memory "
            "map, which Darshan does not see")
#: a shard file's path anywhere (a process without a recorded local directory)
ANYWHERE = r"/shuffle-([^/]+)-(\d+)/[^/]+$"


def _local_dirs(segments: pl.DataFrame, processes: pl.DataFrame) -> pl.Series:
    """Per segment (same order): its process's local directory."""
    dirs = processes.select("host", "pid", "local_directory").drop_nulls(
        "local_directory").unique(["host", "pid"])
    return segments.select("host", "pid").join(
        dirs, on=["host", "pid"], how="left", nulls_equal=True, maintain_order="left"
    ).get_column("local_directory")


def shuffle_ids(segments: pl.DataFrame, processes: pl.DataFrame,
                known: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per segment (same order): ``shuffle_id`` and ``run_id`` of the shard file it touched,
    else nulls. A process whose local directory is not recorded (imported runs) still has
    its shards recognised by their ``…/shuffle-<id>-<run>/<partition>`` path when ``<id>`` is
    a shuffle of ``known`` (``shuffle_id``: a barrier task of the run), never by the pattern
    alone. Only paths holding ``/shuffle-`` are looked at (a literal test per segment; the
    regular expressions and the join run on those few)."""
    out = pl.select(shuffle_id=pl.repeat(None, segments.height, dtype=pl.String),
                    run_id=pl.repeat(None, segments.height, dtype=pl.Int64))
    rows = segments.select(pl.arg_where(pl.col("path").str.contains("/shuffle-", literal=True))
                           ).to_series()
    if rows.is_empty():
        return out
    few = segments.select("host", "pid", "path")[rows]
    d = pl.lit(_local_dirs(few, processes))
    path = pl.col("path")
    ids = few.select(shuffle_id=local_dir.shuffle_id(path, d),
                     run_id=local_dir.shuffle_run(path, d))
    if known is not None and not known.is_empty():
        found = few.select(no_dir=d.is_null(), sid=path.str.extract(ANYWHERE, 1),
                           run=path.str.extract(ANYWHERE, 2).cast(pl.Int64))
        ok = pl.lit(found.get_column("no_dir") & found.get_column("sid").is_in(
            known.get_column("shuffle_id").implode()))
        ids = ids.with_columns(
            shuffle_id=pl.when(ok).then(pl.lit(found.get_column("sid")))
            .otherwise(pl.col("shuffle_id")),
            run_id=pl.when(ok).then(pl.lit(found.get_column("run"))).otherwise(pl.col("run_id")))
    return out.with_columns(
        out.get_column("shuffle_id").scatter(rows, ids.get_column("shuffle_id")),
        out.get_column("run_id").scatter(rows, ids.get_column("run_id")))


def give_shard_writes(att: IOAttribution, ids: pl.DataFrame, owners: pl.DataFrame
                      ) -> IOAttribution:
    """``att`` with every shard write that no thread-exact rule gave away given whole to its
    shuffle's barrier execution (``owners``: shuffle_id → owner, ``local_dir.barrier_owners``),
    method ``p2p-shuffle``; the shares other rules had given it are dropped."""
    seg = att.segments
    if ids.get_column("shuffle_id").null_count() == seg.height or owners.is_empty():
        return att
    owner = ids.select("shuffle_id").join(owners, on="shuffle_id", how="left",
                                          maintain_order="left").get_column("owner")
    take = seg.select(
        (pl.col("op") == "write") & pl.lit(owner).is_not_null()
        & ~(pl.col("attribution").is_in(THREAD_EXACT)
            & (pl.col("attributed_weight") > 0))).to_series()
    if not take.any():
        return att
    seg = seg.with_columns(
        execution_id=pl.when(take).then(pl.lit(owner)).otherwise(pl.col("execution_id")),
        attributed_weight=pl.when(take).then(1.0).otherwise(pl.col("attributed_weight")),
        attribution=pl.when(take).then(pl.lit(METHOD_NAME, METHOD))
        .otherwise(pl.col("attribution")))
    rows = pl.arg_where(take, eager=True)
    split = att.split.filter(~pl.col("row").is_in(rows.implode()))
    return IOAttribution(segments=seg, split=split)


def shuffle_io(segments: pl.DataFrame, ids: pl.DataFrame | None) -> pl.DataFrame:
    """host, pid, shuffle_id, run_id, op → bytes, ops, io_time_s, files, first_ns, last_ns
    (host clock), given_bytes (held by an execution), executions (the distinct executions holding the bytes: the unpack tasks
    for reads, the owner for writes): every segment in a shuffle folder, whoever holds it."""
    if ids is None:  # not looked for: no rows, the same columns
        segments = segments.clear()
        ids = pl.DataFrame(schema={"shuffle_id": pl.String, "run_id": pl.Int64})
    rows = ids.select(pl.arg_where(pl.col("shuffle_id").is_not_null())).to_series()
    own = segments[rows].select("host", "pid", "op", "path", "length", "execution_id",
                                "host_start_ns", "host_stop_ns", io_s=IO_SECONDS).with_columns(
        ids[rows])
    return own.group_by("host", "pid", "shuffle_id", "run_id", pl.col("op").cast(pl.String)
                        ).agg(bytes=pl.col("length").sum(), ops=pl.len().cast(pl.Int64),
                              io_time_s=pl.col("io_s").sum(),
                              files=pl.col("path").n_unique().cast(pl.Int64),
                              first_ns=pl.col("host_start_ns").min(),
                              last_ns=pl.col("host_stop_ns").max(),
                              given_bytes=pl.col("length").filter(
                                  pl.col("execution_id").is_not_null()).sum(),
                              executions=pl.col("execution_id").drop_nulls().unique().sort())


def _tasks_of(barrier: str, tasks: pl.DataFrame, dependencies: pl.DataFrame,
              readers: list[int]) -> dict[str, Any]:
    """The executions of one shuffle's tasks: its barrier, the transfers it depends on, the
    unpacks that depend on it (from the graph) and any other execution that read its shards."""
    deps = dependencies.select("key", "depends_on")
    transfer = deps.filter(pl.col("key") == barrier).get_column("depends_on")
    unpack = deps.filter(pl.col("depends_on") == barrier).get_column("key")
    out: dict[str, Any] = {}
    for kind, rows in (
            ("transfer", tasks.filter(pl.col("key").is_in(transfer.implode()))),
            ("barrier", tasks.filter(pl.col("key") == barrier)),
            ("unpack", tasks.filter(pl.col("key").is_in(unpack.implode())
                                    | pl.col("execution_id").is_in(readers)))):
        out[kind] = {"executions": rows.height, "keys": rows.get_column("key").n_unique(),
                     "wall_s": _round(rows.get_column("duration_s").sum()),
                     "cpu_s": _round(rows.get_column("cpu_s").sum())}
    return out


def _span_s(rows: pl.DataFrame) -> float | None:
    """Seconds from the first call's start to the last one's stop; None when either is
    unknown."""
    first = integer(rows.get_column("first_ns").min())
    last = integer(rows.get_column("last_ns").max())
    return None if first is None or last is None else _round((last - first) / 1e9)


def shuffle_summary(shuffle_io: pl.DataFrame, tasks: pl.DataFrame,
                    dependencies: pl.DataFrame) -> list[dict[str, Any]]:
    """Per shuffle id (``summary.json`` ``shuffles``): bytes written and read in its folders,
    per worker process with the time inside the calls and the span of its I/O; how much of
    the writes went to its owner (``p2p-shuffle``) and of the reads to executions; its tasks."""
    if shuffle_io.is_empty():
        return []
    workers = tasks.select("host", "pid", "worker").drop_nulls().unique(["host", "pid"])
    io = shuffle_io.join(workers, on=["host", "pid"], how="left", nulls_equal=True)

    def by_op(op: str, col: str) -> pl.Expr:
        return pl.col(col).filter(pl.col("op") == op).sum()
    per_worker = io.group_by("shuffle_id", "host", "pid", "worker").agg(
        written_bytes=by_op("write", "bytes"), read_bytes=by_op("read", "bytes"),
        write_s=by_op("write", "io_time_s"), read_s=by_op("read", "io_time_s"),
        files=pl.col("files").max(),
        span_s=(pl.col("last_ns").max() - pl.col("first_ns").min()) / 1e9,
    ).sort("shuffle_id", "host", "pid", nulls_last=True)
    out = []
    for (sid,), rows in io.sort("shuffle_id").group_by("shuffle_id", maintain_order=True):
        w, r = rows.filter(pl.col("op") == "write"), rows.filter(pl.col("op") == "read")
        readers = r.get_column("executions").explode().drop_nulls().unique().to_list()
        barrier = local_dir.BARRIER_PREFIX + sid
        owner = tasks.filter(pl.col("key") == barrier)
        out.append({
            "shuffle_id": sid, "run_ids": sorted(rows.get_column("run_id").unique().to_list()),
            "barrier_key": barrier if owner.height else None,
            "written_bytes": _count(w.get_column("bytes").sum()),
            "written_to_owner_bytes": _count(w.get_column("given_bytes").sum()),
            "write_method": METHOD_NAME if owner.height else None,
            # a shuffle whose shards were written but none read: read back through a memory
            # map (array rechunks), which no read call shows: not captured, not 0 B
            "read_bytes": _count(r.get_column("bytes").sum()) if r.height else None,
            "read_by_tasks_bytes": _count(r.get_column("given_bytes").sum()) if r.height
            else None,
            "reads_note": None if r.height else NO_READS,
            "write_s": _round(w.get_column("io_time_s").sum()),
            "read_s": _round(r.get_column("io_time_s").sum()) if r.height else None,
            "span_s": _span_s(rows),
            "per_worker": [{k: (_round(v) if isinstance(v, float) else v) for k, v in p.items()
                            if k != "shuffle_id"}
                           for p in per_worker.filter(pl.col("shuffle_id") == sid)
                           .iter_rows(named=True)],
            "tasks": _tasks_of(barrier, tasks, dependencies, readers),
        })
    return out


def owners_of(given: Partition) -> pl.DataFrame | None:
    """The run's shuffle barriers, or None where none ran: P2P shards are looked for only in a
    run whose barriers ran (a test on every segment's path otherwise); without one, their
    bytes keep the reason ``local_dir.P2P``."""
    owners = given.shuffle_owners
    return owners if owners is not None and owners.height else None


@segment_pass(METHOD_NAME)
def shard_pass(att: IOAttribution, given: Partition) -> IOAttribution:
    """``give_shard_writes`` as the attribution's pass."""
    owners = owners_of(given)
    if owners is None:
        return att
    return give_shard_writes(att, shuffle_ids(att.segments, given.processes, owners), owners)
