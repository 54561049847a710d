"""The single rendering of Dask keys shared by every source: ``str(key)`` for tuple keys
(exactly what the Mofka CSVs hold, e.g. ``('array-6aa3…', 0, 0)``), the string itself for
string keys. Stdlib only (the collectors import it inside workers)."""

from __future__ import annotations

import ast
from typing import Any


def key_str(key: Any) -> str:
    if isinstance(key, bytes):
        key = key.decode("utf-8", "replace")
    return key if isinstance(key, str) else str(key)


def key_texts(keys: list) -> list[str]:
    """``key_str`` of each key, each distinct key rendered once (a task's key comes back with
    each of its transitions); string keys (most of Dask's) are their own text."""
    distinct = set(keys)
    if set(map(type, distinct)) <= {str}:
        return keys
    text = {key: key_str(key) for key in distinct}
    return list(map(text.__getitem__, keys))


def parse_key_text(text: str) -> str:
    """Normalise key text read from a file: tuple literals are parsed safely
    (``ast.literal_eval``, never ``eval``) and re-rendered; anything else is kept as text."""
    t = text.strip()
    if t.startswith("(") and t.endswith(")"):
        try:
            value = ast.literal_eval(t)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return text
        if isinstance(value, tuple):
            return key_str(value)
    return text
