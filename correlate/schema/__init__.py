"""Every table of the project, defined once.

The run folder written by ``collectors/`` and every frame that flows through ``correlate`` is a
table declared here. A table is a name, an ordered tuple of columns and a doc line; each column
has a dtype, a unit in its name (``_ns``, ``_s``, ``_bytes``, ``_count``) and a doc string.

Importing this package is stdlib-only, so that the collectors (which run inside the user's Dask
processes) can use it without importing polars; ``polars_schema``/``arrow_schema`` import their
library lazily.

Submodules group the tables by who writes them:

- ``schema.run``      — raw capture tables in the run folder (``procs/<proc>/<table>/part-*.parquet``)
- ``schema.darshan``  — canonical tables decoded from Darshan logs
- ``schema.canonical``— the frames every source adapter produces for the engine
- ``schema.outputs``  — what ``correlate`` writes (tasks.parquet, task_files.parquet, …)

``TABLES`` is the registry of all of them, keyed by name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
    import pyarrow as pa

#: Version of the run-folder format written by ``collectors`` (manifest.json, proc.json).
RUN_FORMAT_VERSION = 1
#: Version of the tables written by ``correlate`` into its output folder.
OUTPUT_FORMAT_VERSION = 1

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


TABLES: dict[str, Table] = {}


def register(*tables: Table) -> None:
    """Add tables to the registry (each submodule calls this once at import)."""
    for t in tables:
        if t.name in TABLES and TABLES[t.name] is not t:
            raise ValueError(f"table {t.name!r} defined twice")
        TABLES[t.name] = t


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
            # (11M transitions read from 500 parts: a 1 GB copy)
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


def _in_order(df: Any, keys: list[str]) -> bool:
    """Whether ``df``'s rows already follow ``keys`` (nulls last), checked neighbour by
    neighbour: first on a head of 4096 rows, so that an unsorted table costs nearly nothing
    (task_files comes sorted from its partitions: 8.4M rows, 2.9 s sort -> 0.2-0.5 s check;
    a shuffled table fails in 2 ms). Only keys whose ``<`` is their sort order are checked
    (integers, strings, Enums); otherwise False."""
    import polars as pl

    if not all(df.schema[k].is_integer() or df.schema[k] == pl.String
               or isinstance(df.schema[k], pl.Enum) for k in keys):
        return False
    follows = pl.lit(True)
    for k in reversed(keys):  # row ≤ next row by keys[i:], built from the last key
        this, after = pl.col(k), pl.col(k).shift(-1)
        before = (pl.when(this.is_null()).then(False).when(after.is_null()).then(True)
                  .otherwise(this < after))
        follows = before | (this.eq_missing(after) & follows)
    return all(part.select(follows.all()).item() for part in (df.head(4096), df))


def _is_numeric(df: Any, column: str) -> bool:
    return df.schema[column].is_numeric() or df.schema[column].is_temporal()


def _stable_sort(df: Any, by: list[str]) -> Any:
    """Stable sort, nulls last; ``nulls_last`` only when there are nulls (it doubles the time
    of polars' multi-column sort)."""
    nulls = any(df[k].null_count() for k in by)
    return df.sort(by, nulls_last=nulls, maintain_order=True)


def _numeric_order(df: Any, keys: list[str]) -> Any:
    """Row numbers of ``df`` stably sorted by numeric ``keys``, nulls last. A last key already
    in row order is left to the stable sort; keys that fit together in 64 bits (``_packed``)
    are sorted as one key: polars' multi-column sort compares row by row and takes 2-3× longer."""
    last = df.get_column(keys[-1])
    if len(keys) > 1 and not last.null_count() and last.is_sorted():
        keys = keys[:-1]
    packed = _packed(df, keys) if len(keys) > 1 else None
    if packed is None:
        return _stable_sort(df.select(*keys).with_row_index("row"), keys)["row"]
    return _order_of(packed)


def _order_of(key: Any) -> Any:
    """Row numbers of ``key`` (a Series) in stable sorted order."""
    import polars as pl

    return key.alias("key").to_frame().select(pl.arg_sort_by("key", maintain_order=True)
                                              ).to_series()


def _packed(df: Any, keys: list[str]) -> Any:
    """One UInt64 per row ordered as ``keys`` (nulls last), or None when they do not fit: an
    integer key as its offset from its minimum (times, ids), or as its index among its distinct
    values when a sample shows few (thread ids); a float key, or an integer one too wide, as
    its dense rank; a string as its index among its distinct values in sorted order, an Enum
    as its category's."""
    import polars as pl

    codes, widths = [], []
    for k in keys:
        col = df.get_column(k)
        nulls = int(col.null_count() > 0)
        if col.null_count() == col.len():
            code, width = pl.Series([0], dtype=pl.UInt64).new_from_index(0, col.len()), 0
        elif col.dtype.is_float():
            if col.is_nan().any():
                return None
            code, width = _dense_rank(col, nulls)
        elif isinstance(col.dtype, pl.Enum):  # sorts in the order of its categories
            code = col.to_physical().cast(pl.UInt64).fill_null(len(col.dtype.categories))
            width = (len(col.dtype.categories) - 1 + nulls).bit_length()
        elif col.dtype == pl.String:
            distinct = col.drop_nulls().unique().sort()
            code = col.replace_strict(distinct, pl.int_range(distinct.len(), dtype=pl.UInt64,
                                                             eager=True), default=distinct.len())
            width = (distinct.len() - 1 + nulls).bit_length()
        elif not col.dtype.is_integer():
            return None
        elif col.gather_every(max(1, col.len() // 4096)).n_unique() <= 256:
            distinct = col.drop_nulls().unique().sort()
            code = distinct.search_sorted(col.fill_null(distinct[-1])).cast(pl.UInt64)
            width = (distinct.len() - 1 + nulls).bit_length()
            if nulls:
                code = pl.select(pl.when(col.is_null()).then(distinct.len()).otherwise(code)
                                 .cast(pl.UInt64)).to_series()
        else:
            lo, hi = col.min(), col.max()
            width = (hi - lo + nulls).bit_length()
            if width > 63:
                code, width = _dense_rank(col, nulls)
            else:
                code = (col - lo).cast(pl.UInt64).fill_null(hi - lo + 1)
        codes.append(code)
        widths.append(width)
    if sum(widths) > 64:
        return None
    key, shift = codes[-1], widths[-1]
    for code, width in zip(codes[-2::-1], widths[-2::-1], strict=True):
        if width:
            key = key + code * pl.Series([1 << shift], dtype=pl.UInt64)
        shift += width
    return key


def _dense_rank(col: Any, nulls: int) -> tuple[Any, int]:
    """0-based dense rank of ``col`` (nulls after every value) and its width in bits."""
    import polars as pl

    rank = col.rank("dense").cast(pl.UInt64)
    top = int(rank.max())
    return (rank - 1).fill_null(top), (top - 1 + nulls).bit_length()


def sorted_for_output(df: Any, table: Table) -> Any:
    """Sort by the table's identifying columns so output is deterministic (``output_order``)."""
    rows = output_order(df, table)
    if rows is None:
        return df
    if max(df.n_chunks("all"), default=1) > 1:  # a gather across chunks: 8.4M rows 4.8 -> 0.9 s
        df = df.rechunk()
    return df[rows]


def output_order(df: Any, table: Table) -> Any:
    """Row numbers of ``df`` in output order (None: already in it): ``sort_order`` by the
    table's sort keys that ``df`` has."""
    return sort_order(df, [k for k in table.sort_by if k in df.columns])


def sort_order(df: Any, keys: list[str]) -> Any:
    """Row numbers of ``df`` sorted by ``keys`` (None: already in it), the same order as
    ``df.sort(keys, maintain_order=True)`` with nulls last, faster: multi-column sorts that
    include strings are slow (11M events: 15 s), so leading keys with a single value (host and
    pid in a per-process part) are left out, rows are sorted by the leading numeric keys, and
    the string keys only break ties among the rows whose numeric keys are duplicated (usually
    few; found as equal neighbours once sorted, not by hashing)."""
    import polars as pl

    while keys and df.select(
            (pl.col(keys[0]).min() == pl.col(keys[0]).max()).fill_null(True)
            & (pl.col(keys[0]).null_count().is_in([0, df.height]))).item():
        keys = keys[1:]
    if not keys or _in_order(df, keys):
        return None
    lead = []
    for k in keys:
        if not _is_numeric(df, k):
            break
        lead.append(k)
    if not lead:
        return _stable_sort(df.select(*keys).with_row_index("row"), keys)["row"]
    rows = _numeric_order(df, lead)
    if len(lead) == len(keys):
        return rows
    same_as_previous = pl.all_horizontal(pl.col(k).eq_missing(pl.col(k).shift(1)) for k in lead)
    tied = pl.DataFrame([df.get_column(k).gather(rows) for k in lead]).select(
        same_as_previous | same_as_previous.shift(-1).fill_null(False)).to_series()
    if tied.any():
        # the tied rows sit in runs of equal lead, runs in lead order: sorting them all by the
        # full keys and putting them back into the same positions orders each run
        at = tied.arg_true()
        packed = _packed(df, keys) if 2 * at.len() > df.height else None
        if packed is not None:  # mostly ties (the files of each task): one sort of all rows
            return _order_of(packed)  # by every key, packed (8.4M task_files rows: 4 -> 2.4 s)
        tied_rows = rows.gather(at)
        ties = _stable_sort(pl.DataFrame([tied_rows.alias("row"), *(
            df.get_column(k).gather(tied_rows) for k in keys)]), keys)
        rows = rows.clone().scatter(at, ties["row"])
    return rows


def describe(tables: Iterable[Table] | None = None) -> str:
    """Markdown documentation of tables (used to keep docs/run-folder.md in sync)."""
    out: list[str] = []
    for t in tables if tables is not None else TABLES.values():
        out.append(f"### `{t.name}`\n\n{t.doc}\n\n| column | dtype | doc |\n|---|---|---|")
        for c in t.columns:
            null = "" if c.nullable else " (not null)"
            out.append(f"| `{c.name}` | {c.dtype}{null} | {c.doc} |")
        out.append("")
    return "\n".join(out)
