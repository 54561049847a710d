"""``RunFrames``: the canonical frames of one run, as every source adapter returns them.

Adapters (``run_folder``, ``mofka_csv``, ``miniapp``) each expose
``load(path: Path) -> RunFrames``. Every field is a polars DataFrame conforming to the table of
the same name in ``correlate.schema`` (empty when the source has no such data); ``facts`` holds
run-level facts for reports (command, versions, hosts, …) and ``warnings`` the data-quality
messages found while reading. Records an adapter could not use are rows of ``rejects``.

The run-folder adapter leaves its largest tables as LazyFrames, read when needed: ``transitions``
and ``func_stats`` (scans of the parts on disk) and ``io_segments`` (read from the Darshan logs,
each process's inside its attribution partition; a small run's are read with the logs' other
records, ``run_folder.KEEP_SEGMENTS``), so that the engine never holds them for the whole run
of a big one; ``collected()`` (what ``detect.load`` returns unless asked for ``lazy``) makes
every table a DataFrame, and ``table(name)`` reads one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from typing import Any

import polars as pl

from correlate.errors import InputError, first_line
from correlate.frames import spill
from correlate.frames.per_process import Process, by_process, process_order
from correlate.frames.spill import in_part
from correlate.schema import TABLES, conform


def _empty(name: str) -> Any:
    return field(default_factory=lambda: TABLES[name].empty())


@dataclass(frozen=True)
class RunFrames:
    processes: pl.DataFrame = _empty("processes")
    executions: pl.DataFrame = _empty("executions")
    transitions: pl.DataFrame | pl.LazyFrame = _empty("transitions")
    startstops: pl.DataFrame = _empty("startstops")
    transfers: pl.DataFrame = _empty("transfers")
    transfer_keys: pl.DataFrame = _empty("transfer_keys")
    dependencies: pl.DataFrame = _empty("dependencies")
    func_stats: pl.DataFrame | pl.LazyFrame = _empty("func_stats")
    clock_samples: pl.DataFrame = _empty("clock_samples")
    clock_markers: pl.DataFrame = _empty("clock_markers")
    host_load: pl.DataFrame = _empty("host_load")
    file_opens: pl.DataFrame = _empty("file_opens")
    execution_slices: pl.DataFrame = _empty("execution_slices")
    task_labels: pl.DataFrame = _empty("task_labels")
    span_tree: pl.DataFrame = _empty("span_tree")
    span_dask_metrics: pl.DataFrame = _empty("span_dask_metrics")
    data_arrivals: pl.DataFrame = _empty("data_arrivals")
    senders: pl.DataFrame = _empty("senders")
    worker_pauses: pl.DataFrame = _empty("worker_pauses")
    io_segments: pl.DataFrame | pl.LazyFrame = _empty("io_segments")
    io_file_counters: pl.DataFrame = _empty("io_file_counters")
    darshan_logs: pl.DataFrame = _empty("darshan_logs")
    rejects: pl.DataFrame = _empty("rejects")
    #: the transitions in parts by key (``correlate.frames.spill``), when the source spilled
    #: them so (empty: ``transition_parts`` filters ``transitions``)
    transitions_in_parts: tuple[pl.LazyFrame, ...] = ()
    #: each process's profile rows, when the source spilled them a process at a time (empty:
    #: ``func_stats`` is read whole and sliced per process)
    func_stats_by_process: tuple[tuple[Process, pl.LazyFrame], ...] = ()
    #: source format name, e.g. "run-folder", "mofka-csv", "miniapp"
    source_format: str = "unknown"
    facts: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    #: the files lazy tables are read from, to name the one whose data cannot be read
    lazy_parts: tuple[str, ...] = ()

    @classmethod
    def table_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.name in TABLES)

    def conformed(self, *, path: str = "<frames>") -> RunFrames:
        """Every table cast to its declared schema (missing nullable columns added); lazy
        tables stay lazy."""
        return replace(self, **{n: conform(getattr(self, n), TABLES[n], path=f"{path}:{n}")
                                for n in self.table_names()})

    def table(self, name: str, columns: list[str | pl.Expr] | None = None, *,
              contiguous: bool = True) -> pl.DataFrame:
        """Table ``name`` (only ``columns``, names or expressions, if given) as a DataFrame; a
        lazy one is read now, and not kept, ``contiguous`` unless its user only slices it per
        process (the copy is then wasted)."""
        df = getattr(self, name)
        df = df if columns is None else df.select(columns)
        if not isinstance(df, pl.LazyFrame):
            return df
        try:
            got = df.collect()
        except (OSError, pl.exceptions.PolarsError) as err:  # a part's data is damaged
            raise unreadable(self.lazy_parts, name, err) from None
        return spill.contiguous(got) if contiguous else got

    def keyed_parts(self) -> int:
        """How many parts by key the transitions are read in where a part at a time is held:
        the parts the source spilled them in, else about ``spill.KEYED_ROWS_PER_PART`` rows
        each."""
        return len(self.transitions_in_parts) or spill.parts_for(
            self.transitions.lazy().select(pl.len()).collect().item(),
            spill.KEYED_ROWS_PER_PART)

    def transition_parts(self, parts: int) -> list[pl.LazyFrame]:
        """The transitions in ``parts`` parts by key (``spill.in_part``): every key's rows in
        one part, in their order. Where the source spilled them in parts, part ``p`` is read
        from the one that holds its keys (``parts`` a multiple of those: ``b % parts % n ==
        b % n`` when ``n`` divides ``parts``)."""
        spilled = self.transitions_in_parts
        if len(spilled) == parts:
            return list(spilled)
        if spilled and parts % len(spilled) == 0:
            return [spilled[p % len(spilled)].filter(in_part(p, parts)) for p in range(parts)]
        if parts == 1:
            return [self.transitions.lazy()]
        return [self.transitions.lazy().filter(in_part(p, parts)) for p in range(parts)]

    def func_stats_per_process(self) -> Iterator[tuple[Process, pl.DataFrame]]:
        """Each process's profile rows, in ``process_order``: read a process at a time where
        the source spilled them so, else sliced from the whole table."""
        if not self.func_stats_by_process:
            whole = self.table("func_stats", contiguous=False)
            yield from sorted(by_process(whole).items(), key=lambda kv: process_order(kv[0]))
            return
        for process, rows in sorted(self.func_stats_by_process,
                                    key=lambda kv: process_order(kv[0])):
            try:
                yield process, rows.collect()
            except (OSError, pl.exceptions.PolarsError) as err:
                raise unreadable(self.lazy_parts, "func_stats", err) from None

    def collected(self) -> RunFrames:
        """The same frames with every lazy table read."""
        # Any: mypy checks ``**lazy`` against every field's type, the str ones too
        lazy: dict[str, Any] = {n: self.table(n) for n in self.table_names()
                                if isinstance(getattr(self, n), pl.LazyFrame)}
        return replace(self, **lazy) if lazy else self


def unreadable(parts: tuple[str, ...] | list, what: str, err: Exception) -> InputError:
    """The error for lazily read data that could not be decoded: naming the first of
    ``parts`` (raw table parts, in ``<table>/`` folders) that cannot be decoded alone (footers
    were checked when the scan was built, the data only now), else ``what``."""
    from pathlib import Path

    from correlate.sources import run_parts

    for part in map(Path, parts):
        try:
            run_parts.read(part, TABLES[part.parent.name])
        except run_parts.UNREADABLE_PART as bad:  # the undecodable part
            return InputError(part, f"unreadable data: {first_line(bad)}")
    return InputError(what, f"unreadable data: {first_line(err)}")


def make_rejects(rows: list[tuple[str, str | None, str, int]]) -> pl.DataFrame:
    """Rejects frame from (source, file, reason, count) tuples; zero counts are left out."""
    kept = [r for r in rows if r[3]]
    return conform(pl.DataFrame(kept, schema=["source", "file", "reason", "count"], orient="row"),
                   TABLES["rejects"]) if kept else TABLES["rejects"].empty()
