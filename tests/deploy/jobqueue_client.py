"""dask-jobqueue's LocalCluster (the same machinery as its PBSCluster/SLURMCluster): the
scheduler runs in this process, the workers are real processes started from the job script
dask-jobqueue generates. Its local "queue" runs that script's command without a shell, in this
process's environment (a prologue would break it: it splits the whole script into one command),
so `collect env`'s variables are set by the caller here; on PBS or Slurm the job script's
prologue sets them: the PBSCluster script with that prologue is written to RUN_DIR/pbs_job.sh.

    python jobqueue_client.py RUN_DIR TRUTH DATA_DIR   (with `collect env`'s variables set)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import client as graph_module  # the workers import it too: PYTHONPATH holds tests/deploy


def main(run: str, truth: str, data: str) -> None:
    from dask_jobqueue import PBSCluster
    from dask_jobqueue.local import LocalCluster
    from distributed import Client

    from collectors.sink import closing_record

    local = {"scheduler_options": {"host": "127.0.0.1", "dashboard_address": None}}
    with PBSCluster(cores=4, processes=2, memory="2GiB", **local,
                    job_script_prologue=[f'eval "$(collect env -o {run})"']) as pbs:
        Path(run, "pbs_job.sh").write_text(pbs.job_script())  # never submitted
    with LocalCluster(cores=4, processes=2, memory="2GiB", **local,
                      worker_extra_args=["--host", "127.0.0.1"]) as cluster:
        cluster.scale(jobs=1)
        with Client(cluster) as c:
            c.wait_for_workers(2, timeout=60)
            results = graph_module.graph(c, data)
            Path(truth).write_text(json.dumps(results))
            # a clean close (each worker closes its proc.json) before the local "queue" cancels
            # the job with SIGKILL: retire the workers once the scheduler holds no data
            del results
            deadline = time.monotonic() + 30
            while c.run_on_scheduler(_tasks) and time.monotonic() < deadline:
                time.sleep(0.05)
            c.retire_workers(close_workers=True)
            while (sum(closing_record(d) is not None for d in Path(run).glob("procs/worker-*"))
                   < 2
                   and time.monotonic() < deadline):
                time.sleep(0.05)


def _tasks(dask_scheduler) -> int:  # noqa: ANN001
    return len(dask_scheduler.tasks)


if __name__ == "__main__":
    main(*sys.argv[1:4])
