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


def disagreement(part: Path) -> str | None:
    """Why a Parquet part's data cannot be what was written (None: nothing says so): a column
    whose values or nulls in a row group fall outside the statistics its footer records for
    them (min, max, null count). Run format 1's parts carry no page checksums, so bytes
    overwritten inside a page decode to other values; where they leave the written range, the
    part's own footer shows it. Arrow parts record no statistics; a part that does not decode
    is named where it is read."""
    if not _is_parquet(part):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(part)
        for rg in range(file.metadata.num_row_groups):
            meta, data = file.metadata.row_group(rg), file.read_row_group(rg)
            for i in range(meta.num_columns):
                chunk = meta.column(i)
                stats, name = chunk.statistics, chunk.path_in_schema
                if stats is None or name not in data.column_names:
                    continue
                values = data.column(name)
                if stats.has_null_count and values.null_count != stats.null_count:
                    return (f"column {name!r} holds {values.null_count} nulls where the part's "
                            f"statistics say {stats.null_count} (damaged data)")
                if stats.has_min_max and values.null_count < len(values):
                    found = pc.min_max(values)
                    lo, hi = found["min"].as_py(), found["max"].as_py()
                    if lo < stats.min or hi > stats.max:
                        return (f"column {name!r} holds values outside the range the part's "
                                f"statistics record ({stats.min!r} to {stats.max!r}): damaged "
                                "data")
    except (OSError, pa.ArrowException, TypeError):  # (does not decode: named when read)
        return None
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


def footer_rows(part: Path) -> int:
    """Rows of an Arrow IPC file or a Parquet file, from its footer (0: it does not read)."""
    try:
        scan = pl.scan_parquet(part) if part.name.endswith(".parquet") else pl.scan_ipc(part)
        return int(scan.select(pl.len()).collect().item())
    except UNREADABLE_PART:
        return 0
