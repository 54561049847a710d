"""Stable human formatting of numbers shared by the Markdown report and the figures.

Pure functions of their argument: the same value always gives the same text (no locale, no
"now"). ``None`` renders as ``-``.
"""

from __future__ import annotations

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(n: float | None) -> str:
    """``1536`` → ``1.5 KiB``; whole bytes below 1 KiB."""
    if n is None:
        return "-"
    value = float(n)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} {_UNITS[-1]}"  # pragma: no cover


def seconds(s: float | None) -> str:
    """Seconds with a unit that keeps 3 significant-ish digits: ``0.0123`` → ``12.3 ms``."""
    if s is None:
        return "-"
    a = abs(s)
    if a == 0:
        return "0 s"
    if a < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if a < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:,.3f} s"


def count(n: float | None) -> str:
    """Integers with thousands separators; fractional counts (window-split) keep one decimal."""
    if n is None:
        return "-"
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.1f}"


def share(x: float | None) -> str:
    """A fraction as a percentage with one decimal."""
    return "-" if x is None else f"{x:.1%}"


def requests(ops: float | None, mean_bytes: float | None) -> str:
    """Operations and their mean size: ``4,097 × 4.0 KiB``; ``0`` where there were none (no
    mean to state); ``-`` where not measured."""
    if ops is None:
        return "-"
    return count(ops) if not ops or mean_bytes is None else f"{count(ops)} × {human_bytes(mean_bytes)}"


def times(x: float | None) -> str:
    """How many times bytes were read: ``4.0×``; ``-`` where not known."""
    return "-" if x is None else f"{x:,.1f}×"
