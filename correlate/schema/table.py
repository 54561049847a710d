"""``Column`` and ``Table``: how a table is declared; ``conform`` makes a frame one.

Stdlib-only at import (the collectors use these inside the user's Dask processes);
``polars_schema``/``arrow_schema`` import their library lazily.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
    import pyarrow as pa

_SIMPLE = ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
           "Float32", "Float64", "String", "Boolean", "Categorical", "Binary")


@dataclass(frozen=True)
class Column:
    """One column: ``dtype`` is a polars dtype name, ``Enum:a,b,c`` or ``List:<dtype>``."""

    name: str
    dtype: str
    doc: str
    nullable: bool = True

    def __post_init__(self) -> None:
        base = self.dtype.split(":", 1)[0]
        if base not in (*_SIMPLE, "Enum", "List"):
            raise ValueError(f"column {self.name}: unknown dtype {self.dtype!r}")

    @property
    def enum_values(self) -> tuple[str, ...]:
        if not self.dtype.startswith("Enum:"):
            return ()
        return tuple(self.dtype.split(":", 1)[1].split(","))

    def polars_dtype(self) -> Any:
        import polars as pl

        if self.dtype.startswith("Enum:"):
            return pl.Enum(list(self.enum_values))
        if self.dtype.startswith("List:"):
            inner = Column(self.name, self.dtype.split(":", 1)[1], self.doc)
            return pl.List(inner.polars_dtype())
        if self.dtype == "Categorical":
            return pl.Categorical()
        return getattr(pl, self.dtype)

    def arrow_type(self) -> Any:
        import pyarrow as pa

        if self.dtype.startswith("Enum:") or self.dtype == "Categorical":
            return pa.string()
        if self.dtype.startswith("List:"):
            inner = Column(self.name, self.dtype.split(":", 1)[1], self.doc)
            return pa.list_(inner.arrow_type())
        return {
            "Int8": pa.int8(), "Int16": pa.int16(), "Int32": pa.int32(), "Int64": pa.int64(),
            "UInt8": pa.uint8(), "UInt16": pa.uint16(), "UInt32": pa.uint32(),
            "UInt64": pa.uint64(), "Float32": pa.float32(), "Float64": pa.float64(),
            "String": pa.string(), "Boolean": pa.bool_(), "Binary": pa.binary(),
        }[self.dtype]


@dataclass(frozen=True)
class Table:
    """A named, ordered set of columns with a one-line description."""

    name: str
    doc: str
    columns: tuple[Column, ...]
    #: columns that identify a row; used to sort before writing (determinism)
    sort_by: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"table {self.name}: duplicate column names")
        missing = [s for s in self.sort_by if s not in names]
        if missing:
            raise ValueError(f"table {self.name}: sort_by names unknown columns {missing}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"table {self.name} has no column {name!r}")

    def polars_schema(self) -> pl.Schema:
        import polars as pl

        return pl.Schema({c.name: c.polars_dtype() for c in self.columns})

    def arrow_schema(self) -> pa.Schema:
        import pyarrow as pa

        return pa.schema([pa.field(c.name, c.arrow_type(), nullable=c.nullable)
                          for c in self.columns])

    def empty(self) -> pl.DataFrame:
        import polars as pl

        return pl.DataFrame(schema=self.polars_schema())



def conform(df: Any, table: Table, *, path: str = "<frame>", extra: str = "drop") -> Any:
    """Return ``df`` (polars DataFrame or LazyFrame) with exactly ``table``'s columns, in order,
    cast to the declared dtypes.

    Missing nullable columns are added as nulls; a missing non-nullable column raises
    ``SchemaError(path, ...)``. ``extra="drop"`` drops undeclared columns, ``extra="keep"`` keeps
    them after the declared ones (importers keep unknown CSV columns this way).
    """
    import polars as pl

    from correlate.errors import SchemaError

    have = df.collect_schema().names() if isinstance(df, pl.LazyFrame) else df.columns
    if isinstance(df, pl.DataFrame) and extra == "drop":
        if df.height == 0:
            return table.empty()
        want = table.polars_schema()
        if df.schema == want:
            return df
        if all(df.schema.get(name) == dtype for name, dtype in want.items()):
            # the columns as they are: a select would rechunk columns chunked differently
            # (a table read from hundreds of parts: a copy of all of it)
            return pl.DataFrame([df.get_column(name) for name in want])
    exprs = []
    for c in table.columns:
        if c.name in have:
            exprs.append(pl.col(c.name).cast(c.polars_dtype(), strict=False))
        elif c.nullable:
            exprs.append(pl.lit(None, dtype=c.polars_dtype()).alias(c.name))
        else:
            raise SchemaError(path, f"column {c.name!r} missing (table {table.name})")
    if extra == "keep":
        exprs.extend(pl.col(n) for n in have if n not in table.names)
    return df.select(exprs)


def describe(tables: Iterable[Table]) -> str:
    """Markdown documentation of tables (docs/generate.py writes docs/tables.md with it)."""
    out: list[str] = []
    for t in tables:
        out.append(f"### `{t.name}`\n\n{t.doc}\n\n| column | dtype | doc |\n|---|---|---|")
        for c in t.columns:
            null = "" if c.nullable else " (not null)"
            out.append(f"| `{c.name}` | {c.dtype}{null} | {c.doc} |")
        out.append("")
    return "\n".join(out)
