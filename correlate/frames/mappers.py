"""A *mapper* runs a function over a list of items and yields the results in order: the Darshan
logs of a run, or its per-process attribution partitions. ``local_map`` runs them in this
process; ``correlate.frames.cluster`` has the one that runs them as tasks on a Dask cluster.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Mapper(Protocol):
    """Runs ``fn`` over ``items``, yielding the results in order; ``at_once``: how many items
    this process computes at the same time (a cluster's mapper may ignore it: its workers each
    have their own memory)."""

    def __call__(self, fn: Callable[[Any], Any], items: Sequence[Any], at_once: int = 2
                 ) -> Iterator[Any]: ...


def local_map(fn: Callable[[Any], Any], items: Sequence[Any], at_once: int = 2
              ) -> Iterator[Any]:
    """``fn`` over ``items`` in this process, in order, ``at_once`` at a time in threads
    (decoding a Darshan log holds the GIL only part of the time; zlib and polars release it).
    The next item is queued while the caller uses the one before, so that with ``at_once=1`` it
    is computed meanwhile: at most two results are computed or waiting."""
    with ThreadPoolExecutor(at_once) as pool:
        pending: deque[Future[Any]] = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) == max(2, at_once):
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def runs_up_to(items: Sequence[T], sizes: Sequence[int], limit: int) -> list[list[T]]:
    """``items`` in order, cut into runs whose ``sizes`` add up to at most ``limit`` (an item
    bigger than that alone): the items of a mapper, where one per small item would cost more
    than the work of each."""
    runs: list[list[T]] = []
    held = limit + 1
    for item, size in zip(items, sizes, strict=True):
        if held + size > limit:
            runs.append([])
            held = 0
        runs[-1].append(item)
        held += size
    return runs
