"""Collectors: run inside the user's Dask processes and write the run folder.

Importing this package imports nothing heavy (no polars, pyarrow, numpy or yappi); the plugins
import yappi lazily at setup, and write their parts with the standard library alone. Public
API: ``collectors.record`` (see ``collectors.api``).
"""

from __future__ import annotations

__all__ = ["record"]


def __getattr__(name: str):  # lazy, so `import collectors` stays cheap
    if name == "record":
        from collectors.api import record

        return record
    raise AttributeError(name)
