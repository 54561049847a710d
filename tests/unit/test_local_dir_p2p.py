"""The worker local directory's kinds of I/O and the P2P shard-write rule, over literal frames
(the LocalCluster runs are in tests/engine/test_p2p.py)."""

from __future__ import annotations

import polars as pl
import pytest
from test_attribute import PROCS, executions, segments
from test_helper_io import HELPER, LOOP, NO_OPENS

from correlate.attribution import exact, local_dir, p2p
from correlate.attribution.helpers import helper_io

D = "/scratch/w1"
SID = "8338645e85dadb3f-96db"  # a token with a '-': the run id is the last field


def test_each_kind_of_local_directory_file_has_its_own_reason():
    paths = {f"{D}/storage/x-1#0": local_dir.SPILL,
             f"{D}/shuffle-{SID}-3/7": local_dir.P2P,
             f"{D}/shuffle-{SID}-3/0_1_2": local_dir.P2P,
             f"{D}/shuffle-{SID}-3": local_dir.FOLDER,
             f"{D}/storage": local_dir.FOLDER,
             D: local_dir.FOLDER,
             f"{D}.dirlock": local_dir.LOCK,
             "/scratch/global.lock": local_dir.LOCK,
             "/scratch/purge.lock": local_dir.LOCK,
             f"{D}/plugin.py": local_dir.OTHER,
             f"{D}/shuffle-{SID}-3/7/deeper": local_dir.OTHER,
             f"{D}x/storage/k": None, "/data/a": None}
    df = pl.DataFrame({"path": list(paths), "d": [D] * len(paths)})
    got = df.select(local_dir.reason(pl.col("path"), pl.col("d"))).to_series().to_list()
    assert dict(zip(paths, got, strict=True)) == paths
    ids = df.select(sid=local_dir.shuffle_id(pl.col("path"), pl.col("d")),
                    run=local_dir.shuffle_run(pl.col("path"), pl.col("d")))
    assert ids.row(1) == (SID, 3) and ids.row(3) == (None, None)


def test_the_barrier_that_ran_last_owns_its_shuffle():
    ex = executions([(0, f"shuffle-barrier-{SID}", "h", 1, 11, 10, 20),
                     (5, f"shuffle-barrier-{SID}", "h", 2, 12, 30, 40),
                     (6, "('shuffle-transfer-x', 0)", "h", 1, 11, 0, 5)])
    assert local_dir.barrier_owners(ex).rows() == [(SID, 5)]


def _attributed(seg, ex, owners):
    att = helper_io(exact.io_to_executions(seg, ex), ex, NO_OPENS, PROCS, [])
    ids = p2p.shuffle_ids(att.segments, PROCS)
    att = p2p.give_shard_writes(att, ids, owners)
    files = exact.task_files(att)
    un = exact.unattributed_io(att, ex, PROCS, [])
    assert files["bytes"].sum() + un["bytes"].sum() == pytest.approx(seg["length"].sum())
    return att, files, un, ids


def test_shard_writes_go_whole_to_the_owner_reads_stay_with_the_unpack_thread():
    shard = f"{D}/shuffle-{SID}-3/4"
    ex = executions([(0, "('unpack', 4)", "h", 1, 11, 100, 200),
                     (1, "('other', 0)", "h", 1, 12, 0, 200)])
    seg = segments([("h", 1, LOOP, 10, 20, 100, "write", shard),      # event loop
                    ("h", 1, HELPER, 30, 40, 50, "write", shard),     # an offload thread
                    ("h", 1, 11, 150, 151, 150, "read", shard),       # the unpack task
                    ("h", 1, 12, 50, 60, 7, "write", f"{D}/storage/k#0")])  # not a shard
    owners = pl.DataFrame({"shuffle_id": [SID], "owner": [42]})
    att, files, un, _ = _attributed(seg, ex, owners)
    got = {(r["execution_id"], r["op"], r["attribution"]): r["bytes"]
           for r in files.iter_rows(named=True)}
    # the helper thread's write is not split onto the task that ran meanwhile (('other', 0))
    assert got == {(42, "write", "p2p-shuffle"): 150, (0, "read", "exact-thread"): 150,
                   (1, "write", "exact-thread"): 7}
    assert un.is_empty()


def test_without_a_barrier_the_writes_stay_unattributed_as_p2p_not_spill():
    shard = f"{D}/shuffle-{SID}-3/4"
    ex = executions([(0, "a", "h", 1, 11, 0, 100)])
    seg = segments([("h", 1, LOOP, 10, 20, 100, "write", shard)])
    att, files, un, ids = _attributed(seg, ex, pl.DataFrame(
        {"shuffle_id": ["another"], "owner": [1]}))
    assert files.is_empty()
    assert un.select("reason", "bytes").rows() == [(local_dir.P2P, 100)]
    io = p2p.shuffle_io(att.segments.with_columns(
        host_start_ns=pl.col("host_start_ns")), ids)
    assert io.select("shuffle_id", "run_id", "op", "bytes", "given_bytes").rows() == [
        (SID, 3, "write", 100, 0)]


def test_destinations_add_up_to_the_total_and_name_each_part():
    from correlate.summary import _destinations

    by_method = pl.DataFrame({"attribution": ["exact-thread", "p2p-shuffle"],
                              "bytes": [100.0, 40.0]})
    reasons = pl.DataFrame({"reason": [local_dir.P2P, local_dir.SPILL, "scheduler process",
                                       "collector clock marker", local_dir.FOLDER,
                                       "outside any task execution"],
                            "bytes": [5.0, 7.0, 3.0, 2.0, 1.0, 11.0]})
    total = 100 + 40 + 5 + 7 + 3 + 2 + 1 + 11
    got = {k: v["bytes"] for k, v in _destinations(total, 140.0, by_method, reasons).items()}
    assert got == {"tasks": 100, "shuffles": 45, "spill": 7, "not_tasks": 6,
                   "unexplained": 11}


def test_compare_says_where_the_io_went_before_and_after():
    from correlate.compare.explain import destinations_line

    def summary(tasks, shuffles):
        return {"io": {"by_destination": {
            "tasks": {"bytes": tasks, "share": None}, "shuffles": {"bytes": shuffles,
                                                                   "share": None},
            "spill": {"bytes": 0, "share": None}}}}
    line = destinations_line(summary(1024, 0), summary(1024, 2048))
    assert line.startswith("Where the I/O went: tasks unchanged")
    assert "P2P shuffles 2.0 KiB, none before" in line and "spill" not in line
    assert destinations_line({}, summary(1, 1)) == ""


def test_without_a_local_directory_only_a_known_shuffles_path_is_a_shard():
    procs = PROCS.with_columns(local_directory=pl.lit(None, pl.String))
    seg = segments([("h", 1, LOOP, 10, 20, 100, "write", f"/w/shuffle-{SID}-3/4"),
                    ("h", 1, LOOP, 10, 20, 100, "write", "/w/shuffle-unknown-1/4"),
                    ("h", 1, LOOP, 10, 20, 100, "write", f"/w/shuffle-{SID}-3")])
    known = pl.DataFrame({"shuffle_id": [SID], "owner": [1]})
    ids = p2p.shuffle_ids(seg, procs, known)
    assert ids.rows() == [(SID, 3), (None, None), (None, None)]
    # with the directory recorded, the directory decides
    assert p2p.shuffle_ids(seg, PROCS, known)["shuffle_id"].null_count() == 3
