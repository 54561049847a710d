"""Read a correlate output folder back: the output tables and ``summary.json``, nothing else.

``load_outputs(out_dir) -> Outputs``. Every table of ``correlate.schema.outputs`` is returned
conformed to its declared schema; a missing table file gives an empty table (older or partial
output folders still render). A folder with neither ``tasks.parquet`` nor ``summary.json`` is
not an output folder and raises ``InputError``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

import correlate.schema.outputs  # noqa: F401  (registers the output tables)
from correlate.errors import InputError
from correlate.schema import TABLES, conform

TABLE_NAMES = ("tasks", "task_files", "task_functions", "unattributed", "clocks", "segments",
               "events")


@dataclass(frozen=True)
class Outputs:
    """The output tables of one correlated run plus its summary."""

    tables: dict[str, pl.DataFrame]
    summary: dict[str, Any]
    #: table names whose file was absent (reported as a data-quality note)
    missing: tuple[str, ...] = ()

    def __getitem__(self, name: str) -> pl.DataFrame:
        return self.tables[name]


def _read_table(path: Path, name: str) -> pl.DataFrame:
    try:
        return conform(pl.read_parquet(path), TABLES[name], path=str(path))
    except (OSError, pl.exceptions.PolarsError) as err:
        raise InputError(path, f"cannot read table {name}: {err}") from err


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InputError(path, f"cannot read summary: {err}") from err
    if not isinstance(data, dict):
        raise InputError(path, "summary.json is not a JSON object")
    return data


def load_outputs(out_dir: Path) -> Outputs:
    """Tables and summary of ``out_dir`` (written by ``correlate.engine.write_outputs``)."""
    out_dir = Path(out_dir)
    summary_path = out_dir / "summary.json"
    if not (out_dir / "tasks.parquet").exists() and not summary_path.exists():
        raise InputError(out_dir, "not a correlate output folder (no tasks.parquet or "
                         "summary.json); run `correlate RUN_DIR` first")
    tables: dict[str, pl.DataFrame] = {}
    missing: list[str] = []
    for name in TABLE_NAMES:
        path = out_dir / f"{name}.parquet"
        if path.exists():
            tables[name] = _read_table(path, name)
        else:
            tables[name] = TABLES[name].empty()
            missing.append(name)
    summary = _read_summary(summary_path) if summary_path.exists() else {}
    return Outputs(tables=tables, summary=summary, missing=tuple(missing))
