"""The attribution's passes after the exact one, found by their method's row.

A method's module registers the function that gives its bytes, with the label of its row in
``correlate.schema.methods``; the row's ``step`` is its place among the passes (the order of
evidence, not of exactness: helper threads are looked at before the threads inferred for an
imported run, the shuffles' shard writes after both). Two kinds:

- ``@segment_pass(label)``: ``(att, given) -> IOAttribution``, run by each partition of
  processes over its DXT segments (``driver``), after ``exact``;
- ``@untraced_pass(label)``: ``(given) -> Untraced``, run once over the whole run after the
  partitions, for what DXT does not trace (``untraced``): task_files and unattributed rows,
  and spill per key.

Every module of this package is imported before the passes are listed, so a new method is its
module and its row: nothing else names it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import polars as pl

from correlate.attribution.shares import IOAttribution
from correlate.schema.methods import METHODS
from correlate.sources.frames import RunFrames


@dataclass(frozen=True)
class Partition:
    """What a segment pass has besides the attribution so far: the partition's executions
    (aligned), its processes' opens, the run's processes and clock marker paths, and the
    run's shuffle barriers (shuffle_id → owner execution; None: no barrier ran)."""

    executions: pl.DataFrame
    opens: pl.DataFrame
    processes: pl.DataFrame
    marker_paths: list[str]
    shuffle_owners: pl.DataFrame | None


@dataclass(frozen=True)
class Run:
    """What an untraced pass has: the run's frames, its executions (aligned), every
    process's clocks, the executions' I/O windows (a coroutine's slices) and the POSIX
    counters of the logs without DXT (``counters.untraced_counters``)."""

    frames: RunFrames
    executions: pl.DataFrame
    clocks: pl.DataFrame
    windows: pl.DataFrame
    counted: pl.DataFrame


@dataclass(frozen=True)
class Untraced:
    """An untraced pass's rows: task_files without ``key``, unattributed, and spill per key
    (``spill.spill_io``'s columns; None: none)."""

    files: pl.DataFrame
    unattributed: pl.DataFrame
    spilled: pl.DataFrame | None = None


class SegmentPass(Protocol):
    def __call__(self, att: IOAttribution, given: Partition) -> IOAttribution: ...


class UntracedPass(Protocol):
    def __call__(self, given: Run) -> Untraced | None: ...


S = TypeVar("S", bound=SegmentPass)
U = TypeVar("U", bound=UntracedPass)
_SEGMENT: dict[str, SegmentPass] = {}
_UNTRACED: dict[str, UntracedPass] = {}
_STEP = {m.label: m.step for m in METHODS if m.step is not None}


def _registered(label: str, into: dict) -> Callable:
    if label not in _STEP:
        raise ValueError(f"{label!r} has no step in correlate.schema.methods")

    def register(fn: Callable) -> Callable:
        into[label] = fn
        return fn
    return register


def segment_pass(label: str) -> Callable[[S], S]:
    return _registered(label, _SEGMENT)


def untraced_pass(label: str) -> Callable[[U], U]:
    return _registered(label, _UNTRACED)


def _load_all() -> None:
    """Import every module of this package (each registers its passes as it is imported)."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        importlib.import_module(f"{__package__}.{module.name}")


def segment_passes() -> list[SegmentPass]:
    _load_all()
    return [_SEGMENT[label] for label in sorted(_SEGMENT, key=_STEP.__getitem__)]


def untraced_passes() -> list[UntracedPass]:
    _load_all()
    return [_UNTRACED[label] for label in sorted(_UNTRACED, key=_STEP.__getitem__)]


def unregistered() -> list[str]:
    """Labels whose row has a step and no pass (a test keeps this empty)."""
    _load_all()
    return sorted(set(_STEP) - set(_SEGMENT) - set(_UNTRACED))
