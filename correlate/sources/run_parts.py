"""One part of a raw capture table, read as its declared table.

Two kinds of part (``correlate.schema.run`` describes both): ``part-NNNNNN.arrow`` (Arrow IPC
files), what the collectors wrote in run format 2, and ``part-NNNNNN.parquet``, what they wrote
in format 1 (run folders recorded then are still read; format 3's streams:
``correlate.sources.run_streams``). Either kind may lack columns a later
collector added (``conform`` adds them as nulls) or hold columns it does not know (dropped).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from correlate.errors import SchemaError, first_line
from correlate.schema import Table, conform
from correlate.schema.run import PART_SUFFIX

#: suffixes of the parts of a table, in the order the collectors adopted them
PART_SUFFIXES = (".parquet", PART_SUFFIX)
#: what reading a damaged or mistyped part raises (a missing column: ``conform``'s SchemaError)
UNREADABLE_PART = (OSError, pl.exceptions.PolarsError, SchemaError)


def part_files(folder: Path) -> list[Path]:
    """A table's parts (snapshot last: it sorts after ``part-``), temp files left out."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if p.name.endswith(PART_SUFFIXES) and not p.name.startswith("."))


def _is_parquet(part: Path) -> bool:
    return part.name.endswith(".parquet")


def check(part: Path, table: Table) -> str | None:
    """Why ``part`` cannot be read as ``table`` without decoding its data (None: it can): a
    footer that does not read, or columns whose types are of the wrong kind."""
    try:
        schema = (pl.read_parquet_schema(part) if _is_parquet(part)
                  else pl.read_ipc_schema(part))
    except UNREADABLE_PART as err:
        return f"unreadable part: {first_line(err)}"
    for column in table.columns:
        found = schema.get(column.name)
        if found is not None and kind(found) not in (kind(column.polars_dtype()), "null"):
            return f"column {column.name!r} is {found}, expected {column.dtype}"
    return None


def read(part: Path, table: Table) -> pl.DataFrame:
    return conform(pl.read_parquet(part) if _is_parquet(part) else pl.read_ipc(part), table,
                   path=str(part))


def scan(part: Path, table: Table) -> pl.LazyFrame:
    return conform(pl.scan_parquet(part) if _is_parquet(part) else pl.scan_ipc(part), table,
                   path=str(part))


def kind(dtype: pl.DataType) -> str:
    """The kind of values a type holds: a part written with another width of integer or
    another string encoding is the same data; a float where an integer belongs is not."""
    if dtype.is_integer():
        return "integer"
    if dtype.is_float():
        return "float"
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum | pl.Categorical):
        return "text"
    if dtype == pl.Null:
        return "null"
    return str(dtype)
