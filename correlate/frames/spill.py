"""Tables written to this process's spill folder (removed when it ends) and scanned from there,
so that a stage reads them when it needs them instead of every stage carrying them; and the
parts by key hash that let a stage read a big table a part at a time (``spilled_parts``).

Every table keyed by task is split the same way: a key's bucket is its text's hash, modulo
``BUCKETS``, and part ``p`` of ``n`` holds the buckets ``b`` with ``b % n == p``, so the rows of
one key (its transitions, its executions) are in the same part of every table. Within a part
the rows keep their order, so whatever a stage takes per key (a first, a last) is the same read
in parts as whole.
"""

from __future__ import annotations

import atexit
import functools
import math
import os
import re
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from correlate.frames.texts import per_text

#: a key's bucket: its text's hash modulo this; part ``p`` of ``n`` holds the buckets ``b``
#: with ``b % n == p`` (so a stage reads a keyed table in at most this many parts)
BUCKETS = 64
#: rows of the keyed tables (the transitions) a part holds at most (where the buckets allow):
#: a run of more is spilled in parts by the load and read a part at a time by the timeline
#: (slower than whole: runs of up to about 1.4M tasks, eleven transitions each, are read
#: whole). A part's rows and what the timeline makes of them set the peak of the timeline's
#: two stages (docs/performance.md, 10M executions)
KEYED_ROWS_PER_PART = 16_000_000
#: rows a ``Spool`` holds in memory before it spills them
SPOOL_ROWS = 1_000_000


def bucket(key: str = "key") -> pl.Expr:
    """Each row's bucket (0 … ``BUCKETS`` − 1), from its key's text (a Categorical key too)."""
    return (pl.col(key).cast(pl.String).hash() % BUCKETS).cast(pl.Int32)


def part_of(parts: int, key: str = "key") -> pl.Expr:
    """Each row's part (0 … ``parts`` − 1) of ``parts``."""
    return bucket(key) % parts


def in_part(part: int, parts: int, key: str = "key") -> pl.Expr:
    """True for the rows of part ``part`` of ``parts``."""
    return part_of(parts, key) == part


def parts_for(rows: int, rows_per_part: int) -> int:
    """How many parts to read ``rows`` in, at most ``rows_per_part`` each where ``BUCKETS``
    allows (a bucket is not split)."""
    return max(1, min(BUCKETS, math.ceil(rows / rows_per_part)))


def spilled(frame: pl.DataFrame) -> pl.LazyFrame:
    """``frame`` written to an Arrow file in the spill folder and scanned from there;
    LZ4-compressed, so that it is read into memory rather than memory-mapped (a mapped file's
    pages count in the process's memory as they are read, and stay while the scan is used).
    Its Categorical columns are written as their codes and scanned back as the same columns
    (``coded``: the scan is this process's; a column written as Arrow's dictionary is slower
    to write and is looked up text by text again when read)."""
    codes, back = coded(frame)
    scan = pl.scan_ipc(_written(codes))
    return scan.with_columns(back) if back else scan


def _written(frame: pl.DataFrame) -> Path:
    """``frame`` written to a new LZ4-compressed Arrow file in the spill folder."""
    path = spill_path(".arrow")
    frame.write_ipc(path, compression="lz4")
    return path


def coded(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[pl.Expr]]:
    """``frame`` with its Categorical columns as their codes, and the expressions that make
    them the same Categorical columns again, in this process (its categories hold their texts;
    the spill folder lives no longer; the expressions hold the categories, which polars would
    forget, numbering new texts from 0 again, once no Categorical column is alive). A
    Categorical column read back from Arrow, or cast from its strings, is looked up text by
    text in the categories again: about twenty times as long as taking its codes back."""
    names = [name for name, dtype in frame.schema.items() if dtype == pl.Categorical]
    return (frame.with_columns(pl.col(n).to_physical() for n in names),
            [pl.col(n).cat.to(pl.Categorical) for n in names])


@dataclass(frozen=True)
class Coded:
    """A frame in the spill folder, its Categorical columns as their codes (``coded``)."""

    path: Path
    back: list[pl.Expr]

    def take(self) -> pl.DataFrame:
        """The frame as it was; its file is removed (read once)."""
        try:
            return pl.scan_ipc(self.path).with_columns(self.back).collect()
        finally:
            self.path.unlink(missing_ok=True)


def spilled_coded(frame: pl.DataFrame) -> Coded:
    """``frame`` written to the spill folder with its Categorical columns as their codes."""
    codes, back = coded(frame)
    return Coded(_written(codes), back)


def spilled_parts(frame: pl.DataFrame, parts: int, key: str = "key"
                  ) -> tuple[pl.LazyFrame, ...]:
    """``frame`` spilled as ``parts`` files by key (``in_part``), rows in their order: one
    scan each."""
    split = frame.with_columns(_part=parts_of(frame.get_column(key), parts)).partition_by(
        "_part", maintain_order=True, include_key=False, as_dict=True)
    empty = frame.clear()
    return tuple(spilled(split.pop((p,), empty)) for p in range(parts))


class Spool:
    """A table made a piece at a time, in order (an attribution partition's rows each): the
    pieces held until together they pass ``rows`` rows, then spilled together, so that a big
    run's table is never whole in memory from its first piece until a stage reads it
    (``lazy``: the pieces in order)."""

    def __init__(self, rows: int = SPOOL_ROWS) -> None:
        self.rows = rows
        self.held: list[pl.DataFrame] = []
        self.scans: list[pl.LazyFrame] = []

    def add(self, piece: pl.DataFrame) -> None:
        self.held.append(piece)
        if sum(p.height for p in self.held) > self.rows:
            self.scans.append(spilled(pl.concat(self.held, how="diagonal_relaxed")))
            self.held = []

    def lazy(self) -> pl.LazyFrame:
        return pl.concat([*self.scans, *(p.lazy() for p in self.held)], how="diagonal_relaxed")


def parts_of(keys: pl.Series, parts: int) -> pl.Series:
    """Each row's part (``part_of``), each distinct key's computed once (``per_text``)."""
    return per_text(keys, lambda texts: texts.to_frame("key").select(part_of(parts)).to_series())


def contiguous(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with every column in one chunk, one column at a time (a frame read from hundreds
    of parts has as many chunks, and polars copies all of it on the first select or gather
    that needs them aligned). A column already in one chunk is left as it is: a value every
    row shares (the host of a one-host run, tagged on each process's parts) stays one value
    instead of becoming one string per row."""
    for name, chunks in zip(df.columns, df.n_chunks("all"), strict=True):
        if chunks > 1:
            df = df.with_columns(df.get_column(name).rechunk())
    return df


def spill_path(suffix: str) -> Path:
    """A new file's path in the spill folder."""
    folder = _spill_folder()
    fd, name = tempfile.mkstemp(suffix=suffix, dir=folder)
    os.close(fd)
    return Path(name)


@functools.cache
def _spill_folder() -> Path:
    """This process's spill folder, ``correlate-spill-<host>-<pid>-<random>`` in the temporary
    folder, removed as the process exits. A process killed (a batch system's SIGTERM, the
    kernel's OOM killer) leaves its folder, gigabytes at 10M executions: the next correlate on
    the host removes those of processes that are gone (``sweep``)."""
    sweep()
    folder = tempfile.TemporaryDirectory(prefix=f"{_mine()}{os.getpid()}-")
    atexit.register(folder.cleanup)
    return Path(folder.name)


def _mine() -> str:
    return f"correlate-spill-{socket.gethostname()}-"


def sweep() -> None:
    """This host's spill folders whose process is gone, removed (``remove_orphans``): when a
    process first spills, and as ``correlate RUN`` starts (a small run never spills)."""
    remove_orphans(Path(tempfile.gettempdir()), _mine())


def remove_orphans(tmp: Path, mine: str) -> None:
    """The folders and files ``<mine><pid>…`` in ``tmp`` whose process is gone, removed
    (another user's, or one whose pid is alive, are left)."""
    try:
        entries = [e for e in tmp.iterdir() if e.name.startswith(mine)]
    except OSError:
        return
    for entry in entries:
        pid = re.match(r"\d+", entry.name[len(mine):])
        if pid is None or _alive(int(pid[0])):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # (another user's process)
        return True
    return True
