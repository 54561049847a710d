"""Terminal output: one rich console on stderr for progress, warnings and errors."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


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
