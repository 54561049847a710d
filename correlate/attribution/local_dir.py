"""What a file in a Dask worker's local directory is, and why its I/O belongs to no task.

distributed lays a worker's local directory out as (checked in its source, 2023.x to 2026.8):

- ``<local_directory>/storage/<quoted key>#<n>``: the spill store (``distributed.spill`` over
  ``zict.File``); the only I/O this project calls spill (``correlate.spill``);
- ``<local_directory>/shuffle-<shuffle id>-<run id>/<partition id>``: the P2P shuffle's disk
  buffer (``distributed.shuffle``: ``DiskShardsBuffer`` of a dataframe shuffle or merge, an array
  rechunk or shuffle); the shards are appended on the worker's event loop (no task runs there)
  and read back whole by the unpack task that needs the partition, on its executor thread. The
  shuffle id is the token in the barrier task's key ``shuffle-barrier-<shuffle id>``, the run id
  an integer that grows each time the shuffle is restarted;
- ``<workspace>/<worker dir>.dirlock``, ``<workspace>/global.lock``, ``<workspace>/purge.lock``:
  ``distributed.diskutils`` lock files beside the local directory (``<workspace>/<worker dir>``);
- the folders themselves (the local directory, ``storage``, a shuffle folder): distributed
  opens them (``shutil.rmtree`` of a shuffle folder works on descriptors), and Darshan, which
  names a descriptor by what was opened on it, was seen to file later reads and writes of a
  reused descriptor under such a folder's name: bytes of some other file, not the folder's;
- anything else below it: files a plugin (``UploadFile``, ``UploadDirectory``) or user code put
  there.
"""

from __future__ import annotations

import polars as pl

from correlate.frames.texts import per_text

#: the reasons ``unattributed`` gives for the I/O of a worker's local directory
SPILL = "worker local directory (spill)"
P2P = "P2P shuffle disk buffer"
LOCK = "worker directory lock file"
FOLDER = ("a worker local directory folder's own name (a directory holds no bytes: Darshan "
          "named a reused descriptor after it)")
OTHER = "worker local directory (other file: plugin or user)"

#: ``shuffle-<id>-<run>/<partition>`` right below the local directory; the id is a token (it
#: may contain ``-``), the run an integer
SHUFFLE_DIR = r"^/shuffle-(.+)-(\d+)/[^/]+$"
BARRIER_PREFIX = "shuffle-barrier-"


def _below(path: pl.Expr, local_dir: pl.Expr) -> pl.Expr:
    """``path`` relative to ``local_dir`` starting with ``/`` (null when not below it)."""
    inside = local_dir.is_not_null() & path.str.starts_with(
        pl.concat_str(local_dir.fill_null("\0"), pl.lit("/")))
    return pl.when(inside).then(path.str.slice(local_dir.str.len_chars()))


def shuffle_id(path: pl.Expr, local_dir: pl.Expr) -> pl.Expr:
    """The P2P shuffle id of a shard file below ``local_dir``, else null."""
    return _below(path, local_dir).str.extract(SHUFFLE_DIR, 1)


def shuffle_run(path: pl.Expr, local_dir: pl.Expr) -> pl.Expr:
    """The run id of a shard file below ``local_dir`` (Int64), else null."""
    return _below(path, local_dir).str.extract(SHUFFLE_DIR, 2).cast(pl.Int64)


def is_lock_file(path: pl.Expr, local_dir: pl.Expr) -> pl.Expr:
    """The worker directory's lock (``<local_dir>.dirlock``) or its workspace's locks."""
    workspace = local_dir.str.replace(r"/[^/]+$", "")
    return local_dir.is_not_null() & (
        (path == pl.concat_str(local_dir, pl.lit(".dirlock")))
        | (path == pl.concat_str(workspace, pl.lit("/global.lock")))
        | (path == pl.concat_str(workspace, pl.lit("/purge.lock"))))


def reason(path: pl.Expr, local_dir: pl.Expr) -> pl.Expr:
    """Why I/O on ``path`` of a worker whose local directory is ``local_dir`` is Dask's own,
    else null (a file outside the local directory: the reason lies elsewhere)."""
    below = _below(path, local_dir)
    folder = (path == local_dir) | below.str.contains(r"^/(storage|shuffle-[^/]+)/?$")
    return (pl.when(folder).then(pl.lit(FOLDER))
            .when(below.str.starts_with("/storage/")).then(pl.lit(SPILL))
            .when(below.str.contains(SHUFFLE_DIR)).then(pl.lit(P2P))
            .when(is_lock_file(path, local_dir)).then(pl.lit(LOCK))
            .when(below.is_not_null()).then(pl.lit(OTHER)))


def barrier_owners(executions: pl.DataFrame) -> pl.DataFrame:
    """shuffle_id → execution_id of its barrier task (``shuffle-barrier-<id>``), the owner the
    shuffle's shard writes are given to; the last one when the barrier ran more than once (a
    restarted shuffle: its writes are all given to the run that finished)."""
    barrier = per_text(executions.get_column("key"),
                       lambda texts: texts.str.starts_with(BARRIER_PREFIX))
    return (executions.filter(barrier).with_columns(pl.col("key").cast(pl.String))
            .sort("local_start_ns", "execution_id", nulls_last=True)
            .group_by(shuffle_id=pl.col("key").str.slice(len(BARRIER_PREFIX)))
            .agg(owner=pl.col("execution_id").last()))
