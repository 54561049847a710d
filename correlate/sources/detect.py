"""Which format a folder is in, and the one ``load`` that dispatches to its adapter.

Formats: ``run-folder`` (ours), ``mofka-csv`` (Mofka-Dask coupler CSVs) and ``miniapp``
(Recup MiniApp ``Reports/``). Each adapter module has ``looks_like(path)`` and ``load(path)``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from correlate.errors import InputError
from correlate.mappers import Mapper, local_map
from correlate.sources.frames import RunFrames

#: format name -> (adapter module, what the folder must hold)
FORMATS: dict[str, tuple[str, str]] = {
    "run-folder": ("correlate.sources.run_folder",
                   "procs/<role>-<host>-<pid>/proc.json (+ manifest.json from `collect`)"),
    "mofka-csv": ("correlate.sources.mofka_csv",
                  "scheduler_transition.csv or worker_transition.csv (Mofka-Dask)"),
    "miniapp": ("correlate.sources.miniapp", "task_stream.yaml (Recup MiniApp Reports/)"),
    "task-stream": ("correlate.sources.task_stream",
                    "task_stream.parquet (+ workers.json, darshan/) from Dask's task stream"),
}


def _adapter(fmt: str):  # type: ignore[no-untyped-def]
    return importlib.import_module(FORMATS[fmt][0])


def detect(path: Path) -> str:
    if not path.is_dir():
        raise InputError(path, "not a folder (expected a run folder or an imported one)")
    for fmt in FORMATS:
        try:
            if _adapter(fmt).looks_like(path):
                return fmt
        except ModuleNotFoundError:
            continue
    found = sorted(p.name for p in path.iterdir())[:12]
    expected = "; ".join(f"{f}: {what}" for f, (_m, what) in FORMATS.items())
    raise InputError(path, f"unrecognised folder: found {found or 'nothing'}; expected one of "
                     f"{expected}")


def load(path: Path, fmt: str | None = None, mapper: Mapper = local_map, *,
         lazy: bool = False) -> RunFrames:
    """Frames of the folder; ``mapper`` reads its Darshan logs (one task per log). With
    ``lazy`` the tables an adapter can leave on disk stay LazyFrames (see ``RunFrames``)."""
    fmt = fmt or detect(path)
    if fmt not in FORMATS:
        raise InputError(path, f"unknown format {fmt!r}; expected one of {sorted(FORMATS)}")
    frames = _adapter(fmt).load(path, mapper=mapper)
    return frames if lazy else frames.collected()
