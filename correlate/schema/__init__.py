"""Every table of the project, defined once.

The run folder written by ``collectors/`` and every frame that flows through ``correlate`` is a
table declared here. A table is a name, an ordered tuple of columns and a doc line; each column
has a dtype, a unit in its name (``_ns``, ``_s``, ``_bytes``, ``_count``) and a doc string.

Importing this package is stdlib-only, so that the collectors (which run inside the user's Dask
processes) can use it without importing polars; ``polars_schema``/``arrow_schema`` import their
library lazily. ``schema.table`` says how a table is declared; the submodules declare them,
grouped by who writes them, each listing its tables in ``ALL``:

- ``schema.run``      — raw capture tables in the run folder (``procs/<proc>/<table>.arrows``)
- ``schema.darshan``  — canonical tables decoded from Darshan logs
- ``schema.canonical``— the frames every source adapter produces for the engine
- ``schema.outputs``  — what ``correlate`` writes (tasks.parquet, task_files.parquet, …)

``TABLES`` holds all of them, keyed by name. It is built when first asked for: a collector
importing ``correlate.schema.run`` inside a worker does not import the other declarations.
"""

from __future__ import annotations

from typing import Any

from correlate.schema.table import Column, Table, conform, describe

__all__ = ["OUTPUT_FORMAT_VERSION", "RUN_FORMAT_VERSION", "TABLES", "Column", "Table", "conform",
           "describe"]

#: Version of the run-folder format written by ``collectors`` (manifest.json, proc.json).
#: 2: parts are Arrow IPC files (``schema.run``), no longer Parquet (1, still read).
#: 3: one Arrow IPC stream per table and process, repeated text as ids (2 and 1 still read).
RUN_FORMAT_VERSION = 3
#: Version of the tables written by ``correlate`` into its output folder.
OUTPUT_FORMAT_VERSION = 1


def _by_name(*groups: tuple[Table, ...]) -> dict[str, Table]:
    tables: dict[str, Table] = {}
    for t in (t for group in groups for t in group):
        if t.name in tables:
            raise ValueError(f"table {t.name!r} defined twice")
        tables[t.name] = t
    return tables


def __getattr__(name: str) -> Any:
    if name in ("canonical", "darshan", "outputs", "run"):  # ``schema.run`` without an import
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    if name == "TABLES":
        from correlate.schema import canonical, darshan, outputs, run

        tables = _by_name(run.ALL, darshan.ALL, canonical.ALL, outputs.ALL)
        globals()["TABLES"] = tables
        return tables
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
