"""Terminal output. Results (the summary, the written files, a story) go to stdout so
``correlate RUN > summary.txt`` keeps them; progress, warnings and errors go to stderr, as
pytest, ruff and darshan-parser do."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import lru_cache
from typing import Any

#: a name column never gets narrower than this, however wide the numbers beside it
MIN_NAME_WIDTH = 16
#: rich puts " │ " between columns (show_edge=False, pad_edge=False)
COLUMN_GAP = 3


@lru_cache(maxsize=1)
def console() -> Any:
    """Diagnostics: progress, warnings and errors (stderr)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


@lru_cache(maxsize=1)
def results() -> Any:
    """The command's output (stdout)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def error_line(message: str) -> None:
    """Print ``correlate: <message>`` as one line (no traceback)."""
    from rich.markup import escape

    console().print(f"[bold red]correlate:[/] {escape(message)}")


def warn(message: str) -> None:
    from rich.markup import escape

    console().print(f"[yellow]warning:[/] {escape(message)}")


def info(message: str) -> None:
    from rich.markup import escape

    console().print(escape(message))


def shorten(name: str, width: int, *, keep_tail: bool = False) -> str:
    """``name`` in at most ``width`` characters, cut whole with an ellipsis rather than folded
    mid-word. Paths are shortened from the left, keeping their tail (the file name tells rows
    apart: a cut in its middle made two files' rows read alike), other names their head."""
    if len(name) <= width:
        return name
    if not keep_tail:
        return name[:width - 1] + "…"
    return "…" + name[len(name) - (width - 1):]


def name_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
               width: int, keep_tail: bool = False) -> Any:
    """A table whose first column holds names and the others short values. Names that do not
    fit ``width`` are shortened whole (see ``shorten``); no cell ever folds onto a second line,
    which on 80 columns (a file, a CI log) cut prefixes mid-word."""
    from rich.table import Table
    from rich.text import Text

    cells = [["-" if v is None else str(v) for v in r] for r in rows]
    others = sum(max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)
                 if i) + COLUMN_GAP * (len(columns) - 1)
    room = max(MIN_NAME_WIDTH, width - others)
    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right", no_wrap=True,
                     overflow="ellipsis")
    for r in cells:
        t.add_row(Text(shorten(r[0], room, keep_tail=keep_tail)), *[Text(v) for v in r[1:]])
    return t


#: environment variable naming a file that each stage of a long command appends one JSON line
#: to (its wall and CPU seconds and the process's peak RSS during it): how the memory and time
#: of the stages are measured (benchmarks/bench_scale.py --stages)
STAGE_LOG = "CORRELATE_STAGE_LOG"


def _vm_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Progress:
    """The stages of a long command, shown as a progress bar on a terminal (stage, partitions
    done/total, rows/s) and, when ``STAGE_LOG`` names a file, logged there with their time and
    peak RSS. Neither (``Progress()``) costs nothing: what a command not on a terminal uses."""

    def __init__(self, bar: Any = None, log: str | None = None) -> None:
        self._bar, self._log = bar, log
        self._open = ExitStack()

    def begin(self, name: str, rows: int | None = None) -> None:
        """End the stage begun last (if any) and begin ``name``: stages of a straight
        sequence of steps without an indented block each."""
        self.end()
        self._open.enter_context(self.stage(name, rows=rows))

    def end(self) -> None:
        self._open.close()

    @contextmanager
    def stage(self, name: str, total: int | None = None, rows: int | None = None, *,
              logged: bool = True) -> Iterator[Callable[[int], None]]:
        """A stage of ``total`` steps (None: one) over ``rows`` input rows (for rows/s when
        it has no steps); yields ``advance(rows)``: one step done, over that many rows.
        ``logged=False``: a stage inside another, shown but not logged (its peak is the
        outer one's)."""
        task = None if self._bar is None else self._bar.add_task(
            name, total=total or 1, rows=0, rate="")
        logged = logged and bool(self._log)
        if logged:
            _reset_peak_rss()
        t, cpu = time.perf_counter(), time.process_time()
        done_rows = 0

        def advance(step_rows: int = 0) -> None:
            nonlocal done_rows
            done_rows += step_rows
            if task is not None:
                dt = time.perf_counter() - t
                self._bar.update(task, advance=1, rate=f"{done_rows / dt:,.0f} rows/s"
                                 if done_rows and dt > 0 else "")

        yield advance
        if task is not None:
            dt = time.perf_counter() - t
            all_rows = rows or done_rows
            self._bar.update(task, completed=total or 1, rate=f"{all_rows / dt:,.0f} rows/s"
                             if all_rows and dt > 0 else "")
        if logged and self._log:
            with open(self._log, "a") as f:
                f.write(json.dumps({
                    "stage": name, "wall_s": round(time.perf_counter() - t, 3),
                    "cpu_s": round(time.process_time() - cpu, 3),
                    "peak_rss_mb": _mb(_vm_kib("VmHWM")), "rss_after_mb": _mb(_vm_kib("VmRSS")),
                    "rows": rows or done_rows or None}) + "\n")

    def mapped(self, mapper: Any, name: str, rows: Callable[[Any], int] | None = None) -> Any:
        """``mapper`` whose every result counts as a step of stage ``name`` (``rows(result)``
        its rows)."""
        def counted(fn: Callable[[Any], Any], items: Sequence[Any], at_once: int = 2
                    ) -> Iterator[Any]:
            with self.stage(name, total=len(items), logged=False) as advance:
                for result in mapper(fn, items, at_once):
                    advance(rows(result) if rows else 0)
                    yield result
        return counted


def _mb(kib: int | None) -> float | None:
    return None if kib is None else round(kib * 1024 / 1e6, 1)


def _reset_peak_rss() -> None:
    """Start the process's VmHWM again from its current RSS (Linux ``clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


@contextmanager
def progress() -> Iterator[Progress]:
    """A ``Progress`` for a command: a bar on stderr when it is a terminal, nothing otherwise
    (a log, a pipe, CI)."""
    log = os.environ.get(STAGE_LOG) or None
    if not console().is_terminal:
        yield Progress(None, log)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    with Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
             TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=console(),
             transient=True) as bar:
        yield Progress(bar, log)
