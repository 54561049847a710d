"""Darshan records whose file name is doubtful: the rules of correlate.attribution.doubtful."""

from __future__ import annotations

import polars as pl

from correlate.attribution import doubtful, local_dir


def _rows(*rows):
    return pl.DataFrame(rows, schema={"host": pl.String, "pid": pl.Int64, "path": pl.String,
                                      "op": pl.String}, orient="row")


OPENS = pl.DataFrame(
    [("h", 1, "/d/out.npy", "write"), ("h", 1, "/d/both.bin", "write"),
     ("h", 1, "/d/both.bin", "read"), ("h", 1, "/d/rw.bin", "read-write"),
     ("h", 1, "/d/unknown.bin", None), ("h", 1, "/d/in.csv", "read")],
    schema={"host": pl.String, "pid": pl.Int64, "path": pl.String, "access": pl.String},
    orient="row")


def test_each_kind_of_doubtful_name_is_labelled_and_plain_files_are_not():
    rows = _rows(
        ("h", 1, "/d/out.npy", "read"),       # opened only for writing: contradicted
        ("h", 1, "/d/in.csv", "write"),       # opened only for reading: contradicted
        ("h", 2, "/d/out.npy", "read"),       # another process opened nothing: undecided
        ("h", 1, "/d/out.npy", "write"),      # as opened
        ("h", 1, "/d/both.bin", "read"),
        ("h", 1, "/d/rw.bin", "read"),
        ("h", 1, "/d/unknown.bin", "read"),   # an open of unknown mode decides nothing
        ("h", 1, "/d/never.bin", "read"),     # no task opened it: not contradicted
        ("h", 1, "proc.json", "write"),       # relative
        ("h", 1, "<STDERR>", "write"),        # Darshan's name of a standard stream
        ("h", 1, "/home/u/job/proc.json", "write"),          # ours, in the job's directory
        ("h", 1, "/home/u/job/strings.arrows", "write"),
        ("h", 1, "/runs/r1/procs/worker-vm-12-1/proc.json", "write"),  # ours, in place
        ("h", 1, "/runs/r1/procs/worker-vm-12-1.2/task_executions.arrows", "write"),
        ("h", 1, "/runs/r1/procs/worker-vm-12-1/task_executions/part-000001.arrow", "write"),
    )
    got = doubtful.labels(rows, OPENS).to_list()
    want = [doubtful.CONTRADICTED.format(op="read"), doubtful.CONTRADICTED.format(op="write"),
            None, None, None, None, None, None, doubtful.RELATIVE, None, doubtful.MISPLACED,
            doubtful.MISPLACED, None, None, None]
    assert got == want


def test_relabel_keeps_reasons_that_name_the_bytes_except_for_our_own_files():
    un = pl.DataFrame(
        [("h", 1, "worker", "outside any task execution", "/d/out.npy", "read", 10.0),
         ("h", 1, "worker", local_dir.SPILL, "/d/out.npy", "read", 1.0),
         ("h", 9, "other", "other process", "x.txt", "read", 2.0),
         ("h", 5, "scheduler", "scheduler process", "/job/proc.json", "write", 3.0),
         ("h", 1, "worker", "outside any task execution", "/d/never.bin", "read", 4.0)],
        schema={"host": pl.String, "pid": pl.Int64, "role": pl.String, "reason": pl.String,
                "path": pl.String, "op": pl.String, "bytes": pl.Float64}, orient="row")
    out = doubtful.relabel(un, OPENS)
    assert out["reason"].to_list() == [
        doubtful.CONTRADICTED.format(op="read"), local_dir.SPILL, "other process",
        doubtful.MISPLACED, "outside any task execution"]
    assert out.drop("reason").equals(un.drop("reason"))
