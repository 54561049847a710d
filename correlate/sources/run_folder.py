"""Our run folder (written by ``collect``) → canonical ``RunFrames``.

Layout: ``manifest.json``; ``procs/<role>-<host>-<pid>/{proc.json, <table>.arrows,
strings.arrows}`` (tables in ``correlate.schema.run``; run format 3's streams read by
``correlate.sources.run_streams``, formats 1 and 2's ``<table>/part-*`` by
``correlate.sources.run_parts``; older collectors wrote closed.json beside proc.json);
``darshan/*.darshan``.
Only ``procs/`` is required: a folder recorded by ``--preload`` alone, with no scheduler
preloaded (so no manifest), is read too, and ``facts["unknown"]`` says what is then unknown.
A newer format version is refused with one sentence; a process without a closing record (in its
proc.json, or closed.json) did not shut down cleanly (its earlier rows are still used, and it
is reported).

The transitions and profile rows (``LAZY_TABLES``, the largest by far) are returned as lazy scans
of their parts: the engine reads them when it needs them and lets them go after.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

import correlate.schema.run as raw
from correlate.errors import InputError, UnsupportedVersionError, first_line, no_space_left
from correlate.frames import allocator, spill
from correlate.frames.beside import beside
from correlate.frames.mappers import Mapper, local_map
from correlate.frames.per_process import Process, by_process
from correlate.frames.spill import parts_for, spilled, spilled_parts
from correlate.schema import RUN_FORMAT_VERSION, TABLES, conform
from correlate.schema.run import CLOSED_RESERVE_NAME, MMAP_FOLDER
from correlate.sources import (
    darshan_coverage,
    darshan_logs,
    missing,
    run_parts,
    run_streams,
    stalls,
    stream_strings,
    time_span,
)
from correlate.sources.frames import RunFrames, make_rejects, unreadable

#: run format 3: every table a process folder may hold, by name, and by its stream's file name
FORMAT3_BY_NAME = {t.name: t for t in (run_streams.STRINGS, *raw.RUN_TABLES,
                                       *raw.FORMAT3_TABLES, *raw.STORED_3)}
STREAM_TABLES = {f"{n}{raw.STREAM_SUFFIX}": t for n, t in FORMAT3_BY_NAME.items()}
#: run format 3: a table -> the tables written in its streams (``IN_FILE_OF``)
HELD: dict[str, list[str]] = {}
for _name, (_table, _column) in raw.IN_FILE_OF.items():
    HELD.setdefault(_table.name, []).append(_name)

#: a process that recorded under the host and pid of an earlier process of the run (pids are
#: reused): the n-th such (n = 0, 1, …) has its sequence numbers counted from n × SEQ_STRIDE
SEQ_STRIDE = 1_000_000_000
#: the columns numbering a process's own rows, which other tables refer to (0: none)
SEQ_COLUMNS = ("execution_seq", "transfer_seq")

#: raw tables read lazily (the largest: transitions and profile rows)
LAZY_TABLES = ("scheduler_transitions", "worker_transitions", "worker_func_stats")
#: run format 3: the lazy tables spilled in parts by key (``correlate.frames.spill``) when
#: they have more than ``KEYED_ROWS_PER_PART`` rows together
KEYED_TABLES = ("scheduler_transitions", "worker_transitions")
#: lazy tables a stage reads one process at a time (the profile rows, ``task_functions``): one
#: decoded a chunk at a time is spilled a process at a time, so the stage reads only the
#: process's rows (``RunFrames.func_stats_by_process``)
PROCESS_TABLES = ("worker_func_stats",)
#: run format 3: a lazy table of more rows than this is written to a file of its own once
#: decoded and scanned from there (as formats 1 and 2's parts are), not held decoded in memory
#: for the whole correlation (every stage after the first that reads it would carry it)
SPILL_ROWS = 1_000_000
#: run format 3: rows of a keyed table decoded at once; a bigger one is decoded a chunk of
#: about as many at a time, each spilled before the next is read (``_spill_chunks``)
CHUNK_ROWS = 4_000_000
#: run format 3: the streams of a table of more bytes than this are given back to the system
#: once read (glibc keeps freed memory for reuse, ``allocator.keep_freed_c_memory``)
TRIM_BYTES = 64 << 20
#: DXT segments of a run's Darshan logs decoded with the logs' other records, and held until
#: attributed, when there are at most this many (about 100 B each): a bigger run's are read
#: from the logs by each attribution partition, so that they are never all in memory at once
KEEP_SEGMENTS = 1_000_000
#: raw tables whose canonical table (``_canonical``) is their rows conformed, none of their
#: other columns read: conformed as each is read, so that the load does not hold those
#: columns (a big run's gigabyte) while it decodes the tables after them
CONFORMED = {"task_startstops": "startstops", "task_dependencies": "dependencies",
             "worker_clock_samples": "clock_samples", "worker_clock_markers": "clock_markers",
             "host_load_samples": "host_load", "task_file_opens": "file_opens",
             "scheduler_arrivals": "data_arrivals", "sender_notes": "senders"}


#: what a run folder without manifest.json cannot tell, and why
NO_MANIFEST_UNKNOWN = {
    "manifest": "no manifest.json: recorded by `--preload collectors.preload` without "
                "`collect` and without a preloaded scheduler",
    "command": "the job's command is recorded only by `collect` or the scheduler's preload",
    "cwd": "the job's working directory is recorded only in manifest.json",
    "exit_code": "the job's exit code is recorded only by `collect`",
    "started_ns": "taken from the first process's start (proc.json), not the job's",
    "ended_ns": "taken from the last process's clean close (its closing record), not the job's",
    "versions": "package versions are recorded only in manifest.json",
}


def looks_like(path: Path) -> bool:
    """manifest.json is optional; a ``procs/`` folder with at least one process is enough."""
    procs = path / "procs"
    if not procs.is_dir():
        return False
    return (path / "manifest.json").is_file() or any(procs.glob("*/proc.json"))


def _json(path: Path, trailing: list[int] | None = None) -> dict[str, Any]:
    """A JSON object read from ``path``; anything else is an ``InputError`` naming it. With
    ``trailing``, what follows the object is ignored and its length (blanks not counted)
    appended there."""
    try:
        text = run_streams.read_bytes(path).decode()
        if trailing is None:
            value = json.loads(text)
        else:
            text = text.lstrip()
            value, end = json.JSONDecoder().raw_decode(text)
            trailing.append(len(text[end:].strip().encode()))
    except RecursionError:
        raise InputError(path, "unreadable JSON: nested too deeply") from None
    except (OSError, ValueError) as err:
        raise InputError(path, f"unreadable JSON: {err}") from None
    if not isinstance(value, dict):
        found = "null" if value is None else type(value).__name__
        raise InputError(path, f"expected a JSON object, found {found}")
    return value


#: proc.json fields: name -> (accepted types, required)
PROC_FIELDS: dict[str, tuple[tuple[type, ...], bool]] = {
    "host": ((str,), True), "pid": ((int,), True), "role": ((str,), True),
    "address": ((str,), False), "name": ((str, int), False), "nthreads": ((int,), False),
    "main_thread_id": ((int,), False), "local_directory": ((str,), False),
    "started_ns": ((int,), False), "dask_config": ((dict,), False)}
ROLES = TABLES["processes"].column("role").polars_dtype().categories.to_list()


def _proc_info(path: Path, warnings: list[str]) -> dict[str, Any]:
    """proc.json checked field by field: a required field missing or of the wrong type is an
    ``InputError``; an optional one of the wrong type is left out, with a warning."""
    trailing: list[int] = []
    info = _json(path, trailing)
    if trailing[0]:
        warnings.append(f"{path}: {trailing[0]} byte(s) after its JSON object ignored (a "
                        "closing record cut short: the process was killed while it wrote it "
                        "into a full folder)")
    for name, (types, required) in PROC_FIELDS.items():
        value = info.get(name)
        ok = _of(info, name, *types) is not None
        if required and not ok:
            raise InputError(path, f"field {name!r} missing or not a {types[0].__name__}")
        if value is not None and not ok:
            warnings.append(f"{path}: field {name!r} is not a {types[0].__name__}; ignored")
            info[name] = None
    if info["role"] not in ROLES:
        raise InputError(path, f"unknown role {info['role']!r} (expected one of "
                         f"{', '.join(ROLES)})")
    return info


class _Reader:
    """Collects tables across process folders, with rejects for unreadable parts."""

    def __init__(self) -> None:
        self.rejects: list[tuple[str, str | None, str, int]] = []
        self.warnings: list[str] = []
        self.stalls: list[dict[str, Any]] = []
        #: worker -> executions the scheduler saw finish that the worker died before writing
        self.lost_with_worker: dict[str, int] = {}
        #: parts of lazily read tables (their data is decoded only when a stage reads them)
        self.unchecked: list[Path] = []
        #: run format 3: each table's rows as stored, of every process (``_proc``: its index
        #: in ``strings`` and ``owners``), decoded together at the end (``decoded``)
        self.stored: dict[str, list[pl.DataFrame]] = {}
        #: format 3: each table's snapshot files (index, path), read with the table
        self.snapshots: dict[str, list[tuple[int, Path]]] = {}
        #: format 3: each table's streams as framed (index, path, framing), read with the table
        self.pending: dict[str, list[tuple[int, str, run_streams.Framing]]] = {}
        self.owners: list[dict[str, Any]] = []
        self.lookup: stream_strings.Lookup | None = None
        #: format-3 tables already decoded (a table's streams are read once)
        self.done: dict[str, pl.DataFrame | None] = {}
        #: each owner's possible instants (``time_span``), and its file of each table
        self.spans: list[tuple[int, int | None]] = []
        self.files: dict[tuple[str, int], str] = {}
        #: rows rejected for impossible times, per (table, worker address)
        self.impossible: Counter[tuple[str, Any]] = Counter()
        #: run format 3: what the load reads of the scheduler's transitions (``_taken``), taken
        #: while they were in memory, with the frame they stand for (their spilled scan)
        self.taken: tuple[pl.DataFrame | pl.LazyFrame, dict[str, Any]] | None = None
        #: run format 3: the parts by key each of ``KEYED_TABLES`` was spilled in
        self.key_parts: dict[str, tuple[pl.LazyFrame, ...]] = {}
        #: run format 3: each process's spilled rows of a table of ``PROCESS_TABLES``
        self.process_parts: dict[str, dict[Process, list[pl.LazyFrame]]] = {}

    def _decoded(self, name: str) -> pl.DataFrame | None:
        """A format-3 table's rows of every process as recorded (ids as text, ``_proc``)."""
        if name not in self.done:
            self.done[name] = self._decode(name)
        return self.done[name]

    def _decode(self, name: str) -> pl.DataFrame | None:
        """A format-3 table's rows decoded; one with details (``DETAILS``) has them joined
        on before (``run_streams.details_joined``: integers are cheaper to join than text)."""
        frame = self._read(name)
        if frame is None:
            return None
        lookup, at = self._lookup(), len(self.rejects)
        details = self._details(name, lookup)
        frame, lost, matched = run_streams.decoded_table(
            frame, name, None if details is None else details[0], lookup)
        self._joined(name, details, lost, [] if matched is None else [matched], at)
        return frame

    def _lookup(self) -> stream_strings.Lookup:
        if self.lookup is None:
            self.lookup = self._strings()
        return self.lookup

    def _details(self, name: str, lookup: stream_strings.Lookup
                 ) -> tuple[pl.DataFrame, int] | None:
        """``name``'s details (``run_streams.details_prepared``), or None: none."""
        details = raw.DETAILS.get(name)
        rows = self._read(details[0].name) if details is not None else None
        return None if rows is None else run_streams.details_prepared(rows, name, lookup)

    def _joined(self, name: str, details: tuple[pl.DataFrame, int] | None, lost: int,
                matched: list[pl.Series], at: int) -> None:
        """The rejects of decoding ``name``: rows and details with an id no text was written
        for, and details no row has (``matched``: the ``_detail`` of those joined on)."""
        if details is not None:
            self._lost(raw.DETAILS[name][0].name, details[1], len(self.rejects))
        self._lost(name, lost, at)  # (before the details' rejects, as when read after)
        if details is not None and (orphans := details[0].height - (
                pl.concat(matched).n_unique() if matched else 0)):
            self.rejects.append(("run-folder", raw.DETAILS[name][0].name, f"details of {name} "
                                 "rows that are not there (their write failed or was cut)",
                                 orphans))

    def decoded_chunks(self, name: str, rows: int) -> Iterator[pl.DataFrame]:
        """A format-3 table's rows of every process, decoded (as ``decoded``) a chunk of
        about ``rows`` rows at a time: its streams' batches are read and decoded a chunk at a
        time, so a table bigger than memory is never whole in it. Its rejects are counted
        when the last chunk has been given."""
        lookup, at = self._lookup(), len(self.rejects)
        details = self._details(name, lookup)
        lost, matched, bad = 0, [], Counter[int]()
        rejects: list[tuple[str, str, int]] = []
        # (the details' join columns that are not string ids: a chunk's range of them)
        by = [] if details is None else [c for c in raw.DETAILS[name][1]
                                         if f"_at_{c}" not in details[0].columns]
        for frame in _sliced(itertools.chain(
                run_streams.chunks(self.pending.pop(name, []), rows, rejects,
                                   FORMAT3_BY_NAME[name]), self._stored(name)), rows):
            if details is not None:  # (the details these rows may have)
                some = details[0].filter(pl.col("_proc").is_in(frame["_proc"].unique().implode()),
                                         *(pl.col(c).is_between(frame[c].min(), frame[c].max())
                                           for c in by))
            frame, n, m = run_streams.decoded_table(
                frame, name, None if details is None else some, lookup)
            lost += n
            matched += [] if m is None else [m]
            frame, impossible = self._resolved(frame, name)
            bad.update(impossible)
            yield frame
        self.rejects[at:at] = [("run-folder", path, reason, n) for path, reason, n in rejects]
        self._joined(name, details, lost, matched, at + len(rejects))
        self._impossible(name, bad)

    def _strings(self) -> stream_strings.Lookup:
        """Every process's strings, read a chunk at a time (``stream_strings``); the rest of a
        process's strings after a mistyped batch are rejects (its rows' text null)."""
        table = run_streams.STRINGS
        streams = sorted(self.pending.pop(table.name, []), key=lambda s: s[0])
        stored = list(self._stored(table.name))
        rejects: list[tuple[str, str, int]] = []
        reads = 0

        def read() -> Iterator[pl.DataFrame]:
            nonlocal reads
            checked = reads > 0 and not rejects  # (read before, every batch read whole)
            reads += 1
            rejects.clear()  # (each read finds the same)
            yield from run_streams.chunks(streams, stream_strings.CHUNK_BYTES, rejects, table,
                                          by_bytes=True, checked=checked)
            yield from stored

        strings = stream_strings.lookup(read, len(self.owners))
        self.rejects += [("run-folder", path, reason, n) for path, reason, n in rejects]
        allocator.release_freed_c_memory()  # (the strings as written: mostly repeats)
        return strings

    def _lost(self, name: str, lost: int, at: int) -> None:
        if lost:
            self.rejects.insert(at, ("run-folder", name, "rows whose string id has no text in "
                                 "their process's strings.arrows (their text is null)", lost))

    def _read(self, name: str) -> pl.DataFrame | None:
        """A format-3 table's rows as stored, of every process (streams read together, then
        snapshots), with ``_proc``; mistyped files are rejects. The rows of tables written in
        its streams (``IN_FILE_OF``) are set aside for those tables; a table written in
        another's streams has its rows read there first."""
        if name in raw.IN_FILE_OF:
            self._decoded(raw.IN_FILE_OF[name][0].name)
        frame = self._read_own(name)
        for other, (table, column) in raw.IN_FILE_OF.items():
            if table.name == name and frame is not None and column in frame.columns:
                held = pl.col(column).is_null()
                rows = frame.filter(held)
                # (the other table's own columns: a carrier's, CARRIED, stay for their split)
                frame = frame.filter(~held).drop(
                    [c for c in FORMAT3_BY_NAME[other].names if c not in TABLES[name].names],
                    strict=False)
                if rows.height:
                    self.stored.setdefault(other, []).append(rows.select(
                        *(c for c in FORMAT3_BY_NAME[other].names if c in rows.columns),
                        "_proc"))
        return frame

    def _read_own(self, name: str) -> pl.DataFrame | None:
        table = FORMAT3_BY_NAME[name]  # (as stored: carried columns checked too)
        streams = self.pending.pop(name, [])
        size = sum(f.batches[-1][1] for _i, _p, f in streams if f.batches)
        frame, bad = run_streams.read_many(streams, table)
        if size > TRIM_BYTES:  # (their bytes, freed: back to the system before polars's
            allocator.release_freed_c_memory()  # allocator asks for as much to decode them)
        for path, reason, n in bad:
            self.rejects.append(("run-folder", str(path), reason, n))
        frames = list(self._stored(name))
        if frame is not None:
            frames.insert(0, frame)
        return pl.concat(frames, how="diagonal_relaxed") if frames else None

    def streams(self, proc_dir: Path, names: set[str], info: dict[str, Any],
                starts: list[Any], ends: list[Any]) -> None:
        """A format-3 process folder's files, framing walked (torn tails are rejects now);
        their batches are read with the other processes' (``_read``). ``starts`` and
        ``ends``: the times recorded for the process, its span with its files' last writes."""
        index = len(self.owners)
        self.owners.append(info)
        written: list[int] = []
        for name in sorted(names):  # (the folder's entries: no lookup per known table)
            table = STREAM_TABLES.get(name)
            if table is None:
                if name.endswith(raw.SNAPSHOT_SUFFIX) and (
                        t := FORMAT3_BY_NAME.get(name[:-len(raw.SNAPSHOT_SUFFIX)])):
                    self.snapshots.setdefault(t.name, []).append((index, proc_dir / name))
                    self.files[(t.name, index)] = str(proc_dir / name)
                    written += _modified(proc_dir / name)
                continue
            path = os.path.join(proc_dir, name)  # (a str: a Path per file costs more here)
            try:
                f, mtime = run_streams.framed(path)
            except OSError as err:
                self.rejects.append(("run-folder", path,
                                     f"unreadable stream: {err.strerror or err}", 1))
                continue
            written.append(mtime)
            for reason, n in run_streams.torn(f):
                self.rejects.append(("run-folder", path, reason, n))
            if f.batches:
                self.pending.setdefault(table.name, []).append((index, path, f))
                self.files[(table.name, index)] = path
                for other in HELD.get(table.name, ()):  # (its rows' file, for rejects)
                    self.files.setdefault((other, index), path)
        self.spans.append(time_span.span(starts, [*ends, *written]))

    def rows(self, name: str) -> int:
        """A format-3 table's rows in its streams' batches and its snapshots (as their
        headers and footers say, nothing decoded)."""
        return (sum(rows for _i, _p, f in self.pending.get(name, [])
                    for _s, _e, rows in f.batches)
                + sum(run_parts.footer_rows(p) for _i, p in self.snapshots.get(name, [])))

    def _stored(self, name: str) -> Iterator[pl.DataFrame]:
        """A format-3 table's rows not in its streams: each snapshot, read now (one at a
        time), then the rows written in another table's file (``IN_FILE_OF``)."""
        table = FORMAT3_BY_NAME[name]
        for index, path in self.snapshots.pop(name, []):
            frame = self._stream(path, table)
            if frame is not None and frame.height:
                yield frame.with_columns(_proc=pl.lit(index, pl.Int32))
        yield from self.stored.pop(name, [])

    def _stream(self, path: Path, table: Any) -> pl.DataFrame | None:
        """A snapshot (an Arrow IPC file), or None (a reject)."""
        try:
            frame = pl.read_ipc(path)
        except run_parts.UNREADABLE_PART as err:
            self._reject(path, f"unreadable part: {first_line(err)}")
            return None
        problem = run_streams.mistyped(frame, table)
        if problem is not None:
            self.rejects.append(("run-folder", str(path), problem, frame.height))
            return None
        return frame

    def decoded(self, name: str) -> pl.DataFrame | None:
        """A format-3 table's rows of every process, text in place of string ids, with the
        recording process (as ``_with_proc`` adds it)."""
        frame = self._decoded(name)
        if frame is None:
            return None
        frame, bad = self._resolved(frame, name)
        self._impossible(name, bad)
        return frame

    def _impossible(self, name: str, bad: Mapping[int, int]) -> None:
        for index, n in sorted(bad.items()):
            self.rejects.append(("run-folder", self.files.get((name, index), name),
                                 time_span.REASON, n))
            self.impossible[(name, self.owners[index].get("address"))] += n

    def _resolved(self, frame: pl.DataFrame, name: str) -> tuple[pl.DataFrame, dict[int, int]]:
        """Decoded rows (``_proc``) conformed to their table, those of impossible times left
        out (how many per process), with their process's host, pid and worker."""
        frame = conform(frame, TABLES[name], path=name, extra="keep")
        proc = pl.col("_proc")
        frame, bad = time_span.split(
            frame, pl.lit(pl.Series([s[0] for s in self.spans], dtype=pl.Int64)).gather(proc),
            pl.lit(pl.Series([s[1] for s in self.spans], dtype=pl.Int64)).gather(proc), "_proc")
        hosts = pl.Series([o["host"] for o in self.owners], dtype=pl.String)
        pids = pl.Series([o["pid"] for o in self.owners], dtype=pl.Int64)
        frame = frame.with_columns(host=pl.lit(hosts).gather(proc),
                                   pid=pl.lit(pids).gather(proc))
        if any(o.get("seq_offset") for o in self.owners):
            offsets = pl.lit(pl.Series([o.get("seq_offset", 0) for o in self.owners],
                                       dtype=pl.Int64)).gather(proc)
            frame = frame.with_columns(_shifted(c, offsets) for c in SEQ_COLUMNS
                                       if c in frame.columns)
        if any(o["role"] == "worker" for o in self.owners):
            addresses = pl.Series([o.get("address") if o["role"] == "worker" else None
                                   for o in self.owners], dtype=pl.String)
            workers = pl.Series([o["role"] == "worker" for o in self.owners])
            own = pl.col("worker") if "worker" in frame.columns else pl.lit(None, pl.String)
            frame = frame.with_columns(worker=pl.when(pl.lit(workers).gather(proc))
                                       .then(pl.lit(addresses).gather(proc)).otherwise(own))
        return frame.drop("_proc"), bad

    def table(self, proc_dir: Path, name: str) -> pl.DataFrame:
        frames = []
        for part in self._checked(proc_dir, name):
            try:
                frames.append(run_parts.read(part, TABLES[name]))
            except run_parts.UNREADABLE_PART as err:  # any unreadable part is a reject
                self._reject(part, f"unreadable part: {first_line(err)}")
        return pl.concat(frames) if frames else TABLES[name].empty()

    def scan(self, proc_dir: Path, name: str) -> pl.LazyFrame:
        """The table's parts as one lazy scan; a part whose footer cannot be read, or whose
        columns have the wrong types, is a reject now, not an error when the scan is read
        (``unchecked`` keeps the parts, to name one whose data turns out unreadable then)."""
        scans = []
        for part in self._checked(proc_dir, name):
            self.unchecked.append(part)
            scans.append(run_parts.scan(part, TABLES[name]))
        return pl.concat(scans) if scans else TABLES[name].empty().lazy()

    def _checked(self, proc_dir: Path, name: str) -> list[Path]:
        """The table's parts that ``run_parts.check`` and ``run_parts.disagreement`` pass (the
        others are rejects)."""
        out = []
        for part in run_parts.part_files(proc_dir / name):
            problem = run_parts.check(part, TABLES[name]) or run_parts.disagreement(part)
            if problem is None:
                out.append(part)
            else:
                self._reject(part, problem)
        return out

    def _reject(self, part: Path, reason: str) -> None:
        self.rejects.append(("run-folder", str(part), reason, 1))


def _sliced(frames: Iterator[pl.DataFrame], rows: int) -> Iterator[pl.DataFrame]:
    """``frames`` in slices of at most ``rows`` rows, in order: a chunk is read whole batches
    at a time, and one batch can hold far more (a scheduler's first flush after a big graph
    was submitted, more transitions than the graph has tasks): decoded at once, the load's
    peak."""
    for frame in frames:
        yield from frame.iter_slices(rows) if frame.height > rows else (frame,)


def _procs(run_dir: Path, reader: _Reader, entries: dict[Path, set[str]] | None = None
           ) -> list[tuple[Path, dict[str, Any], dict[str, Any] | None]]:
    """Every process folder with its proc.json and closing record (``_closing``; None: did not
    close cleanly). A folder whose proc.json cannot be used is skipped and counted as a reject,
    or where its name says role, host and pid, read with those; an unusable closing record
    counts as no clean close, with a warning. ``entries`` gets each folder's entries (listed
    once: what a folder holds is looked up there, not by a stat per file)."""
    out = []
    entries = {} if entries is None else entries
    for e in sorted(os.scandir(run_dir / "procs"), key=lambda e: e.name):
        try:
            if not e.is_dir():
                continue
            names = {n.name for n in os.scandir(e.path)}
        except OSError:  # (gone or unreadable since the listing: as a folder without proc.json)
            continue
        if "proc.json" not in names:
            continue
        d = Path(e.path)
        entries[d] = names
        try:
            info = _proc_info(d / "proc.json", reader.warnings)
        except InputError as err:
            named = _from_name(d)
            if named is None:
                reader.rejects.append(("run-folder", str(d / "proc.json"),
                                       f"process folder skipped: {err.problem}", 1))
                continue
            reader.warnings.append(f"{d / 'proc.json'}: {err.problem}; role, host and pid "
                                   "taken from the folder's name (a worker's address from the "
                                   "scheduler's add_worker of that pid)")
            info = named
            try:  # (its closing record, where the object holds one)
                record = _json(d / "proc.json", [])
                if raw.CLOSED_FIELD in record:
                    info[raw.CLOSED_FIELD] = record[raw.CLOSED_FIELD]
            except InputError:
                pass
        closed = _closing(d, names, info, reader.warnings)
        out.append((d, info, closed))
    return out


def _closing(d: Path, names: set[str], info: dict[str, Any], warnings: list[str]
             ) -> dict[str, Any] | None:
    """The process's closing record (None: it did not close cleanly): proc.json's ``closed``
    field (taken out of ``info``), or from older collectors closed.json, or where the folder
    refused its rename, the bytes reserved for it (blank until written). One without a closing
    time counts as no clean close, with a warning."""
    if raw.CLOSED_FIELD in info:
        closed, where = info.pop(raw.CLOSED_FIELD), f"{d / raw.PROC_JSON}: field 'closed'"
        if not isinstance(closed, dict):
            closed = None
            warnings.append(f"{where}: not a JSON object; the process is treated as not "
                            "closed cleanly")
    else:
        path = d / raw.CLOSED_JSON
        if raw.CLOSED_JSON not in names and CLOSED_RESERVE_NAME in names and _written(
                d / CLOSED_RESERVE_NAME):
            path = d / CLOSED_RESERVE_NAME
        if path.name not in names:
            return None
        where = str(path)
        try:
            closed = _json(path)
        except InputError as err:
            warnings.append(f"{path}: {err.problem}; the process is treated as not closed "
                            "cleanly")
            return None
    if closed is not None and _of(closed, "closed_ns", int) is None:
        warnings.append(f"{where}: no closing time (closed_ns); the process is treated as not "
                        "closed cleanly")
        return None
    return closed


def _recorded_span(info: dict[str, Any], closed: dict[str, Any] | None,
                   manifest: dict[str, Any] | None) -> tuple[list[Any], list[Any]]:
    """The start and end times recorded for a process (``time_span.span``)."""
    manifest = manifest or {}
    return ([info.get("started_ns"), manifest.get("started_ns")],
            [(closed or {}).get("closed_ns"), manifest.get("ended_ns")])


def _modified(path: Path) -> list[int]:
    """``path``'s modification time, ns (none when it cannot be read)."""
    try:
        return [os.stat(path).st_mtime_ns]
    except OSError:
        return []


def _reused_pids(procs: list[tuple[Path, dict[str, Any], Any]], warnings: list[str]) -> None:
    """Processes of the run that share a host and pid (a pid reused on a long job, a restarted
    worker or scheduler; the collectors give the later one a folder of its own, ``….2``):
    each keeps its own rows, but their sequence numbers (``SEQ_COLUMNS``), which the engine
    joins on with the host and pid, all start at 1. The n-th of them in start order gets
    ``seq_offset`` n × ``SEQ_STRIDE`` (added by ``_with_proc`` and ``_Reader.decoded``), so
    that no row joins another process's execution or transfer, and a warning says so."""
    by: dict[tuple[Any, Any], list[tuple[Path, dict[str, Any]]]] = {}
    for d, info, _closed in procs:
        by.setdefault((info["host"], info["pid"]), []).append((d, info))
    for (host, pid), same in by.items():
        if len(same) < 2:
            continue
        same.sort(key=lambda p: (not isinstance(p[1].get("started_ns"), int),
                                 p[1].get("started_ns") or 0, p[0].name))
        for n, (_d, info) in enumerate(same):
            info["seq_offset"] = n * SEQ_STRIDE
        warnings.append(
            f"{same[0][0].parent}: {len(same)} processes recorded as pid {pid} on {host} "
            f"({', '.join(d.name for d, _i in same)}, in start order): read as separate "
            f"processes, the n-th's execution and transfer numbers counted from "
            f"n × {SEQ_STRIDE:,}; steps keyed by host and pid alone (clock alignment, "
            "Darshan logs) take them together")


def _from_name(d: Path) -> dict[str, Any] | None:
    """role, host and pid from a process folder's name (``<role>-<host>-<pid>[.n]``, as the
    collectors name it), for a folder whose proc.json cannot be read; None if it is not one."""
    role, _, rest = d.name.partition("-")
    host, _, pid = rest.rpartition("-")
    pid = pid.split(".", 1)[0]
    if role not in ROLES or not host or not pid.isdigit():
        return None
    return {"role": role, "host": host, "pid": int(pid), "address": None, "from_name": True}


def _addresses_from_scheduler(procs: list[tuple[Path, dict[str, Any], Any]],
                              reader: _Reader) -> None:
    """A worker known only by its folder's name gets the address the scheduler saw join with
    its pid and host, when exactly one did."""
    lost = [info for _d, info, _c in procs if info.get("from_name") and info["role"] == "worker"]
    if not lost:
        return
    joins = [reader.table(d, "cluster_events") for d, info, _c in procs
             if info["role"] == "scheduler"]
    recorded = reader._decoded("cluster_events") if reader.owners else None  # format 3
    if recorded is not None:
        schedulers = [i for i, o in enumerate(reader.owners) if o["role"] == "scheduler"]
        joins.append(recorded.filter(pl.col("_proc").is_in(schedulers)).drop("_proc"))
    joins = [j for j in joins if j.height]
    if not joins:
        return
    added = pl.concat(joins).filter(pl.col("event") == "add_worker")
    for info in lost:
        found = added.filter(pl.col("pid") == info["pid"])["address"].unique()
        if found.len() == 1:
            info["address"] = found.item()


def _written(reserve: Path) -> bool:
    """Whether the closed.json reserve holds anything but its blank bytes."""
    try:
        with reserve.open("rb") as fh:
            return bool(fh.read(64).strip())
    except OSError:
        return False


#: a table read whole or scanned lazily
Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def _with_proc(df: Frame, info: dict[str, Any]) -> Frame:
    """Add the recording process; worker tables also get its address as ``worker``."""
    df = df.with_columns(host=pl.lit(info["host"]), pid=pl.lit(info["pid"], pl.Int64))
    if info["role"] == "worker":
        df = df.with_columns(worker=pl.lit(info.get("address")))
    if info.get("seq_offset"):
        df = df.with_columns(_shifted(c, pl.lit(info["seq_offset"], pl.Int64))
                             for c in SEQ_COLUMNS if c in df.collect_schema().names())
    return df


def _shifted(column: str, offset: pl.Expr) -> pl.Expr:
    """A sequence column moved on by ``offset`` (``_reused_pids``); 0 (no execution) and null
    stay."""
    col = pl.col(column)
    return pl.when(col > 0).then(col + offset).otherwise(col).alias(column)


def _check_version(manifest: dict[str, Any], path: Path) -> None:
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > RUN_FORMAT_VERSION:
        raise UnsupportedVersionError(path, f"run folder format {version!r} is newer than this "
                                      f"correlate understands ({RUN_FORMAT_VERSION}); upgrade")


def _manifest(run_dir: Path, warnings: list[str]) -> dict[str, Any] | None:
    """The manifest, or None when there is none or it cannot be read: a damaged manifest
    (a full disk, a copy cut short) loses the job's facts, not the processes' records, which
    are read as in a folder without one."""
    path = run_dir / "manifest.json"
    if not path.exists():
        return None
    try:
        manifest = _json(path)
    except InputError as err:
        warnings.append(f"{path}: {err.problem}; read as a run without a manifest (command, "
                        "exit code and versions unknown)")
        return None
    _check_version(manifest, path)
    return manifest


def read_darshan(run_dir: Path, mapper: Mapper = local_map) -> darshan_logs.DarshanFrames | None:
    """The run's Darshan logs as ``load`` reads them (None: no darshan/ folder)."""
    return (darshan_logs.load([run_dir / "darshan"], mapper, segments=False, keep=KEEP_SEGMENTS)
            if (run_dir / "darshan").is_dir() else None)


def load(run_dir: Path, mapper: Mapper = local_map,
         darshan: darshan_logs.DarshanFrames | None = None) -> RunFrames:
    """``darshan``: the run's logs already read (``read_darshan``), not read again."""
    reader = _Reader()
    manifest = _manifest(run_dir, reader.warnings)
    entries: dict[Path, set[str]] = {}
    procs = _procs(run_dir, reader, entries)
    _reused_pids(procs, reader.warnings)
    reader.warnings += _manifest_warnings(run_dir, manifest)
    per_table: dict[str, list[pl.DataFrame | pl.LazyFrame]] = {t.name: [] for t in raw.RUN_TABLES}
    for d, info, closed in procs:
        if run_streams.is_format3(entries[d]):
            reader.streams(d, entries[d], info, *_recorded_span(info, closed, manifest))
    # (after the streams are registered: a format-3 scheduler's events are among them)
    _addresses_from_scheduler(procs, reader)
    processes = _read_processes(procs, reader, manifest, per_table)
    _read_streams(run_dir, reader, per_table)
    reader.lookup = None  # (every stream decoded: what was kept to decode them goes)
    reader.done.clear()
    sched = per_table["scheduler_transitions"]
    taken = (reader.taken[1] if reader.taken is not None and len(sched) == 1
             and sched[0] is reader.taken[0] else None)
    # (a table's parts are all scanned (LAZY_TABLES) or all read: never mixed)
    tables: dict[str, Any] = {n: pl.concat(v, how="diagonal_relaxed") if v else None  # type: ignore[type-var]
                              for n, v in per_table.items()}
    io = darshan if darshan is not None else read_darshan(run_dir, mapper)
    try:
        if taken is None:
            taken = _taken(_lazy_or(tables["scheduler_transitions"], "scheduler_transitions"))
        frames = _canonical(tables, processes, io, taken)
        frames["transitions_in_parts"] = _transitions_in_parts(tables, per_table, reader.key_parts)
        frames["func_stats_by_process"] = _func_stats_by_process(per_table, reader.process_parts)
        _missing(tables, frames["executions"], procs, manifest, reader, taken)
    except (OSError, pl.exceptions.PolarsError) as err:  # a part's data is damaged
        if no_space_left(err):  # (a spill written meanwhile: not the run folder's fault)
            raise
        raise unreadable(reader.unchecked, str(run_dir), err) from None
    facts = _run_facts(manifest, processes, procs, reader)
    facts["workers_removed_ns"] = _removed(_empty_or(tables.get("cluster_events"),
                                                      "cluster_events"))
    if facts.get("darshan"):
        gaps = _darshan_gaps(run_dir, procs, io)
        reader.warnings += [gaps] if gaps else []
    allocator.release_freed_c_memory()  # the streams' bytes, the logs' inflated records
    return RunFrames(**frames, source_format="run-folder", facts=facts,
                     lazy_parts=tuple(str(p) for p in reader.unchecked),
                     warnings=tuple(reader.warnings + list(io.warnings if io else ())),
                     rejects=make_rejects(reader.rejects))


def _manifest_warnings(run_dir: Path, manifest: dict[str, Any] | None) -> list[str]:
    """What the manifest (or its absence) leaves unknown."""
    if manifest is None:
        if not (run_dir / "manifest.json").exists():  # (one that cannot be read is said)
            return [f"{run_dir}: no manifest.json (recorded without `collect` or a preloaded "
                    "scheduler): command, exit code and versions unknown"]
    elif not missing.job_ended(manifest):
        return [f"{run_dir / 'manifest.json'}: no exit code: the job is still running, or "
                "`collect` was killed before it ended (end time and exit code unknown)"]
    elif manifest.get("recorded_by") == "scheduler preload":
        known = manifest.get("command")
        return [f"{run_dir / 'manifest.json'}: written by the scheduler's preload (no "
                "`collect`): "
                + ("the job's exit code is unknown (its command, from `collect env`: "
                   f"{' '.join(map(str, known))})" if known
                   else "the job's command and exit code are unknown")]
    return []


def _read_processes(procs: list[tuple[Path, dict[str, Any], Any]], reader: _Reader,
                    manifest: dict[str, Any] | None,
                    per_table: dict[str, list[pl.DataFrame | pl.LazyFrame]]
                    ) -> list[dict[str, Any]]:
    """Each process's row of ``processes``, its quality and stalls; the tables of formats 1
    and 2 appended to ``per_table`` (format 3's streams are read with the others)."""
    processes = []
    format3 = {id(o) for o in reader.owners}
    for d, info, closed in procs:
        if "format_version" in info:
            _check_version(info, d / "proc.json")
        processes.append({"host": info["host"], "pid": info["pid"], "role": info["role"],
                          "worker": info.get("address") if info["role"] == "worker" else None,
                          "name": info.get("name"), "nthreads": info.get("nthreads"),
                          "main_thread_id": info.get("main_thread_id"),
                          "local_directory": info.get("local_directory"),
                          "closed_cleanly": closed is not None, "match": "pid"})
        _quality(d, info, closed, reader, missing.job_ended(manifest))
        _stalls(d, reader)
        if id(info) not in format3:
            _read_parts(d, info, closed, manifest, reader, per_table)
    return processes


def _read_parts(d: Path, info: dict[str, Any], closed: Any, manifest: dict[str, Any] | None,
                reader: _Reader, per_table: dict[str, list[pl.DataFrame | pl.LazyFrame]]
                ) -> None:
    """A format 1 or 2 process folder's tables (the big ones scanned), rows of impossible
    times rejected."""
    for t in raw.RUN_TABLES:
        # (formats 1 and 2: a part folder's mtime is its last part's)
        starts, ends = _recorded_span(info, closed, manifest)
        lo, hi = time_span.span(starts, [*ends, *_modified(d / t.name)])
        if t.name in LAZY_TABLES:
            if run_parts.part_files(d / t.name):
                scan = reader.scan(d, t.name)
                try:
                    scan, n = time_span.split_scan(scan, lo, hi)
                except run_parts.UNREADABLE_PART:  # named when the scan is read
                    n = 0
                if n:
                    reader.rejects.append(("run-folder", str(d / t.name), time_span.REASON, n))
                    reader.impossible[(t.name, info.get("address"))] += n
                per_table[t.name].append(_with_proc(scan, info))
            continue
        df = reader.table(d, t.name)
        if df.height:
            df, bad = time_span.split(df, pl.lit(lo, pl.Int64), pl.lit(hi, pl.Int64))
            if bad:
                reader.rejects.append(("run-folder", str(d / t.name), time_span.REASON,
                                       bad[None]))
                reader.impossible[(t.name, info.get("address"))] += bad[None]
            per_table[t.name].append(_held(t.name, _with_proc(df, info)))


def _read_streams(run_dir: Path, reader: _Reader,
                  per_table: dict[str, list[pl.DataFrame | pl.LazyFrame]]) -> None:
    """Format 3's streams, decoded table by table, appended to ``per_table``. The transitions
    of a run of more than ``KEYED_ROWS_PER_PART`` are spilled in parts by key
    (``reader.key_parts``), both sides' alike, so that the timeline reads them a part at a
    time. The tables a big run spills (``LAZY_TABLES``) are decoded first: decoded after the
    tables held whole, their chunks' transients came on top of those."""
    held = {n: t.name for n, (t, _c) in raw.IN_FILE_OF.items()}
    parts = parts_for(sum(reader.rows(name) for name in KEYED_TABLES),
                      spill.KEYED_ROWS_PER_PART)
    names = [t.name for t in raw.RUN_TABLES
             if any(n in reader.stored or n in reader.pending or n in reader.done
                    or n in reader.snapshots for n in (t.name, held.get(t.name)))]
    for name in sorted(names, key=lambda n: n not in LAZY_TABLES):  # (stable: else as listed)
        try:
            if name in LAZY_TABLES and reader.rows(name) > CHUNK_ROWS:
                _spill_chunks(reader, name, parts if name in KEYED_TABLES else 1, per_table)
                continue
            decoded = reader.decoded(name)
        except (OSError, pl.exceptions.PolarsError) as err:  # batches that read, data that not
            if no_space_left(err):  # (its spill written: not the streams' fault)
                raise
            raise InputError(run_dir / "procs", f"{name}: unreadable data in the process "
                             f"folders' streams: {first_line(err)}") from None
        if decoded is not None and name in raw.CARRIED:
            decoded, carried = run_streams.carried(decoded, name)
            if carried is not None:
                per_table[raw.CARRIED[name][0].name].append(carried)
        if decoded is not None:
            taken = _taken(decoded.lazy()) if name == "scheduler_transitions" else None
            if parts > 1 and name in KEYED_TABLES:
                reader.key_parts[name] = spilled_parts(decoded, parts)
                per_table[name].append(pl.concat(reader.key_parts[name]))
            elif name in LAZY_TABLES and decoded.height > SPILL_ROWS:
                per_table[name].append(spilled(decoded))
            else:
                per_table[name].append(decoded.lazy() if name in LAZY_TABLES
                                       else _held(name, decoded))
            # (not kept as read: what was spilled or conformed away is memory the tables
            # decoded after it reuse)
            details = raw.DETAILS.get(name)
            for n in (name, *([details[0].name] if details else ())):
                reader.done.pop(n, None)
            if taken is not None:
                reader.taken = (per_table[name][-1], taken)
            del decoded
        # (what decoding a table freed in the C heap, its arrays of positions and codes, back
        # to the system: kept, a big run's load carried gigabytes of it to its end)
        allocator.release_freed_c_memory()


def _held(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """A table the load holds until ``_canonical``: conformed now if ``CONFORMED``."""
    return conform(frame, TABLES[CONFORMED[name]], path=name) if name in CONFORMED else frame


def _spill_chunks(reader: _Reader, name: str, parts: int,
                  per_table: dict[str, list[pl.DataFrame | pl.LazyFrame]]) -> None:
    """A lazy table too big to decode whole (``CHUNK_ROWS``), decoded a chunk at a time (a
    snapshot is one) and each chunk spilled (in ``parts`` by key when more than one): the
    same rows, in the same order (each part's), as when decoded whole."""
    spills: list[list[pl.LazyFrame]] = [[] for _ in range(parts)]
    taken = []
    for chunk in reader.decoded_chunks(name, CHUNK_ROWS):
        if name == "scheduler_transitions":
            taken.append(_taken(chunk.lazy()))
        if parts > 1:
            scans = spilled_parts(chunk, parts)
        elif name in PROCESS_TABLES:
            scans = (_spilled_by_process(chunk, reader.process_parts.setdefault(name, {})),)
        else:
            scans = (spilled(chunk),)
        for p, scan in enumerate(scans):
            spills[p].append(scan)
        del chunk, scans
        allocator.release_freed_c_memory()  # (as after each table: ``_read_streams``)
    if not spills[0]:
        return
    if parts > 1:
        reader.key_parts[name] = tuple(pl.concat(s, how="diagonal_relaxed") for s in spills)
    per_table[name].append(pl.concat([scan for part in spills for scan in part],
                                     how="diagonal_relaxed"))
    if taken:
        reader.taken = (per_table[name][-1], _taken_combined(taken))


def _spilled_by_process(chunk: pl.DataFrame, spills: dict[Process, list[pl.LazyFrame]]
                        ) -> pl.LazyFrame:
    """``chunk`` spilled a process at a time, each process's scan appended to its list of
    ``spills``; the scan of the whole chunk (its processes' scans in its order)."""
    scans = []
    for process, rows in by_process(chunk).items():
        scans.append(spilled(rows))
        spills.setdefault(process, []).append(scans[-1])
    return pl.concat(scans) if scans else spilled(chunk)


def _func_stats_by_process(per_table: dict[str, list[pl.DataFrame | pl.LazyFrame]],
                           process_parts: dict[str, dict[Process, list[pl.LazyFrame]]]
                           ) -> tuple[tuple[Process, pl.LazyFrame], ...]:
    """Each process's canonical profile rows, when the run's were spilled a process at a time
    and hold nothing else (none: read as one table)."""
    parts = process_parts.get("worker_func_stats")
    if not parts or len(per_table["worker_func_stats"]) != 1:
        return ()
    return tuple((process, conform(_func_stats(pl.concat(scans)), TABLES["func_stats"]))
                 for process, scans in parts.items())


def _func_stats(funcs: pl.LazyFrame) -> pl.LazyFrame:
    """The profile rows as the engine reads them: outside any task, no ``execution_seq``."""
    return funcs.with_columns(execution_seq=pl.when(pl.col("execution_seq") > 0)
                              .then(pl.col("execution_seq")),
                              ncall_kind=pl.when(pl.col("profiler") == "sample")
                              .then(pl.lit("samples")).otherwise(pl.lit("calls")))


def _run_facts(manifest: dict[str, Any] | None, processes: list[dict[str, Any]],
               procs: list[tuple[Path, dict[str, Any], Any]], reader: _Reader
               ) -> dict[str, Any]:
    facts = (_facts(manifest, processes) if manifest is not None
             else _facts_without_manifest(procs, processes))
    # `collect` does not import Dask: the scheduler records the settings it ran with
    facts["dask_config"] = _of(manifest or {}, "dask_config", dict) or next(
        (info["dask_config"] for _d, info, _c in procs
         if info["role"] == "scheduler" and info.get("dask_config") is not None), None)
    if facts["dask_config"] is not None:
        facts["unknown"] = {k: v for k, v in facts["unknown"].items() if k != "dask_config"}
    facts["stalls"] = reader.stalls
    facts["executions_lost_with_worker"] = reader.lost_with_worker
    return facts


def _darshan_gaps(run_dir: Path, procs: list[tuple[Path, dict[str, Any], Any]],
                  io: darshan_logs.DarshanFrames | None) -> str | None:
    """The Dask processes without a complete Darshan log, when the run had a runtime and it
    wrote logs (without any, the summary already says I/O was not captured)."""
    folder = run_dir / "darshan"
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(
        (".darshan", ".darshan_partial"))) if folder.is_dir() else []
    if not names:
        return None
    hosts = ({Path(log).name: host for log, host in io.darshan_logs.select("log", "host")
              .iter_rows()} if io is not None else {})
    mmap = run_dir / MMAP_FOLDER
    kept = sorted(p.name for p in mmap.glob("*.darshan")
                  if darshan_coverage.mmap_log_holds_records(p)) if mmap.is_dir() else []
    return darshan_coverage.warning(
        [darshan_coverage.Process(d.name, info.get("host"), info["pid"]) for d, info, _c in procs
         if isinstance(info.get("pid"), int)],
        [darshan_coverage.LogFile(n, hosts.get(n)) for n in names], kept)


def _missing(tables: dict[str, Any], executions: pl.DataFrame,
             procs: list[tuple[Path, dict[str, Any], dict[str, Any] | None]],
             manifest: dict[str, Any] | None, reader: _Reader, taken: dict[str, Any]) -> None:
    """Count the executions the scheduler saw finish on a worker that has no row for them,
    with the reason; those the worker's collector counted itself are not counted again."""
    if tables["scheduler_transitions"] is None:
        return
    if n := taken["interrupted"]:
        reader.warnings.append(
            f"{n} task(s) were taken back from a worker that died or left while they were "
            "processing there, and run again: those that had started there ended without an "
            "execution row")
    gaps = missing.missing_per_worker(taken["finished"], executions)
    by_address = {info.get("address"): (d, closed) for d, info, closed in procs
                  if info["role"] == "worker"}
    ended = missing.job_ended(manifest)
    for worker, n in sorted(gaps.items()):
        d, closed = by_address.get(worker, (None, None))
        if closed is not None:
            counted = sum(c for t, _r, c in _dropped(closed) if t == "task_executions")
            n -= counted + (_of(closed, "executions_running_at_close", int) or 0)
        n -= reader.impossible[("task_executions", worker)]  # (counted already)
        if n <= 0:
            continue
        why = missing.reason(d, closed, worker, tables["cluster_events"], ended)
        if d is not None and closed is None and ended:
            # never written: not records that could not be used (correlate/timeline/lost.py gives
            # them rows from the scheduler's startstops)
            reader.lost_with_worker[worker] = n
            reader.warnings.append(
                f"{n} execution(s) of worker {worker} were lost with the worker ({why}): "
                "their rows come from the scheduler's records (window_source "
                "scheduler-startstops; CPU and I/O not measured)")
            continue
        reader.rejects.append(("collector", d.name if d is not None else worker,
                               f"task_executions: executions missing ({why})", n))
        reader.warnings.append(f"{n} execution(s) of worker {worker} are missing ({why})")


def _stalls(d: Path, reader: _Reader) -> None:
    """The stalls the process's watchdog recorded: a warning each, and the summary's facts."""
    found, unreadable = stalls.read(d)
    for stall in found:
        reader.stalls.append({"process": d.name, **stall})
        reader.warnings.append(stalls.describe(d.name, stall))
    if unreadable:
        reader.rejects.append(("collector", str(d / stalls.FILE), "stall record: a line that "
                               "is neither a header nor a stack frame", len(unreadable)))


def _quality(d: Path, info: dict[str, Any], closed: dict[str, Any] | None,
             reader: _Reader, ended: bool = True) -> None:
    name = d.name
    if closed is None:
        reader.warnings.append(
            f"{name} did not close cleanly (killed or crashed): data up to its last flush is "
            "used" if ended else f"{name} has not closed: the job may still be running, or "
            "it and `collect` were killed; data up to its last flush is used")
        return
    if isinstance(ended_by := closed.get("ended_by"), str):
        reader.warnings.append(f"{name} was ended without a clean close ({ended_by}); its rows "
                               "were flushed as it exited")
    for table, reason, n in _dropped(closed):
        reader.rejects.append(("collector", name, f"{table}: rows dropped ({reason})", n))
    failed = _counts(closed, "write_errors")
    if failed:
        reader.warnings.append(
            f"{name}: {sum(failed.values())} write(s) into the run folder failed ("
            + ", ".join(f"{reason}: {n}" for reason, n in sorted(failed.items()))
            + "); their rows were kept for the next flush, those that could not be are "
            "counted as dropped")
    errors = sum(_counts(closed, "hook_errors").values())
    if errors:
        log = d / "hook_errors.log"
        reader.warnings.append(f"{name}: {errors} collector hook error(s)" + (
            f", see {log}" if log.exists() else
            f" ({', '.join(sorted(_counts(closed, 'hook_errors')))}; no log could be written)"))
    running = _of(closed, "executions_running_at_close", int) or 0
    if running:
        reader.rejects.append(("collector", name, "task_executions: still running when the "
                               "worker closed (not recorded)", running))
    untimed = _of(closed, "executions_not_timed", int) or 0
    if untimed:
        reader.warnings.append(f"{name}: {untimed} execution(s) not timed on their thread "
                               "(non-thread executors)")
    stopped = _counts(closed, "profile_stopped")
    if {"time_ns", "memory_bytes", "budget_bytes"} <= stopped.keys():
        after = (f" after {(stopped['time_ns'] - info['started_ns']) / 1e9:.0f} s"
                 if isinstance(info.get("started_ns"), int) else "")
        reader.warnings.append(
            f"{name}: Yappi was stopped{after}: it held {stopped['memory_bytes'] / 2**20:.0f} MiB "
            "(with the entries its clears freed, where it keeps their code objects alive), "
            f"over the collectors' budget of {stopped['budget_bytes'] / 2**20:.0f} MiB (a tenth "
            "of the worker's memory limit, 1 GiB without one); executions that started later "
            "have no function profile (for long jobs: --profile sample)")
    cut = _counts(closed, "profile_clears").get("executions_cut", 0)
    if cut:
        reader.warnings.append(
            f"{name}: {cut} execution(s) were running when Yappi's tables had to be cleared "
            "with executions in flight (its memory bound): their calls running then were lost, "
            "so they have no function rows")
    unhooked = _of(closed, "profile_threads_unhooked", int) or 0
    if unhooked:
        reader.warnings.append(
            f"{name}: Yappi's hook could not be put on {unhooked} thread(s) as they started "
            "(another thread was installing its own; they ran unprofiled): their work outside "
            "tasks has no function rows")
    lost = sum(_counts(closed, "transfers_lost_to_dask_log_limit").values())
    if lost:
        reader.rejects.append(("collector", name, "transfers lost to Dask's bounded log", lost))


def _dropped(closed: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(table, reason, rows) dropped: ``{table: {reason: n}}``, or ``{table: n}`` (a buffer
    full, the format before reasons were recorded)."""
    out = []
    for table, value in (_of(closed, "dropped", dict) or {}).items():
        if isinstance(value, int) and not isinstance(value, bool):
            out.append((str(table), "buffer full", value))
        elif isinstance(value, dict):
            out += [(str(table), str(r), n) for r, n in value.items()
                    if isinstance(n, int) and not isinstance(n, bool) and n]
    return [r for r in out if r[2]]


def _counts(closed: dict[str, Any], name: str) -> dict[str, int]:
    """The integer counts of a closing record's mapping (others left out)."""
    found = _of(closed, name, dict) or {}
    return {str(k): v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool)}


def _empty_or(df: pl.DataFrame | None, name: str) -> pl.DataFrame:
    return TABLES[name].empty() if df is None else df


def _lazy_or(lf: pl.LazyFrame | None, name: str) -> pl.LazyFrame:
    return TABLES[name].empty().lazy() if lf is None else lf


def _taken(sched: pl.LazyFrame) -> dict[str, Any]:
    """What the load reads of the scheduler's transitions: the tasks taken back from workers
    that left (``missing.interrupted``), the executions seen finish per worker and key
    (``missing.finished_per_worker``), the names logged out of ``released`` (``_with_names``).
    Run format 3's are taken while the transitions are in memory, before they are spilled:
    not read back from the spill file three times."""
    return {"interrupted": missing.interrupted(sched),
            "finished": missing.finished_per_worker(sched),
            "released": _names(sched.filter(pl.col("prefix").is_not_null())
                               .filter(pl.col("start") == "released"))}


def _taken_combined(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """``_taken`` of the scheduler's transitions from what was taken of each chunk of them,
    in their order: the same as taken of them whole."""
    return {"interrupted": sum(c["interrupted"] for c in chunks),
            "finished": pl.concat([c["finished"] for c in chunks]).group_by("worker", "key")
            .agg(n=pl.col("n").sum().cast(pl.UInt32)),
            "released": pl.concat([c["released"] for c in chunks]).unique(
                "key", keep="first", maintain_order=True)}


def _canonical(t: dict[str, Any], processes: list[dict[str, Any]],
               io: darshan_logs.DarshanFrames | None, taken: dict[str, Any]) -> dict[str, Any]:
    sched = _lazy_or(t["scheduler_transitions"], "scheduler_transitions")
    ex = _empty_or(t["task_executions"], "task_executions")
    if "worker" not in ex.columns:
        ex = ex.with_columns(host=pl.lit(None, pl.String), pid=pl.lit(None, pl.Int64),
                             worker=pl.lit(None, pl.String))
    # (window_source as the table's Enum: a text per row would be a big run's 0.3 GB)
    executions = _with_names(ex, sched, taken["released"]).with_columns(
        cpu_s=pl.col("thread_cpu_ns") / 1e9, window_source=pl.lit(
            "executor-hook", TABLES["executions"].column("window_source").polars_dtype()))
    transitions = _transitions(sched, t["worker_transitions"])
    transfers, transfer_keys = _transfers(t["worker_transfers"], t["worker_transfer_keys"])
    # (conformed as read, ``_held``; the client as codes there, as declared)
    held = {canonical: _empty_or(t[name], name) for name, canonical in CONFORMED.items()}
    deps = held.pop("dependencies").filter(pl.col("depends_on").is_not_null()).unique(
        ["key", "depends_on"], maintain_order=True)
    funcs = _func_stats(_lazy_or(t["worker_func_stats"], "worker_func_stats"))
    out = {
        "processes": _processes(processes, io),
        "executions": executions,
        "transitions": transitions,
        "transfers": transfers, "transfer_keys": transfer_keys,
        "dependencies": deps,
        "func_stats": funcs,
        **held,
        "execution_slices": _empty_or(t["coroutine_slices"], "coroutine_slices").with_columns(
            cpu_s=pl.col("thread_cpu_ns") / 1e9),
        "worker_pauses": _pauses(_empty_or(t["cluster_events"], "cluster_events")),
        **_spans(t),
    }
    if io is not None:
        out.update(io_segments=io.io_segments, io_file_counters=io.io_file_counters,
                   darshan_logs=io.darshan_logs)
    return {name: conform(df, TABLES[name], path=name) for name, df in out.items()}


def _removed(events: pl.DataFrame) -> dict[str, int]:
    """Each worker the scheduler removed → when it last did (scheduler clock)."""
    gone = (events.filter(pl.col("event") == "remove_worker")
            .group_by("address").agg(pl.col("local_time_ns").max()).drop_nulls())
    return {w: int(t) for w, t in gone.sort("address").iter_rows()}


def _pauses(events: pl.DataFrame) -> pl.DataFrame:
    """Each worker's paused intervals: a pause ends at the worker's next resume (or its
    removal); one still open where the records end has no end. (A few rows a run: walked.)"""
    ends = ("worker_resumed", "remove_worker")
    marks = (events.filter(pl.col("event").is_in(["worker_paused", *ends]))
             .sort("local_time_ns", maintain_order=True))
    rows: list[tuple[str, int, int | None]] = []
    open_: dict[str, int] = {}
    for worker, t, event in marks.select("address", "local_time_ns",
                                         pl.col("event").cast(pl.String)).iter_rows():
        if event == "worker_paused":
            open_.setdefault(worker, t)
        elif worker in open_:
            rows.append((worker, open_.pop(worker), t))
    rows += [(w, t, None) for w, t in open_.items()]
    return pl.DataFrame(rows, schema={"worker": pl.String, "start_ns": pl.Int64,
                                      "stop_ns": pl.Int64}, orient="row")


def _spans(t: dict[str, Any]) -> dict[str, pl.DataFrame]:
    """Tasks' spans and annotations (a key's last reading: a graph submitted again may move
    it), the span tree with name paths, and Dask's metrics per span."""
    labels = _empty_or(t["task_annotations"], "task_annotations").sort(
        "local_time_ns", maintain_order=True).unique("key", keep="last", maintain_order=True)
    raw = _empty_or(t["spans"], "spans").unique("span_id", keep="last", maintain_order=True)
    names = pl.Series([" / ".join(map(str, json.loads(n))) for n in raw["name"]],
                      dtype=pl.String)
    return {"task_labels": labels.drop("local_time_ns"),
            "span_tree": raw.with_columns(span=names).drop("name"),
            "span_dask_metrics": _empty_or(t["span_metrics"], "span_metrics")}


def _names(transitions: pl.LazyFrame) -> pl.DataFrame:
    """Each key's first prefix and group in ``transitions``."""
    return (transitions.select("key", "prefix", "group")
            .unique("key", keep="first", maintain_order=True).collect())


def _with_names(executions: pl.DataFrame, sched: pl.LazyFrame, released: pl.DataFrame
                ) -> pl.DataFrame:
    """``executions`` with the prefix and group the scheduler logged for their keys. Every
    transition of a key carries the same names (both derive from the key; the collector logs
    them while the task is alive), so the names out of ``released``, where every task starts
    (``_taken``: a third of the transitions), are used first, and the other transitions are
    read only for keys not named there (missed or recreated tasks)."""
    named = sched.filter(pl.col("prefix").is_not_null())
    # (the names put beside the executions: a join would copy every column of a big run's)
    out = executions.hstack(beside(executions, released, ["key"]))
    unnamed = out.filter(pl.col("prefix").is_null()).select("key")
    if unnamed.is_empty():
        return out
    later = (named.filter(pl.col("start") != "released")
             .select("key", "prefix", "group").collect())
    if later.is_empty():
        return out
    rest = _names(later.lazy().join(unnamed.lazy(), on="key", how="semi"))
    return out.with_columns(out.get_column(c.name).fill_null(c)
                            for c in beside(out, rest, ["key"]))


def _transitions(sched: pl.LazyFrame, worker: pl.LazyFrame | None) -> pl.LazyFrame:
    s = sched.with_columns(side=pl.lit("scheduler"))
    parts = [conform(s, TABLES["transitions"])]
    if worker is not None:
        parts.append(conform(worker.with_columns(side=pl.lit("worker")), TABLES["transitions"]))
    return pl.concat(parts)


def _transitions_in_parts(tables: dict[str, Any],
                          per_table: dict[str, list[pl.DataFrame | pl.LazyFrame]],
                          key_parts: dict[str, tuple[pl.LazyFrame, ...]]
                          ) -> tuple[pl.LazyFrame, ...]:
    """The canonical transitions of each part by key (``correlate.frames.spill``), when every
    transitions table the run has was spilled in parts whole (none: not spilled so)."""
    present = [n for n in KEYED_TABLES if tables[n] is not None]
    if not present or any(n not in key_parts or len(per_table[n]) != 1 for n in present):
        return ()
    sched, worker = (key_parts.get(n) for n in KEYED_TABLES)
    empty = TABLES["scheduler_transitions"].empty().lazy()
    return tuple(conform(_transitions(sched[p] if sched else empty,
                                      worker[p] if worker else None), TABLES["transitions"])
                 for p in range(len(sched or worker or ())))


def _transfers(tr: pl.DataFrame | None, keys: pl.DataFrame | None
               ) -> tuple[pl.DataFrame, pl.DataFrame]:
    if tr is None:
        return TABLES["transfers"].empty(), TABLES["transfer_keys"].empty()
    tr = tr.sort("host", "pid", "transfer_seq").with_row_index("transfer_id").with_columns(
        pl.col("transfer_id").cast(pl.Int64))
    ids = tr.select("host", "pid", "transfer_seq", "transfer_id")
    k = (keys.join(ids, on=["host", "pid", "transfer_seq"]) if keys is not None
         else TABLES["transfer_keys"].empty())
    return tr, k


def _processes(procs: list[dict[str, Any]], io: darshan_logs.DarshanFrames | None
               ) -> pl.DataFrame:
    known = conform(pl.DataFrame(procs, infer_schema_length=None), TABLES["processes"]) if (
        procs) else TABLES["processes"].empty()
    if io is None or io.darshan_logs.is_empty():
        return known
    logs = io.darshan_logs.filter(pl.col("host").is_not_null()).select(
        "host", "pid", name="exe")
    others = logs.join(known.select("host", "pid"), on=["host", "pid"], how="anti").with_columns(
        role=pl.lit("other"), match=pl.lit("darshan log only"))
    return pl.concat([known, conform(others, TABLES["processes"])], how="vertical_relaxed")


def _of(d: dict[str, Any], name: str, *types: type) -> Any:
    """``d[name]`` when it has one of ``types`` (a damaged manifest's other values are
    left out rather than carried into reports)."""
    value = d.get(name)
    return value if isinstance(value, types) and not isinstance(value, bool) else None


def _facts(manifest: dict[str, Any], processes: list[dict[str, Any]]) -> dict[str, Any]:
    workers = [p for p in processes if p["role"] == "worker"]
    command = _of(manifest, "command", list, str)
    return {
        "command": (" ".join(map(str, command)) if isinstance(command, list) else command)
        or None,
        "cwd": _of(manifest, "cwd", str),
        "started_ns": _of(manifest, "started_ns", int),
        "ended_ns": _of(manifest, "ended_ns", int),
        "exit_code": _of(manifest, "exit_code", int),
        "hosts": sorted({p["host"] for p in processes}),
        "workers": len(workers),
        "nthreads": sorted({p.get("nthreads") for p in workers if p.get("nthreads")}),
        "versions": _of(manifest, "versions", dict),
        "collector_options": _of(manifest, "collector_options", dict),
        "darshan": _of(_of(manifest, "darshan", dict) or {}, "runtime", str),
        # why collect used that runtime, or none (e.g. "--darshan off"): said when I/O is missing
        "darshan_reason": _of(_of(manifest, "darshan", dict) or {}, "reason", str),
        "job_environment": _of(manifest, "job_environment", dict),
        "run_id": _of(manifest, "run_id", str),
        "recorded_by": _of(manifest, "recorded_by", str) or "collect",
        "unknown": _of(manifest, "unknown", dict) or {},
    }


def _facts_without_manifest(procs: list[tuple[Path, dict[str, Any], dict[str, Any] | None]],
                            processes: list[dict[str, Any]]) -> dict[str, Any]:
    """What the process folders tell on their own; the rest is listed under ``unknown``."""
    started, ended = [], []
    for _d, info, closed in procs:
        started.append(info.get("started_ns"))
        ended.append((closed or {}).get("closed_ns"))
    facts = _facts({}, processes)
    starts = [t for t in started if isinstance(t, int)]
    ends = [t for t in ended if isinstance(t, int)]
    facts.update(command=None, started_ns=min(starts) if starts else None,
                 ended_ns=max(ends) if ends else None, recorded_by="preload (no manifest)",
                 unknown=dict(NO_MANIFEST_UNKNOWN))
    return facts
