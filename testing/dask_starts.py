"""Which Dask servers a test started: the record ``tests/conftest.py`` checks markers against.

Every ``distributed.core.Server`` (Scheduler, Worker, Nanny) made in the test process or in any
Python process it starts leaves a record in the folder named by ``CORRELATE_DASK_STARTS``
(children load :func:`watch` through ``testing/dask_starts_site/sitecustomize.py``, put first on
``PYTHONPATH``, so a LocalCluster inside ``collect -- python job.py`` or a ``dask worker`` CLI
is seen too).

A child started with its own ``PYTHONPATH`` (not the inherited one), ``-E`` or ``-I`` is not seen.
The hook is installed lazily (an import finder waiting for ``distributed.core``), so a child that
never imports distributed pays nothing and its ``sys.modules`` stays as it was.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import itertools
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

#: the folder where each Server made leaves one empty file, ``<pid>-<n>-<class>``
ENV = "CORRELATE_DASK_STARTS"
SITE = Path(__file__).resolve().parent / "dask_starts_site"

_count = itertools.count()


def _record(kind: str) -> None:
    folder = os.environ.get(ENV)
    if folder:
        (Path(folder) / f"{os.getpid()}-{next(_count)}-{kind}").touch()


def _patch(core: ModuleType) -> None:
    server = core.Server
    if getattr(server.__init__, "_dask_starts", False):
        return
    init = server.__init__

    def recorded_init(self: Any, *args: Any, **kwargs: Any) -> None:
        _record(type(self).__name__)
        init(self, *args, **kwargs)

    setattr(recorded_init, "_dask_starts", True)  # noqa: B010 (a mark on a function object)
    server.__init__ = recorded_init


class _Loader(importlib.abc.Loader):
    """The real loader of ``distributed.core``, then the patch."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    """Waits for ``distributed.core`` and hands it to :class:`_Loader`."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "distributed.core":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def watch() -> None:
    """Record every Dask Server this process makes (when ``CORRELATE_DASK_STARTS`` is set)."""
    if not os.environ.get(ENV):
        return
    if "distributed.core" in sys.modules:
        _patch(sys.modules["distributed.core"])
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def take(folder: Path) -> list[str]:
    """The kinds of Servers recorded since the last call (their records removed)."""
    kinds = []
    for record in sorted(folder.iterdir()):
        kinds.append(record.name.split("-", 2)[2])
        record.unlink()
    return kinds
