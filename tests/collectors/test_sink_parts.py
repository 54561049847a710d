"""The collectors' parts (Arrow IPC files written without pyarrow): every column type of the raw
tables reads back exactly as written, through pyarrow (with full validation) and through
correlate, with nulls, empty and non-ASCII text and extreme values; text that is not valid
UTF-8 is kept, escaped; values a column's type cannot hold leave a part that correlate names;
writing parts imports neither pyarrow, numpy nor pandas into the Dask process."""

from __future__ import annotations

import io
import math
import subprocess
import sys

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from collectors.sink import ProcessSink, arrow_part, columns_of
from correlate.schema import Column, Table
from correlate.schema import run as schema
from correlate.schema.run import PART_SUFFIX, SNAPSHOT_SUFFIX, STREAM_SUFFIX
from correlate.sources import run_parts
from testing.raw_parts import read_proc

CASES = {
    "Int64": [0, -1, 2**63 - 1, -(2**63), None, 17, None],
    "UInt64": [0, 2**64 - 1, None, 140_000_000_000, 3],
    "Float64": [0.0, -1.5, 1e300, None, 5e-324, 0.1 + 0.2, float("inf"), -0.0],
    "String": ["('x-1', 0, 0)", None, "é ünïcode ✓ 日本", "a" * 1000, 'say "hi", then\nbye\r\n',
               "", " lead and trail ", "NA", "null", None],
    "Enum:read,write": ["read", None, "write"],
    "Categorical": ["memory", None, "processing", "memory", "é ünïcode ✓", ""],
}


def round_trip(tmp_path, table: Table, rows: list[tuple]):
    data = arrow_part(table.columns, columns_of(rows, len(table.columns)))
    arrow = ipc.open_file(io.BytesIO(data)).read_all()
    arrow.validate(full=True)
    part = tmp_path / f"part-000001{PART_SUFFIX}"
    part.write_bytes(data)
    assert run_parts.check(part, table) is None
    eager = run_parts.read(part, table)
    assert run_parts.scan(part, table).collect().equals(eager)
    assert arrow.to_pylist() == [dict(zip(table.names, r, strict=True)) for r in rows]
    return eager


@pytest.mark.parametrize("dtype", sorted(CASES))
@pytest.mark.parametrize("shape", ["with nulls", "no nulls", "all null", "empty"])
def test_every_column_type_reads_back_as_written(tmp_path, dtype, shape):
    values = CASES[dtype]
    if shape == "no nulls":
        values = [v for v in values if v is not None]
    elif shape == "all null":
        values = [None] * 9
    elif shape == "empty":
        values = []
    table = Table("t", "", (Column("n", "Int64", "", nullable=False), Column("c", dtype, "")))
    df = round_trip(tmp_path, table, [(i, v) for i, v in enumerate(values)])
    assert df.schema == table.polars_schema()
    got = df.get_column("c").to_list()
    assert got == values
    if dtype == "Float64":  # the sign of zero, which == does not see
        assert [math.copysign(1, v) for v in got if v == 0] == [
            math.copysign(1, v) for v in values if v == 0]


@pytest.mark.parametrize("n", [1, 7, 8, 9, 63, 64, 65, 1000])
def test_null_bitmaps_of_every_length(tmp_path, n):
    table = Table("t", "", (Column("i", "Int64", ""), Column("s", "String", "")))
    rows = [(None, f"s{k}") if k % 3 else (k, None) for k in range(n)]
    assert round_trip(tmp_path, table, rows).rows() == rows


def test_text_that_is_not_utf8_is_kept_escaped(tmp_path):
    """A path decoded with surrogate escapes (undecodable bytes in a file name)."""
    table = Table("t", "", (Column("path", "String", "", nullable=False),))
    name = b"/data/caf\xe9.bin".decode("utf-8", "surrogateescape")
    part = tmp_path / f"part-000001{PART_SUFFIX}"
    part.write_bytes(arrow_part(table.columns, [[name, "plain"]]))
    assert run_parts.read(part, table).get_column("path").to_list() == [
        "/data/caf\\udce9.bin", "plain"]


def test_values_an_integer_column_cannot_hold_leave_a_part_correlate_names(tmp_path):
    table = Table("t", "", (Column("a", "Int64", "", nullable=False),
                            Column("b", "String", "")))
    part = tmp_path / f"part-000001{PART_SUFFIX}"
    columns = (Column("n", "Int64", ""), *table.columns)  # the good column stays an integer
    part.write_bytes(arrow_part(columns, [[7, 8], [1, 2.5], ["x", None]]))
    written = ipc.open_file(part).read_all()
    assert written.column("a").to_pylist() == ["1", "2.5"]
    assert written.column("n").type == pa.int64()
    assert run_parts.check(part, table) == "column 'a' is String, expected Int64"


def test_every_raw_table_column_type_round_trips():
    """The cases above cover every type the raw tables declare."""
    kinds = {"Enum" if c.dtype.startswith("Enum:") else c.dtype
             for t in schema.RUN_TABLES for c in t.columns}
    assert kinds <= {"Int64", "UInt64", "Float64", "String", "Enum", "Categorical"}, kinds


def test_a_part_holds_the_declared_arrow_types():
    for table in schema.RUN_TABLES:
        data = arrow_part(table.columns, columns_of([], len(table.columns)))
        got = ipc.open_file(io.BytesIO(data)).schema
        assert got.names == list(table.names)
        assert [f.type for f in got] == [pa.string() if str(c.arrow_type()) == "string"
                                         else c.arrow_type() for c in table.columns]


def test_writing_parts_imports_no_arrow_numpy_or_pandas(tmp_path):
    code = f"""
import sys, time
from pathlib import Path
from collectors.sink import ProcessSink
from correlate.schema import run as schema
tables = {{t.name: t for t in schema.RUN_TABLES}}
sink = ProcessSink(Path({str(tmp_path)!r}), tables)
sink.append("scheduler_transitions", (time.time_ns(), "k", None, "g", "a", "b", None, "w", 1,
                                      None))
sink.append("worker_clock_samples", (1, 2, None, 0.5, 1.25))
sink.flush()
sink.write_snapshot("worker_func_stats", [("yappi", "wall", 1, 2, "m", "f", "/f.py", 3, 4,
                                           0.5, 0.25)])
print(sorted(m for m in ("pyarrow", "numpy", "pandas", "polars") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    tables = {t.name: t for t in schema.RUN_TABLES}
    df = read_proc(tmp_path, tables["scheduler_transitions"])
    assert df.row(0)[1:] == ("k", None, "g", "a", "b", None, "w", 1, None,
                             f"scheduler_transitions{STREAM_SUFFIX}")
    snapshot = read_proc(tmp_path, tables["worker_func_stats"])
    assert snapshot["file"].to_list() == [f"worker_func_stats{SNAPSHOT_SUFFIX}"]


def test_an_empty_snapshot_removes_the_previous_one(tmp_path):
    table = schema.FUNC_STATS_RAW
    sink = ProcessSink(tmp_path, {table.name: table})
    row = ("yappi", "wall", 1, 2, "m", "f", "/f.py", 3, 4, 0.5, 0.25)
    sink.write_snapshot(table.name, [row])
    assert read_proc(tmp_path, table).height == 1
    sink.write_snapshot(table.name, [])
    assert read_proc(tmp_path, table).height == 0
    assert not list(tmp_path.glob(f"*{SNAPSHOT_SUFFIX}"))
