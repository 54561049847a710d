"""Collectors: run inside the user's Dask processes and write the run folder.

Importing this package imports nothing heavy (no polars, pyarrow, numpy or yappi); the plugins
import yappi lazily at setup, and write their parts with the standard library alone. Public
API: ``collectors.record``, and for clients that send data into Dask from outside (in situ)
``collectors.declare_sender`` and ``collectors.scatter`` (see ``collectors.api``,
docs/in-situ.md).
"""

from __future__ import annotations

__all__ = ["declare_sender", "record", "scatter"]


def __getattr__(name: str):  # lazy, so `import collectors` stays cheap
    if name in __all__:
        from collectors import api

        return getattr(api, name)
    raise AttributeError(name)
