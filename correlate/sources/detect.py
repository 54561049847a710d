"""Which format a folder is in, and the one ``load`` that dispatches to its adapter.

Formats: ``run-folder`` (ours), ``mofka-csv`` (Mofka-Dask coupler CSVs) and ``miniapp``
(Recup MiniApp ``Reports/``). Each adapter module has ``looks_like(path)`` and ``load(path)``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import NoReturn

from correlate.errors import InputError
from correlate.frames.mappers import Mapper, local_map
from correlate.sources import FORMATS
from correlate.sources.frames import RunFrames


def _adapter(fmt: str) -> ModuleType:
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
    _unrecognised(path)


def detected_as(path: Path, fmt: str) -> str | None:
    """``fmt`` when the folder holds what that format needs; else the format it looks like
    (None: none)."""
    if path.is_dir() and _adapter(fmt).looks_like(path):
        return fmt
    try:
        return detect(path)
    except InputError:
        return None


def _not_that_format(path: Path, fmt: str) -> NoReturn:
    """A ``--format`` the folder is not in, as one line saying what to give instead."""
    found = detected_as(path, fmt)
    hint = (f"the folder is in format {found}: drop --format or give --format {found}" if found
            else "drop --format to be told what the folder lacks")
    raise InputError(path, f"--format {fmt} needs {FORMATS[fmt][1]}, not found here; {hint}")


def _unrecognised(path: Path) -> NoReturn:
    """Why ``path`` is no run folder, and what to do instead, as one line."""
    names = sorted(p.name for p in path.iterdir())
    logs = [n for n in names if n.endswith(".darshan")]
    if logs and len(logs) == len(names):
        raise InputError(path, f"holds only Darshan logs ({len(logs)} .darshan file(s)), no Dask "
                         f"records; to decode the logs: correlate darshan {path} -o out.parquet")
    if "manifest.json" in names and not (path / "procs").is_dir():
        raise InputError(path, "no Dask scheduler or worker recorded into it (manifest.json but "
                         "no procs/: the job started none, or they could not write there)"
                         f"{_exit_code(path / 'manifest.json')}")
    shown = ", ".join(names[:12]) + (f", … ({len(names)} in all)" if len(names) > 12 else "")
    expected = "; ".join(f"{f}: {what}" for f, (_m, what) in FORMATS.items())
    raise InputError(path, f"unrecognised folder: found {shown or 'nothing'}; expected one of "
                     f"{expected}")


def _exit_code(manifest: Path) -> str:
    """``; the job exited with code N`` when the manifest says so (it may be damaged)."""
    import json

    try:
        code = json.loads(manifest.read_text()).get("exit_code")
    except (OSError, ValueError, AttributeError):
        return ""
    return f"; the job exited with code {code}" if isinstance(code, int) else ""


def load(path: Path, fmt: str | None = None, mapper: Mapper = local_map, *,
         lazy: bool = False) -> RunFrames:
    """Frames of the folder; ``mapper`` reads its Darshan logs (a task per log, or per few
    small ones). With ``lazy`` the tables an adapter can leave on disk stay LazyFrames (see
    ``RunFrames``)."""
    fmt = fmt or detect(path)
    if fmt not in FORMATS:
        raise InputError(path, f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if fmt != detected_as(path, fmt):
        _not_that_format(path, fmt)
    frames = _adapter(fmt).load(path, mapper=mapper)
    return frames if lazy else frames.collected()
