"""Which run folder an output folder was made from.

``correlate`` records in ``summary.json`` ``input`` the run folder it read, the run's id (from
``manifest.json``; null for imported runs) and a digest of the run folder's input files;
``compare`` checks that a ``correlated/`` folder inside a run folder was made from that run
folder (``correlate r2 -o r1/correlated`` would otherwise make ``compare r1 r2`` compare r2
with itself).

The digest covers every file of the run folder except correlate's own outputs (any folder
holding a ``summary.json``) and hidden files (editors' and our temporary files): its path,
size and the first and last ``SAMPLE`` bytes. Not modification times, so a copied run folder
is still the same run; not whole contents, so a run of many GB is digested in moments.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from correlate.errors import InputError

#: bytes read from each end of every input file
SAMPLE = 4096


def _input_files(run_dir: Path, out_dir: Path | None) -> Iterator[tuple[str, Path]]:
    """``(path relative to run_dir, path)`` of every input file, in a fixed order."""
    skip = out_dir.resolve() if out_dir is not None else None
    for root, dirs, files in os.walk(run_dir):
        here = Path(root)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and (here / d).resolve() != skip
                         and not (here / d / "summary.json").is_file())
        for name in sorted(files):
            if not name.startswith("."):
                path = here / name
                yield path.relative_to(run_dir).as_posix(), path


def _file_digest(path: Path, size: int) -> bytes:
    with path.open("rb") as f:
        head = f.read(SAMPLE)
        tail = b""
        if size > 2 * SAMPLE:
            f.seek(size - SAMPLE)
            tail = f.read(SAMPLE)
        elif size > SAMPLE:
            tail = f.read()
    return hashlib.sha256(head + tail).digest()


def digest(run_dir: Path, out_dir: Path | None = None) -> dict[str, Any]:
    """``digest`` (hex), ``files`` and ``bytes`` of the run folder's input files (a run
    folder that is one file, a single Darshan log, is that file)."""
    files = ([(run_dir.name, run_dir)] if run_dir.is_file()
             else list(_input_files(run_dir, out_dir)))
    h = hashlib.sha256()
    total = 0
    for rel, path in files:
        size = path.stat().st_size
        total += size
        h.update(f"{rel}\0{size}\0".encode())
        h.update(_file_digest(path, size))
    return {"digest": h.hexdigest(), "files": len(files), "bytes": total}


def manifest_run_id(run_dir: Path) -> str | None:
    """The run id of ``collect``'s manifest (None: an imported run, or no manifest)."""
    try:
        value = json.loads((run_dir / "manifest.json").read_text()).get("run_id")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def record(run_dir: Path, out_dir: Path, run_id: str | None) -> dict[str, Any]:
    """``summary.json`` ``input``: the run folder read, its run id and its inputs' digest."""
    return {"run_dir": str(run_dir.resolve()), "run_id": run_id, **digest(run_dir, out_dir)}


def check(run_dir: Path, out_dir: Path, summary: dict[str, Any]) -> None:
    """Raise ``InputError`` naming the mismatch unless ``out_dir`` (its ``summary``) was made
    from ``run_dir`` as it is now."""
    made = summary.get("input")
    rerun = f"run `correlate {run_dir}` again to correlate it"
    if not isinstance(made, dict) or not made.get("digest"):
        raise InputError(out_dir, f"does not record which run folder it was made from (written "
                                  f"by an older correlate); {rerun}")
    source = made.get("run_dir")
    elsewhere = f" ({source})" if source and source != str(run_dir.resolve()) else ""
    now_id = manifest_run_id(run_dir)
    if made.get("run_id") and now_id and made["run_id"] != now_id:
        raise InputError(out_dir, f"made from run {made['run_id']}{elsewhere}, not from "
                                  f"{run_dir} (run {now_id}); {rerun}")
    now = digest(run_dir, out_dir)
    if now["digest"] != made["digest"]:
        raise InputError(out_dir, f"made from other input files{elsewhere} than {run_dir} "
                                  f"holds now ({made.get('files')} files, {made.get('bytes')} B "
                                  f"then; {now['files']} files, {now['bytes']} B now); {rerun}")
