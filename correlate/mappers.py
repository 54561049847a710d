"""A *mapper* runs a function over a list of items and yields the results in order: the Darshan
logs of a run, or its per-process attribution partitions. ``local_map`` runs them in this
process; ``correlate.cluster`` has the one that runs them as tasks on a Dask cluster.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], Iterator[Any]]


def local_map(fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
    """``fn`` over ``items`` in this process, in order, two at a time in threads (decoding a
    Darshan log holds the GIL only part of the time; zlib and polars release it): at most two
    results are computed or waiting while the caller uses the one before."""
    with ThreadPoolExecutor(2) as pool:
        pending: deque[Future[Any]] = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) == 2:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
