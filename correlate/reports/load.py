"""Read a correlate output folder back: the output tables and ``summary.json``, nothing else.

``load_outputs(out_dir) -> Outputs``. Every table of ``correlate.schema.outputs`` is returned
conformed to its declared schema; a missing table file gives an empty table (older or partial
output folders still render). A folder with neither ``tasks.parquet`` nor ``summary.json`` is
not an output folder and raises ``InputError``. A table is read when a report first asks for
it (``out[name]``, then kept), or only in part (``out.scan(name)``): the ``events`` of a large
run (about ten per execution) are read for the trace's scheduler rows alone, and never whole.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from correlate.errors import InputError
from correlate.schema import TABLES, conform, outputs
from correlate.timeline import coroutines

#: the tasks' columns that no report reads, left unread: the tasks table of ten million
#: executions is gigabytes (a report that needs one reads it with ``read``)
UNREAD_TASKS = ("group", "span_id", "annotations", "local_start_ns", "local_stop_ns",
                "wait_dependencies_s", "wait_queued_s", "transfer_bytes", "transfer_sources",
                "window_source")


@dataclass(frozen=True)
class Outputs:
    """The output tables of one correlated run plus its summary."""

    out_dir: Path
    summary: dict[str, Any]
    #: table names whose file was absent (reported as a data-quality note)
    missing: tuple[str, ...] = ()
    _read: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)

    def __getitem__(self, name: str) -> pl.DataFrame:
        """Table ``name``, read whole on first use (the tasks without ``UNREAD_TASKS``)."""
        if name not in self._read:
            scan = self.scan(name)
            self._read[name] = self.collect(name, scan.drop(UNREAD_TASKS) if name == "tasks"
                                            else scan)
        return self._read[name]

    def scan(self, name: str) -> pl.LazyFrame:
        """Table ``name`` as a LazyFrame (select and filter it before collecting), conformed."""
        if name in self._read:
            return self._read[name].lazy()
        if name in self.missing or (name in outputs.OPTIONAL_NAMES
                                     and not self._path(name).exists()):
            return TABLES[name].empty().lazy()
        path = self._path(name)
        try:  # conform reads the file's schema
            return conform(pl.scan_parquet(path), TABLES[name], path=str(path))
        except (OSError, pl.exceptions.PolarsError) as err:
            raise _unreadable(path, name, err) from err

    def read(self, name: str, columns: list[str]) -> pl.DataFrame:
        """Only ``columns`` of table ``name`` (not kept)."""
        return self.collect(name, self.scan(name).select(columns))

    def collect(self, name: str, query: pl.LazyFrame) -> pl.DataFrame:
        """``query`` (built on ``scan(name)``) read, a bad file reported by name."""
        try:
            return query.collect()
        except (OSError, pl.exceptions.PolarsError) as err:
            raise _unreadable(self._path(name), name, err) from err

    def drawn_tasks(self, columns: list[str]) -> pl.DataFrame:
        """``columns`` of the tasks as timelines draw them (``coroutines.drawn``: a coroutine
        execution as its active slices), made once for every renderer."""
        name = "drawn " + " ".join(columns)
        if name not in self._read:
            self._read[name] = coroutines.drawn(self["tasks"].select(columns), self["slices"])
        return self._read[name]

    def _path(self, name: str) -> Path:
        return self.out_dir / f"{name}.parquet"


def _unreadable(path: Path, name: str, err: Exception) -> InputError:
    return InputError(path, f"cannot read table {name}: {err}")


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InputError(path, f"cannot read summary: {err}") from err
    if not isinstance(data, dict):
        raise InputError(path, "summary.json is not a JSON object")
    return data


def load_outputs(out_dir: Path) -> Outputs:
    """Summary of ``out_dir`` (written by ``correlate.engine.write_outputs``) and its tables,
    each read when first used."""
    out_dir = Path(out_dir)
    summary_path = out_dir / "summary.json"
    if not (out_dir / "tasks.parquet").exists() and not summary_path.exists():
        raise InputError(out_dir, "not a correlate output folder (no tasks.parquet or "
                         "summary.json); run `correlate RUN_DIR` first")
    missing = tuple(name for name in outputs.NAMES if not (out_dir / f"{name}.parquet").exists())
    summary = _read_summary(summary_path) if summary_path.exists() else {}
    return Outputs(out_dir=out_dir, summary=summary, missing=missing)
