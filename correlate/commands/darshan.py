"""``correlate darshan LOG|DIR [...] -o OUT.parquet``: decode Darshan logs of any format since
Darshan 3.0 (3.00 … 3.41, either byte order; DXT v1, v2 and the modified 96-byte layout) into
one parquet table — a fast ``darshan-dxt-parser`` replacement.

The segments table is written as the logs are decoded, one batch of segments (a chunk of a
DXT region) after another, so memory does not grow with the logs; a region that turns out
damaged after some of its segments were written is read again the eager way (every log
decoded whole, then written), which gives the table as ``load`` gives it.

Prints one summary line (logs, segments, bytes, warnings; logs read only in part, such as a
truncated one, are counted as incomplete). Exit 0 when at least one log was
read (problems with the others are printed as warnings), 1 when none could be read.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from correlate.errors import InputError

TABLES = {"segments": "io_segments", "logs": "darshan_logs", "files": "io_file_counters"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", nargs="+", type=Path, help=".darshan files or folders holding them")
    p.add_argument("-o", "--out", type=Path, required=True, help="parquet file to write")
    p.add_argument("--table", choices=sorted(TABLES), default="segments",
                   help="what to write: one row per DXT segment (default), per log, or "
                        "per file (POSIX/STDIO counters)")


def run(args: argparse.Namespace) -> int:
    import polars as pl

    from correlate.sinks import COMPRESSION
    from correlate.sources.darshan_logs import expand_paths, incomplete_logs, load

    missing = [p for p in args.logs if not p.exists()]
    if missing:
        raise InputError(missing[0], "no such file or directory")
    paths = expand_paths(args.logs)
    if not paths:
        raise InputError(args.logs[0], "no .darshan logs found")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    streamed = None
    with _status(f"decoding {len(paths)} log(s)"):
        if args.table == "segments":
            streamed = _stream_segments(paths, args.out)
        frames = streamed[0] if streamed else load(paths)
    if frames.darshan_logs.is_empty() and len(frames.problems) == 1:
        raise InputError(*frames.problems[0])  # the one message, said once, as the error
    if frames.problems:
        from correlate.console import warn

        for file, problem in frames.problems:
            warn(f"{file}: {problem}")
    if frames.darshan_logs.is_empty():
        raise InputError(args.logs[0], "none of the logs could be read")
    if streamed:
        _, rows, rd, wr = streamed
    else:
        table = getattr(frames, TABLES[args.table])
        table.write_parquet(args.out, compression=COMPRESSION, statistics=False)
        seg = frames.segments()
        rd = int(seg.filter(pl.col("op") == "read")["length"].sum())
        wr = int(seg.filter(pl.col("op") == "write")["length"].sum())
        rows = seg.height
    incomplete = incomplete_logs(frames.darshan_logs).height
    # a truncated log still gives a table (what could be read): say it is partial
    partial = (f" ({incomplete} incomplete: the table holds only what could be read)"
               if incomplete else "")
    # the result line, on stdout, as is (paths are not rich markup; rich is not even loaded
    # on this command's usual path, which is most of a small log's time)
    height = rows if streamed else table.height
    print(f"{frames.darshan_logs.height} log(s){partial}, {rows:,} DXT segments, "
          f"{rd:,} bytes read, {wr:,} bytes written, {len(frames.problems)} "
          f"warning(s) → {args.out} ({args.table}: {height:,} rows)", flush=True)
    return 0


def _stream_segments(paths: list[Path], out: Path) -> tuple[Any, int, int, int] | None:
    """Decode the logs and write their segments to ``out`` batch by batch: polars' streaming
    engine pulls each batch from the decoder and writes it (encoding in its own threads) while
    the next region chunk inflates in a thread of its own. Returns (frames, segments, bytes
    read, bytes written), or None when a region failed after some of its segments were
    written (the caller then reads the logs again)."""
    import polars as pl
    from polars.io.plugins import register_io_source

    from correlate.schema.darshan import IO_SEGMENTS
    from correlate.sinks import COMPRESSION
    from correlate.sources.darshan_logs import StreamBroken, assemble, iter_log

    results: list[Any] = []
    totals = {"rows": 0, "read": 0, "write": 0}
    broken: list[Path] = []

    def parts() -> Any:
        for path in paths:
            log = iter_log(path)
            try:
                while True:
                    df = next(log)
                    written = df.get_column("op") == "write"
                    length = df.get_column("length")
                    totals["rows"] += df.height
                    totals["write"] += int(length.filter(written).sum())
                    totals["read"] += int(length.filter(~written).sum())
                    yield df
            except StopIteration as stop:
                results.append(stop.value)
            except InputError as err:  # as load() takes it: one problem for the log
                results.append((str(path), err.problem))
            except StreamBroken:
                broken.append(path)
                return

    lf: pl.LazyFrame = register_io_source(lambda *_: parts(),
                                          schema=IO_SEGMENTS.polars_schema())
    lf.sink_parquet(out, compression=COMPRESSION, statistics=False)
    if broken:
        return None
    # the logs' rows, counters and problems, from the results just read
    frames = assemble(results)
    return frames, totals["rows"], totals["read"], totals["write"]


def _status(message: str) -> AbstractContextManager[Any]:
    """A spinner on stderr when it is a terminal (rich draws none elsewhere, so it is not
    loaded then)."""
    if not sys.stderr.isatty():
        return nullcontext()
    from correlate.console import console

    return console().status(message)
