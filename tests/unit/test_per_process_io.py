"""The summary's bytes per process (``summary._per_process``): each task_files row counted for
the process its execution ran in (tasks), every unattributed row for its own, whatever order the
tasks' processes come in."""

from __future__ import annotations

import polars as pl

from correlate.schema import TABLES, conform
from correlate.summary import _per_process


def test_bytes_per_process_from_tasks_and_unattributed() -> None:
    # GIVEN executions 0-4 on processes a:1, b:2, a:1 again (not contiguous), and c:3
    tasks = pl.DataFrame({"execution_id": [0, 1, 2, 3, 4], "host": ["a", "a", "b", "a", "c"],
                          "pid": [1, 1, 2, 1, 3]})
    files = conform(pl.DataFrame({
        "execution_id": [0, 1, 2, 3, 3, 9], "key": ["k"] * 6,
        "op": ["read", "write", "read", "read", "write", "read"],
        "bytes": [1.0, 10.0, 100.0, 1000.0, 10000.0, 5.0], "ops": [1.0] * 6}),
        TABLES["task_files"])
    un = conform(pl.DataFrame({"host": ["a", "d"], "pid": [1, 4], "reason": ["r", "r"],
                               "op": ["write", "read"],
                               "bytes": [7.0, 3.0], "ops": [2.0, 1.0]}),
                 TABLES["unattributed"])
    got = {(r["host"], r["pid"]): (r["read_bytes"], r["write_bytes"], r["ops"])
           for r in _per_process({"tasks": tasks, "task_files": files, "unattributed": un})}
    # THEN a:1 has executions 0, 1 and 3 and its unattributed write; b:2 execution 2; d:4 only
    # unattributed; execution 9 (not in tasks) no process; c:3 moved nothing
    assert got == {("a", 1): (1001, 10017, 6), ("b", 2): (100, 0, 1), ("d", 4): (3, 0, 1),
                   (None, None): (5, 0, 1)}
