"""Markdown's cells, for every page written in Markdown (report.md, compare.md, the
findings): run-provided strings as code spans with ``|`` escaped, free text with ``<``, ``>``,
``&`` as entities and Markdown's metacharacters escaped, so nothing in a key can inject
Markdown or HTML; tables; a measured figure or ``not captured``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from correlate.reports.fmt import seconds


def code(value: object) -> str:
    """A Markdown code span holding ``value`` literally (safe inside a table cell)."""
    s = str(value).replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    runs = [len(r) for r in re.findall("`+", s)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def text(value: object) -> str:
    """Free text with HTML and Markdown metacharacters neutralised."""
    s = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = re.sub(r"([\\`*_\[\]#|])", r"\\\1", s)
    return s.replace("\r", " ").replace("\n", " ")


def table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> list[str]:
    """GitHub table; ``align`` has one char per column (``l``/``r``), default first left."""
    align = align or "l" + "r" * (len(header) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


UNKNOWN = "unknown"
NOT_CAPTURED = "not captured"


def measured(s: float | None) -> str:
    """Seconds, or ``not captured`` where the source measured none."""
    return NOT_CAPTURED if s is None else seconds(s)
