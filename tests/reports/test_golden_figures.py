"""The figures of tests/golden/report.md, derived by this test from the sample's raw records
(the workers' task_executions, proc.json), Dask's own key_split and Darshan's own reader
(libdarshan-util's POSIX counters), never from correlate's output: regenerating the golden file
(``UPDATE_GOLDEN=1``) cannot bless a bug in the figures it checks. Each printed figure must be the
true value rounded to the digits printed, in the unit printed.

Not derived here (they need the attribution itself or its clock alignment): the bytes per task
prefix and per task, the unattributed reasons, the Darshan clock offsets, the function tables."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from dask.utils import key_split

from testing.darshan_counts import counter_bytes
from testing.raw_parts import read_raw

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "run-v1"
GOLDEN = REPO / "tests" / "golden" / "report.md"
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
         "s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}


def printed_as(text: str, value: float) -> bool:
    """Whether ``text`` ("11.0 MiB", "778.9 ms", "0 B") is ``value`` rounded to its digits."""
    number, unit = text.split()
    digits = len(number.split(".")[1]) if "." in number else 0
    return abs(float(number) - value / UNITS[unit]) <= 0.5 * 10 ** -digits * (1 + 1e-9)


def table(md: str, heading: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table after ``heading`` (cells without backticks)."""
    lines = md.split(f"\n{heading}", 1)[1].splitlines()
    rows = [line for line in lines[lines.index(next(x for x in lines if x.startswith("|"))):]]
    rows = rows[:next((i for i, x in enumerate(rows) if not x.startswith("|")), len(rows))]
    cells = [[c.strip().strip("`") for c in r.strip("|").split("|")] for r in rows]
    return [dict(zip(cells[0], r, strict=True)) for r in cells[2:]]


@pytest.fixture(scope="module")
def md() -> str:
    return GOLDEN.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def executions() -> pl.DataFrame:
    """The workers' own record of each execution, with Dask's prefix and the worker's address."""
    ex = read_raw(SAMPLE, "task_executions")
    address = {p.name: json.loads((p / "proc.json").read_text())["address"]
               for p in (SAMPLE / "procs").iterdir()}
    return ex.with_columns(
        prefix=pl.col("key").map_elements(key_split, return_dtype=pl.String),
        worker=pl.col("proc").replace_strict(address),
        wall_s=(pl.col("local_stop_ns") - pl.col("local_start_ns")) / 1e9,
        cpu_s=pl.col("thread_cpu_ns") / 1e9)


@pytest.fixture(scope="module")
def posix() -> pl.DataFrame:
    return counter_bytes(SAMPLE / "darshan", "POSIX").with_columns(
        ops=pl.col("reads") + pl.col("writes"), io_s=pl.col("read_s") + pl.col("write_s"))


def test_the_headline_and_the_cpu_line(md, executions):
    n, keys = executions.height, executions["key"].n_unique()
    assert f"\n{n} task executions of {keys} tasks" in md
    line = next(x for x in md.splitlines() if x.startswith("CPU: "))
    cpu, wall = line.removeprefix("CPU: ").split(" of thread CPU")[0], line.split(
        "task wall time ")[1].split(")")[0]
    assert printed_as(cpu, executions["cpu_s"].sum()), line
    assert printed_as(wall, executions["wall_s"].sum()), line


def test_each_worker_s_executions_and_cpu(md, executions):
    rows = table(md, "## Where time went")
    per = executions.group_by("worker").agg(pl.len(), pl.col("cpu_s").sum())
    assert sorted(r["worker"] for r in rows) == sorted(per["worker"])
    for r in rows:
        want = per.filter(pl.col("worker") == r["worker"]).row(0, named=True)
        assert int(r["executions"]) == want["len"] and printed_as(r["CPU"], want["cpu_s"]), r


def test_each_prefix_s_runs_wall_and_cpu(md, executions):
    rows = table(md, "## Heaviest task prefixes")
    per = executions.group_by("prefix").agg(
        pl.len(), wall=pl.col("wall_s").sum(), mean=pl.col("wall_s").mean(),
        max=pl.col("wall_s").max(), cpu=pl.col("cpu_s").sum()).sort("wall", descending=True)
    assert [r["prefix"] for r in rows] == per["prefix"].to_list()  # all, by wall time
    for r, want in zip(rows, per.iter_rows(named=True), strict=True):
        assert int(r["runs"]) == want["len"], r
        for col, key in (("wall", "wall"), ("mean", "mean"), ("max", "max"), ("CPU", "cpu")):
            assert printed_as(r[col], want[key]), (r["prefix"], col, r[col], want[key])


def test_the_executions_by_cpu_are_the_ten_busiest_with_their_wall_and_cpu(md, executions):
    rows = table(md, "### By CPU")
    top = executions.sort("cpu_s", descending=True).head(10)
    assert [r["key"] for r in rows] == top["key"].to_list()
    for r, want in zip(rows, top.iter_rows(named=True), strict=True):
        assert r["prefix"] == want["prefix"] and r["worker"] == want["worker"], r
        assert printed_as(r["wall"], want["wall_s"]) and printed_as(r["CPU"], want["cpu_s"]), r


def test_io_totals_per_process_and_per_file_are_darshan_s_own_counts(md, posix):
    total = next(x for x in md.splitlines() if x.startswith("I/O in DXT: "))
    size, ops = total.removeprefix("I/O in DXT: ").split(";")[0].split(" in ")
    assert printed_as(size, posix["read"].sum() + posix["written"].sum())
    assert ops == f"{posix['ops'].sum()} operations"
    per_pid = posix.group_by("pid").agg(pl.col("read", "written", "ops").sum()).filter(
        pl.col("ops") > 0)
    rows = table(md, "## Unattributed I/O and CPU")
    assert sorted(int(r["process"].split(" pid ")[1]) for r in rows) == sorted(per_pid["pid"])
    for r in rows:
        want = per_pid.filter(pl.col("pid") == int(r["process"].split(" pid ")[1])).row(
            0, named=True)
        assert printed_as(r["read"], want["read"]) and printed_as(r["written"], want["written"])
        assert int(r["ops"]) == want["ops"], r
    per_path = posix.group_by("path").agg(
        pl.col("read", "written", "ops", "reads", "writes", "io_s").sum()).filter(
        pl.col("ops") > 0)
    assert f"## Busiest files (top 10 of {per_path.height} by bytes)" in md
    for r in table(md, "## Busiest files"):
        want = per_path.filter(pl.col("path") == r["path"]).row(0, named=True)
        assert printed_as(r["read"], want["read"]) and printed_as(r["written"], want["written"])
        assert int(r["ops"]) == want["ops"] and printed_as(r["I/O time"], want["io_s"]), r
        # operations per direction and their mean size: Darshan's own reads and writes
        for cell, n, nbytes in ((r["reads × mean size"], want["reads"], want["read"]),
                                (r["writes × mean size"], want["writes"], want["written"])):
            ops, _, mean = cell.partition(" × ")
            assert int(ops.replace(",", "")) == n, r
            assert printed_as(mean, nbytes / n) if n else mean == "", r
