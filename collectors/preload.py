"""``dask scheduler|worker --preload collectors.preload``: attach the collectors.

The run folder comes from ``--dask-correlate-run-dir`` or the environment variable
``DASK_CORRELATE_RUN_DIR`` (set by ``collect``); options from ``DASK_CORRELATE_PROFILE``,
``DASK_CORRELATE_FLUSH_INTERVAL`` and ``DASK_CORRELATE_MARKERS``. Without a run folder the
preload does nothing (and says so once in the log).
"""

from __future__ import annotations

import logging
import os

import click

logger = logging.getLogger(__name__)


@click.command()
@click.option("--dask-correlate-run-dir", default=None, help="run folder to write into")
def dask_setup(server, dask_correlate_run_dir: str | None = None) -> None:  # noqa: ANN001
    run_dir = dask_correlate_run_dir or os.environ.get("DASK_CORRELATE_RUN_DIR")
    if not run_dir:
        logger.warning("dask-correlate: no run folder (set DASK_CORRELATE_RUN_DIR); "
                       "not recording")
        return
    interval = float(os.environ.get("DASK_CORRELATE_FLUSH_INTERVAL", "5"))
    from distributed import Scheduler, Worker

    if isinstance(server, Scheduler):
        from collectors.scheduler_plugin import CorrelateSchedulerPlugin

        server.add_plugin(CorrelateSchedulerPlugin(run_dir, flush_interval=interval))
    elif isinstance(server, Worker):
        from collectors.worker_plugin import CorrelateWorkerPlugin

        plugin = CorrelateWorkerPlugin(
            run_dir, profile=os.environ.get("DASK_CORRELATE_PROFILE", "sample"),
            flush_interval=interval, markers=os.environ.get("DASK_CORRELATE_MARKERS") == "1")
        server._pending_plugins = (*getattr(server, "_pending_plugins", ()), plugin)
