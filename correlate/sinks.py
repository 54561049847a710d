"""Where the engine puts each output table as soon as it is final.

``MemorySink`` keeps them (``correlate_frames``: tests, small runs); ``ParquetSink`` writes each
one into the output folder at once (temp name, then renamed), so the engine can drop it before the next stage: a large
run never holds its two largest tables (``segments`` and ``events``, about ten rows per
execution each) together. A table produced in parts is written by polars' streaming engine
straight from the iterator of parts: parts are encoded while the next one is computed, in
order, and never all in memory. A table whose parts are computed apart (``segments``, a part
per attribution partition: in this process's threads, or on a cluster's workers with
``--cluster``) is written where each part is computed, a parquet file each (``PartWriter``),
and becomes a parquet dataset: a folder ``<name>.parquet`` of its parts in order, which
polars, pyarrow and Dask read as one table; on a cluster its rows never pass through this
process.
"""

from __future__ import annotations

import os
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, NamedTuple, Protocol

import polars as pl
from polars.io.plugins import register_io_source

from correlate.errors import CorrelateError
from correlate.frames.sorting import order_of, output_order, sorted_for_output
from correlate.frames.spill import Coded, contiguous, remove_orphans, spilled_coded
from correlate.frames.texts import as_codes
from correlate.schema import TABLES, conform

#: parquet compression of every output table: LZ4 writes faster than zstd for somewhat more
#: bytes, and every parquet reader in use (polars, pyarrow, DuckDB, Spark ≥ 3.2) reads it
COMPRESSION: Final = "lz4"


class TableSink(Protocol):
    def write(self, name: str, df: pl.DataFrame) -> None: ...

    def write_parts(self, name: str, parts: Iterator[pl.DataFrame]) -> None: ...

    def part_writer(self, name: str) -> PartWriter | None:
        """What writes each part of ``name`` where it is computed (a partition's thread, a
        cluster's worker; None: the parts are handed to ``write_parts``); ``write_written``
        then makes the table of them."""
        ...

    def write_written(self, name: str, written: Iterator[Written]) -> None: ...

    def scan(self, name: str) -> pl.LazyFrame:
        """A table already written, read back lazily (select and filter before collecting)."""
        ...


class Written(NamedTuple):
    """A part a ``PartWriter`` wrote: its file and its rows (``height``, as a frame's)."""

    path: str
    height: int


@dataclass(frozen=True)
class PartWriter:
    """Writes a part of a table (conformed to it) as a parquet file of its own in ``folder``,
    from whichever process computes it (pickled to a cluster's workers, which must see the
    folder)."""

    folder: str

    def __call__(self, df: pl.DataFrame) -> Written:
        path = os.path.join(self.folder, f"{uuid.uuid4().hex}.parquet")
        df.write_parquet(path, compression=COMPRESSION, statistics=False)
        return Written(path, df.height)


class MemorySink:
    """Keeps every table in ``tables``."""

    def __init__(self) -> None:
        self.tables: dict[str, pl.DataFrame] = {}

    def write(self, name: str, df: pl.DataFrame) -> None:
        self.tables[name] = df

    def write_parts(self, name: str, parts: Iterator[pl.DataFrame]) -> None:
        got = list(parts)
        self.tables[name] = (pl.concat(got, how="diagonal_relaxed") if got
                             else TABLES[name].empty())

    def part_writer(self, name: str) -> PartWriter | None:
        return None

    def write_written(self, name: str, written: Iterator[Written]) -> None:
        raise TypeError("MemorySink keeps frames: its part_writer is None")

    def scan(self, name: str) -> pl.LazyFrame:
        return self.tables[name].lazy()


class ParquetSink:
    """Writes ``<out_dir>/<name>.parquet`` for every table, listed in ``paths``."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        self.paths: list[Path] = []

    def write(self, name: str, df: pl.DataFrame) -> None:
        self._sink(name, df.lazy())

    def write_parts(self, name: str, parts: Iterator[pl.DataFrame]) -> None:
        """Every part must have exactly the table's schema (``conform``)."""
        self._sink(name, register_io_source(lambda *_: parts,
                                             schema=TABLES[name].polars_schema()))

    def part_writer(self, name: str) -> PartWriter | None:
        """(This pid's own parts folder removed first: ``_swept``.)"""
        folder = self._parts_folder(name)
        self._swept(name)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        return PartWriter(str(folder.absolute()))  # (a worker's folder is not this one's)

    def write_written(self, name: str, written: Iterator[Written]) -> None:
        """The folder ``<name>.parquet`` of the parts ``written`` (by ``part_writer(name)``),
        in the order given: ``part-NNNNN.parquet`` (an empty part of the table's schema where
        none was given). It replaces the table written before, file or folder."""
        folder, path = self._parts_folder(name), self.out_dir / f"{name}.parquet"
        try:
            n = -1
            for n, part in enumerate(written):
                try:
                    os.replace(part.path, folder / f"part-{n:05d}.parquet")
                except FileNotFoundError:
                    raise CorrelateError(part.path, "a part of the output table "
                                         f"{name} written by a worker, not found here: with "
                                         "--cluster, the output folder must be on a file "
                                         "system the cluster's workers share") from None
            if n < 0:
                TABLES[name].empty().write_parquet(folder / "part-00000.parquet",
                                                   compression=COMPRESSION)
            _replaced(path, folder, self.out_dir / f"{_own_prefix(name)}{os.getpid()}.old")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        self.paths.append(path)

    def _parts_folder(self, name: str) -> Path:
        return self.out_dir / f"{_own_prefix(name)}{os.getpid()}-parts"

    def _swept(self, name: str) -> None:
        """What runs killed on this host left of table ``name`` while they wrote it (a parts
        folder, a table half written, an earlier table moved aside: gigabytes at 10M
        executions), removed: those whose process is gone."""
        remove_orphans(self.out_dir, _own_prefix(name))

    def scan(self, name: str) -> pl.LazyFrame:
        return pl.scan_parquet(self.out_dir / f"{name}.parquet")

    def _sink(self, name: str, lf: pl.LazyFrame) -> None:
        """Written under a temp name and renamed: a reader of the folder meanwhile sees the
        previous table or the new one, whole, never a half-written file."""
        path = self.out_dir / f"{name}.parquet"
        self._swept(name)
        tmp = path.with_name(f"{_own_prefix(name)}{os.getpid()}.tmp")
        try:
            lf.sink_parquet(tmp, compression=COMPRESSION, statistics=False)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        self.paths.append(path)


def _own_prefix(name: str) -> str:
    """The start of the name of what this host's writers leave beside table ``name`` while they
    write it (then the pid, and ``-parts``, ``.tmp`` or ``.old``): hidden, and the same table's
    only."""
    return f".{name}.parquet.{socket.gethostname()}-"


def _replaced(path: Path, folder: Path, aside: Path) -> None:
    """``folder`` renamed to ``path``; what ``path`` was (a file or a folder of an earlier
    run) moved aside first, then removed: a folder renamed onto a file, or onto a folder that
    holds files, fails."""
    had = path.exists()
    if had:
        os.replace(path, aside)
    os.replace(folder, path)
    if had:
        shutil.rmtree(aside) if aside.is_dir() else aside.unlink()


def put(sink: TableSink, name: str, df: pl.DataFrame) -> pl.DataFrame:
    """Conform and sort ``df`` as output table ``name`` and hand it to ``sink``; contiguous
    (one chunk), so that the summary's float sums over it do not depend on how many
    partitions it was made of (a sum of a chunked column adds each chunk's sum)."""
    out = sorted_for_output(conform(df, TABLES[name], path=name), TABLES[name]).rechunk()
    sink.write(name, out)
    return out


#: rows per part when a big table is written in parts (a gather of a whole big table at once
#: doubles it in memory)
PART_ROWS = 1_000_000


def put_in_parts(sink: TableSink, name: str, df: pl.DataFrame) -> None:
    """``put`` for a big table: sorted, then gathered, conformed and written ``PART_ROWS`` at
    a time (Categorical columns sort as their strings do)."""
    table = TABLES[name]
    rows = output_order(df, table)
    take = df.slice if rows is None else (lambda i, n: df[rows.slice(i, n)])
    sink.write_parts(name, (conform(take(i, PART_ROWS), table, path=name)
                            for i in range(0, df.height, PART_ROWS)))


def put_kept(sink: TableSink, name: str, df: pl.DataFrame, codes: tuple[str, ...]
             ) -> pl.DataFrame:
    """``put`` for a big table the engine keeps for the summary and the findings: written a
    part at a time (``put_in_parts``) and returned as ``put`` returns it, but with its
    columns of ``codes`` as Categorical (``as_codes``), those already Categorical left so:
    the texts of the whole table are never made (only each part's, as it is written). Put
    in order first (the table kept is the whole of it in order), so written in slices."""
    df = sorted_for_output(df, TABLES[name]).rechunk()
    put_in_parts(sink, name, df)
    return _with_codes(df, name, codes)


def read_back(sink: TableSink, name: str, codes: tuple[str, ...]) -> pl.DataFrame:
    """A table ``sink`` has written, read back as ``put_kept`` keeps it (one chunk per
    column, the columns of ``codes`` as Categorical, cast as read): a big table a later
    stage reads need not be held by the stages in between."""
    return contiguous(_with_codes(sink.scan(name).with_columns(
        pl.col(codes).cast(pl.Categorical)).collect(), name, codes))


def _with_codes(df: pl.DataFrame, name: str, codes: tuple[str, ...]) -> pl.DataFrame:
    """``conform`` to table ``name``, its columns of ``codes`` as Categorical."""
    table = TABLES[name]
    kept = {n: df.get_column(n) for n in codes
            if n in table.names and df.schema.get(n) == pl.Categorical}
    rest = conform(df.drop(kept), replace(
        table, columns=tuple(c for c in table.columns if c.name not in kept),
        sort_by=tuple(c for c in table.sort_by if c not in kept)), path=name)
    return as_codes(pl.DataFrame([kept[n] if n in kept else rest.get_column(n)
                                  for n in table.names]), codes)


class Merged:
    """A big output table made in parts whose rows interleave (parts by key of a table in
    time order), written in its order without holding it whole: each part's rows are cut
    into ranges of the table's first sort key (never null) at ``cuts`` and spilled range by
    range (``add``); ``put`` then reads each range of every part, puts it in order and
    writes it. Any cuts give the same table; cuts near the quantiles of the first key keep
    each range near ``RANGE_ROWS``.

    Rows whose first sort key is not known yet (a time on the run timeline, before the
    workers' clocks are) are cut at a provisional value of it (``add``'s ``at``) and made
    when read back (``put``'s ``made``); the key made differs from the value cut at by
    ``moved`` at most (the clocks' change), so a later range can hold rows that sort
    before some of this one's: those rows of a range are carried to the next (a
    bounded-lag merge). A carry beyond ``CARRIED_ROWS`` sends the rest through a merge by
    the key made, spilled again: slower, never held whole."""

    def __init__(self, name: str, cuts: list[int]) -> None:
        self.table = TABLES[name]
        self.cuts = pl.Series(sorted(set(cuts)), dtype=pl.Int64)
        self.ranges: list[list[Coded]] = [[] for _ in range(self.cuts.len() + 1)]

    def add(self, df: pl.DataFrame, at: pl.Series | None = None) -> None:
        where = self.cuts.search_sorted(df.get_column(self.table.sort_by[0]) if at is None
                                        else at, side="right")
        # each range's rows gathered and spilled one range at a time, in their order in
        # ``df`` (a partition of ``df`` by range would copy all of it at once)
        order = order_of(where)
        ends = where.gather(order).search_sorted(pl.Series(range(self.cuts.len() + 1),
                                                           dtype=where.dtype),
                                                 side="right").to_list()
        for r, (start, end) in enumerate(zip([0, *ends[:-1]], ends, strict=True)):
            if end > start:
                self.ranges[r].append(spilled_coded(df[order.slice(start, end - start)]))

    def put(self, sink: TableSink, made: Made | None = None,
            moved: tuple[int, int] = (0, 0)) -> None:
        sink.write_parts(self.table.name,
                         (df for df in self._merged(made, moved) if df.height))

    def _merged(self, made: Made | None, moved: tuple[int, int]) -> Iterator[pl.DataFrame]:
        """Each range's rows in order, those a later range may precede (first sort key at or
        past the next cut, moved as far down as a key can be) carried to the next range."""
        first = self.table.sort_by[0]
        carried = None
        ends = [*(c + moved[0] for c in self.cuts), None]
        while self.ranges:
            parts, end = self.ranges.pop(0), ends.pop(0)
            df = pl.concat([p.take() for p in parts]) if parts else None
            if df is not None and made is not None:
                df = made(df)
            df = pl.concat([d for d in (carried, df) if d is not None]) if (
                carried is not None or df is not None) else self.table.empty()
            if end is None:
                yield self._in_order(df)
                return
            later = df.get_column(first) >= end
            carried = df.filter(later) if later.any() else None
            yield self._in_order(df if carried is None else df.filter(~later))
            if carried is not None and carried.height > CARRIED_ROWS:
                # (clocks far apart: the rest merged again)
                yield from self._again(carried, made, moved, ends[:-1])
                return

    def _again(self, carried: pl.DataFrame, made: Made | None, moved: tuple[int, int],
               ends: list[int]) -> Iterator[pl.DataFrame]:
        """The rows carried and those of the ranges not yet read (``ends``: their cuts moved
        down), merged by the first sort key made (spilled again)."""
        spread = moved[1] - moved[0]
        again = Merged(self.table.name, [
            *cuts(carried.get_column(self.table.sort_by[0]), carried.height),
            *ends, *(e + spread for e in ends)])
        again.add(carried)
        del carried
        while self.ranges:
            parts = self.ranges.pop(0)
            if parts:
                df = pl.concat([p.take() for p in parts])
                again.add(df if made is None else made(df))
        yield from again._merged(None, (0, 0))

    def _in_order(self, df: pl.DataFrame) -> pl.DataFrame:
        rows = output_order(df, self.table)
        return conform(df if rows is None else df[rows], self.table, path=self.table.name)


#: what makes an output table's rows from those ``Merged`` spilled
Made = Callable[[pl.DataFrame], pl.DataFrame]
#: rows of a range of ``Merged``, about: each part's rows of a range are one spilled piece,
#: whose file costs a write and a read whatever its size, and a range is held whole to be
#: put in order
RANGE_ROWS = 2_000_000
#: rows ``Merged`` carries from one range to the next at most before it merges the rest by
#: the first sort key again
CARRIED_ROWS = 4_000_000


def cuts(sample: pl.Series, rows: int) -> list[int]:
    """Cuts of a first sort key for ``Merged``: ranges of about ``RANGE_ROWS`` rows of a
    table of ``rows`` rows whose key is ``sample`` (a sample of its values, any order)."""
    ranges = -(-rows // RANGE_ROWS)
    if ranges < 2 or sample.is_empty():
        return []
    sample = sample.drop_nulls().sort()
    return sorted({int(sample[min(sample.len() - 1, i * sample.len() // ranges)])
                   for i in range(1, ranges)})
