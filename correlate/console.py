"""Terminal output. Results (the summary, the written files, a story) go to stdout so
``correlate RUN > summary.txt`` keeps them; progress, warnings and errors go to stderr, as
pytest, ruff and darshan-parser do."""

from __future__ import annotations

from collections.abc import Sequence
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
