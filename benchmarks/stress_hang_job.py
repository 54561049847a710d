"""The job of ``stress_hang.py``: what made the collectors hang a worker (CPython gh-106883),
on purpose. A LocalCluster of 2 worker processes x 2 threads whose workers have a gc callback
that gives the GIL away (as distributed's GCDiagnosis does when psutil reads /proc) and run
Dask's own profiler every millisecond; tasks that allocate (collections every few calls) and
call ``sys._current_frames()`` (as watchdogs and some libraries do); 2,000 short tasks, and a
P2P shuffle. With ``STRESS_UNGUARDED=1`` each worker takes the collectors' guard off again
(the control: what the job does without it). Prints the seconds it took."""

from __future__ import annotations

import os
import sys
import time


def _gc_callback_that_releases_the_gil(dask_worker=None) -> None:  # noqa: ANN001
    import gc

    def give_away(phase: str, info: dict) -> None:
        time.sleep(0.0001)

    gc.callbacks.append(give_away)
    gc.set_threshold(100, 10, 10)  # collections every hundred allocations: many chances


def _unguard(dask_worker=None) -> None:  # noqa: ANN001
    from collectors import frames_guard

    frames_guard.uninstall()


def churn(i: int) -> int:
    """GC-heavy: containers that survive a few collections; samples stacks now and then."""
    junk = [[{} for _ in range(8)] for _ in range(200)]
    for _ in range(5):
        sys._current_frames()
    return len(junk) + i


def main() -> None:
    import dask
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    dask.config.set({"distributed.worker.profile.interval": "1ms",
                     "distributed.worker.profile.cycle": "100ms"})
    t0 = time.monotonic()
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(_gc_callback_that_releases_the_gil)
        if os.environ.get("STRESS_UNGUARDED") == "1":
            client.run(_unguard)
        total = sum(client.gather(client.map(churn, range(4000))))
        assert total > 0
        df = dd.from_pandas(pd.DataFrame({"k": range(20_000), "v": range(20_000)}),
                            npartitions=16)
        with dask.config.set({"dataframe.shuffle.method": "p2p"}):
            n = len(df.shuffle("k").persist())
        assert n == 20_000
    print(f"seconds {time.monotonic() - t0:.1f}", flush=True)


if __name__ == "__main__":
    main()
