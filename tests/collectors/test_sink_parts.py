"""The collectors' parquet parts: columns built from buffers hold exactly what ``pa.array``
gives, for every column type of the raw tables, with nulls, non-ASCII text and extreme values;
values the buffers do not take still convert (or fail) as ``pa.array`` does; writing a part does
not import pandas into the worker."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pytest

from collectors.sink import arrow_column
from correlate.schema import Column
from correlate.schema import run as schema

CASES = {
    "Int64": [0, -1, 2**63 - 1, -(2**63), None, 17, None],
    "UInt64": [0, 2**64 - 1, None, 140_000_000_000, 3],
    "Float64": [0.0, -1.5, 1e300, None, 3, float("inf")],
    "String": ["", "('x-1', 0, 0)", None, "é ünïcode ✓ 日本", "a" * 1000, None],
}


@pytest.mark.parametrize("dtype", sorted(CASES))
@pytest.mark.parametrize("shape", ["with nulls", "no nulls", "all null", "empty"])
def test_columns_equal_pa_array(dtype, shape):
    values = CASES[dtype]
    if shape == "no nulls":
        values = [v for v in values if v is not None]
    elif shape == "all null":
        values = [None] * 9
    elif shape == "empty":
        values = []
    col = Column("c", dtype, "")
    got = arrow_column(tuple(values), col)
    want = pa.array(values, type=col.arrow_type())
    got.validate(full=True)
    assert got.type == want.type and got.null_count == want.null_count
    assert got.equals(want), (got, want)
    assert got.to_pylist() == values


@pytest.mark.parametrize("dtype,values", [
    ("Int64", [1.0, 2]),         # a float in an integer column
    ("UInt64", [-1]),            # out of range
    ("Int64", [True, 2]),        # a bool
    ("String", [b"bytes", "s"]),  # not text
    ("String", ["\ud800"]),      # not encodable
])
def test_values_buffers_do_not_take_behave_as_pa_array(dtype, values):
    col = Column("c", dtype, "")
    try:
        want = pa.array(values, type=col.arrow_type())
    except Exception as err:  # noqa: BLE001
        with pytest.raises(type(err)):
            arrow_column(tuple(values), col)
    else:
        assert arrow_column(tuple(values), col).equals(want)


def test_every_raw_table_column_type_is_built_from_buffers():
    types = {str(c.arrow_type()) for t in schema.RUN_TABLES for c in t.columns}
    assert types <= {"int64", "uint64", "double", "string"}, types


def test_writing_parts_does_not_import_pandas(tmp_path):
    code = f"""
import sys, time
from pathlib import Path
from collectors.sink import ProcessSink
from correlate.schema import run as schema
tables = {{t.name: t for t in schema.RUN_TABLES}}
sink = ProcessSink(Path({str(tmp_path)!r}), tables)
sink.append("scheduler_transitions", (time.time_ns(), "k", None, "g", "a", "b", None, "w", 1,
                                      None, "int"))
sink.append("worker_clock_samples", (1, 2, None, 0.5, 1.25))
sink.flush()
sink.write_snapshot("worker_func_stats", [("yappi", "wall", 1, 2, "m", "f", "/f.py", 3, 4,
                                           0.5, 0.25)])
print("pandas" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    import polars as pl

    df = pl.read_parquet(tmp_path / "scheduler_transitions" / "part-000001.parquet")
    assert df.row(0)[1:] == ("k", None, "g", "a", "b", None, "w", 1, None, "int")
    assert pl.read_parquet(tmp_path / "worker_func_stats" / "snapshot.parquet").height == 1
