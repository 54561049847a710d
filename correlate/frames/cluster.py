"""Running correlate's partitions on a Dask cluster (``correlate RUN --cluster ADDRESS``).

``--cluster tcp://host:8786`` connects to a running scheduler; ``--cluster local`` or
``local:N`` starts a LocalCluster of N single-threaded worker processes (default 2) for this run
only. Connecting waits Dask's ``distributed.comm.timeouts.connect`` (30 s by default). Items and results travel as pickled polars frames; the work is the same functions that run
in-process, so the outputs are identical.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from correlate.errors import CorrelateError
from correlate.frames.mappers import Mapper, local_map


def _parse_local(spec: str) -> int | None:
    if spec == "local":
        return 2
    if spec.startswith("local:") and spec[6:].isdigit() and int(spec[6:]) > 0:
        return int(spec[6:])
    return None


@contextmanager
def mapper_for(spec: str | None) -> Iterator[Mapper]:
    """A mapper for ``--cluster SPEC`` (``None``: this process)."""
    if not spec:
        yield local_map
        return
    from distributed import Client, LocalCluster

    n = _parse_local(spec)
    cluster = None
    try:
        if n is not None:
            # no dashboard; the scheduler's HTTP routes (health, metrics) on a free port, not
            # on 8787, where the user's own cluster may have its dashboard
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   dashboard_address=None,
                                   scheduler_kwargs={"dashboard_address": ":0"})
            client = Client(cluster)
        else:
            import dask

            client = Client(spec, timeout=dask.config.get("distributed.comm.timeouts.connect"))
    except OSError as err:
        if cluster is not None:
            cluster.close()
        raise CorrelateError(None, f"cannot reach the Dask cluster at {spec}: {err}") from None
    try:
        yield _dask_map(client)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _dask_map(client: Any) -> Mapper:
    def dask_map(fn: Callable[[Any], Any], items: Sequence[Any], at_once: int = 2
                 ) -> Iterator[Any]:
        """Results in order, at most two items per worker thread on the cluster at a time
        (``at_once`` applies to this process only: one item run here). Each item is sent
        straight to a worker (scattered), not in the task: a graph holding every item was
        pickled whole in the scheduler's process (this one, for ``local``) and Dask warned of
        its size."""
        if len(items) <= 1:  # nothing to spread: skip the round trip
            yield from local_map(fn, items, at_once)
            return
        window = max(2, 2 * sum(client.nthreads().values()))
        pending: deque[tuple[Any, Any]] = deque()

        def oldest() -> Any:
            future, data = pending.popleft()
            try:
                return future.result()
            finally:  # (each result and item leaves the cluster once read)
                future.release()
                data.release()

        for item in items:
            (data,) = client.scatter([item], direct=True, hash=False)  # (an item may be a list)
            pending.append((client.submit(fn, data, pure=False), data))
            if len(pending) >= window:
                yield oldest()
        while pending:
            yield oldest()

    return dask_map
