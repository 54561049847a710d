"""correlate/attribution/helper_commands.py on literal frames: the I/O of a job script's helper
commands that Darshan logged is named by the command, not as an unknown process's."""

from __future__ import annotations

import polars as pl

from correlate.attribution import helper_commands
from correlate.attribution.shares import UNKNOWN_PROCESS

LOGS = pl.DataFrame({"host": ["n1", None, "n1", "n2"], "pid": [10, 11, 12, 13],
                     "exe": ["/usr/bin/sleep 0.1", "uname -n",
                             "/opt/py/bin/python3 my_client.py", "mpiexec -n 2 dask worker"]})


def test_a_helpers_io_is_named_by_its_command_and_the_rest_is_left_alone():
    un = pl.DataFrame({
        "host": ["n1", "n1", "n1", "n2", "n9", "n1"], "pid": [10, 11, 12, 13, 13, 20],
        "reason": [UNKNOWN_PROCESS, UNKNOWN_PROCESS, UNKNOWN_PROCESS, "other process",
                   UNKNOWN_PROCESS, "outside any task execution"],
        "bytes": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    got = helper_commands.relabel(un, LOGS)
    assert got.columns == un.columns and got["bytes"].to_list() == un["bytes"].to_list()
    assert got["reason"].to_list() == [
        "helper command sleep of the job script: not a Dask process",
        # a log without DXT names no host: its pid says which
        "helper command uname of the job script: not a Dask process",
        UNKNOWN_PROCESS,  # the client's Python is no helper
        "helper command mpiexec of the job script: not a Dask process",
        UNKNOWN_PROCESS,  # the same pid on another host than the log's
        "outside any task execution"]
    # counted as known and no task's, as other processes' I/O is
    assert all(r.endswith(" process") for r in got["reason"][:5])


def test_without_logs_or_rows_nothing_changes():
    un = pl.DataFrame({"host": ["n1"], "pid": [10], "reason": [UNKNOWN_PROCESS],
                       "bytes": [1.0]})
    assert helper_commands.relabel(un, LOGS.clear()).equals(un)
    assert helper_commands.relabel(un.clear(), LOGS).equals(un.clear())
