"""A run folder's raw parts for tests and benchmarks: every part of a table read across the
process folders, and a recorded run folder rewritten in the collectors' current part format
(``samples/run-v1`` was recorded with Parquet parts, run format 1)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from collectors.sink import arrow_part, closing_record
from correlate.schema import TABLES, Table, conform
from correlate.schema.run import CARRIED, DETAILS, IN_FILE_OF, PART_SUFFIX, STREAM_SUFFIX, STRINGS
from correlate.sources import run_parts
from correlate.sources.run_streams import (
    carried,
    decoded_table,
    details_prepared,
    files,
    read_stream,
)
from correlate.sources.stream_strings import lookup


def read_raw(run: Path, table: str, procs: str = "*") -> pl.DataFrame:
    """Every part of ``table`` in ``run/procs/<procs>``, with the process folder as ``proc``
    (an empty frame when there is none)."""
    frames = [run_parts.read(part, TABLES[table]).with_columns(proc=pl.lit(d.name),
                                                                part=pl.lit(part.name))
              for d in sorted((run / "procs").glob(procs))
              for part in run_parts.part_files(d / table)]
    frames += [df.with_columns(proc=pl.lit(d.name), part=pl.lit(path.name))
               for d in sorted((run / "procs").glob(procs))
               for path, df in read_table(d, TABLES[table])]
    return pl.concat(frames) if frames else pl.DataFrame()


def read_table(proc_dir: Path, table: Table) -> list[tuple[Path, pl.DataFrame]]:
    """One process's files of a format-3 table, each decoded on its own (the run-folder
    reader decodes all processes at once), skipping what does not read."""
    names = {p.name for p in proc_dir.iterdir()} if proc_dir.is_dir() else set()
    strings_path = proc_dir / f"{STRINGS.name}{STREAM_SUFFIX}"
    written = read_stream(strings_path).frame if strings_path.name in names else None
    strings = lookup(lambda: [] if written is None else [
        written.with_columns(_proc=pl.lit(0, pl.Int32))], 1)

    def stored(path: Path) -> pl.DataFrame | None:
        frame = (read_stream(path).frame if path.name.endswith(STREAM_SUFFIX)
                 else pl.read_ipc(path))
        return None if frame is None else frame.with_columns(_proc=pl.lit(0, pl.Int32))

    def read(path: Path, details: pl.DataFrame | None = None) -> pl.DataFrame | None:
        frame, name = stored(path), path.name.split(".")[0]
        return None if frame is None else decoded_table(
            frame, name, None if details is None else details_prepared(details, name, strings)[0],
            strings)[0]

    out = []
    details = None  # (the details' rows as stored, read once for every file of the table)
    if table.name in DETAILS:
        found = [d for p in files(proc_dir, names, DETAILS[table.name][0].name)
                 if (d := stored(p)) is not None]
        details = pl.concat(found) if found else None
    for path in files(proc_dir, names, table.name):
        frame = read(path, details)
        if frame is None:
            continue
        for host, column in IN_FILE_OF.values():  # rows of another table
            if host.name == table.name and column in frame.columns:
                frame = frame.filter(pl.col(column).is_not_null())
        out.append((path, conform(frame, table, path=str(path))))
    if (held := IN_FILE_OF.get(table.name)) is not None:  # written in another's streams
        host, column = held
        for path in files(proc_dir, names, host.name):
            hosting = read(path)
            if hosting is not None and column in hosting.columns:
                held_rows = hosting.filter(pl.col(column).is_null())
                if held_rows.height:
                    out.append((path, conform(held_rows.select(
                        c for c in table.names if c in hosting.columns), table,
                        path=str(path))))
    for name, (other, _columns) in CARRIED.items():  # its rows carried by another's
        if other.name == table.name:
            for path in files(proc_dir, names, name):
                carrier = read(path)
                rows = None if carrier is None else carried(carrier, name)[1]
                if rows is not None:
                    out.append((path, conform(rows, table, path=str(path))))
    return out


def closing_records(run: Path, procs: str = "*") -> dict[str, dict]:
    """The closing record (proc.json's ``closed``; older collectors: closed.json) of each
    process folder ``run/procs/<procs>`` that has one, by the folder's name."""
    found = {d.name: closing_record(d) for d in sorted((run / "procs").glob(procs))}
    return {name: closed for name, closed in found.items() if closed is not None}


def read_proc(proc_dir: Path, table: Table) -> pl.DataFrame:
    """One process folder's rows of ``table``, whatever the run format, with the file each
    row was read from as ``file`` (an empty frame of the table when there is none)."""
    frames = [run_parts.read(part, table).with_columns(file=pl.lit(part.name))
              for part in run_parts.part_files(proc_dir / table.name)]
    frames += [df.with_columns(file=pl.lit(path.name))
               for path, df in read_table(proc_dir, table)]
    return pl.concat(frames) if frames else table.empty().with_columns(file=pl.lit(None, pl.String))


def to_current_parts(run: Path) -> list[Path]:
    """Rewrite every Parquet part of ``run`` as run format 2's Arrow part of the same name
    and rows, and mark the folder with that format; return the new parts."""
    out = []
    for part in sorted(run.glob("procs/*/*/*.parquet")):
        df = pl.read_parquet(part)
        new = part.with_name(part.name.removesuffix(".parquet") + PART_SUFFIX)
        table = TABLES[part.parent.name]
        # every column the collectors write now; those added since the part was written
        # (nullable) are null, as the readers take them from older parts
        new.write_bytes(arrow_part(list(table.columns), [
            df.get_column(c.name).to_list() if c.name in df.columns else [None] * df.height
            for c in table.columns]))
        part.unlink()
        out.append(new)
    for meta in [run / "manifest.json", *run.glob("procs/*/proc.json")]:
        if meta.exists():
            info = json.loads(meta.read_text())
            info["format_version"] = 2
            meta.write_text(json.dumps(info, indent=1, sort_keys=True))
    return out


def calls_per_execution(run: Path, names: list[str]) -> pl.DataFrame:
    """Every worker's task executions with, per function of ``names``, the calls its function
    rows count (a column per name; null: the execution has no row of that function)."""
    executions = read_raw(run, "task_executions", "worker-*")
    stats = read_raw(run, "worker_func_stats", "worker-*").filter(pl.col("name").is_in(names))
    calls = stats.group_by("proc", "execution_seq").agg(
        **{n: pl.col("ncall").filter(pl.col("name") == n).sum() for n in names})
    return executions.join(calls, on=["proc", "execution_seq"], how="left")
