"""``dask scheduler|worker --preload collectors.preload``: attach the collectors.

The run folder comes from ``--dask-correlate-run-dir`` or the environment variable
``DASK_CORRELATE_RUN_DIR`` (set by ``collect``); options from ``DASK_CORRELATE_PROFILE``,
``DASK_CORRELATE_FLUSH_INTERVAL`` and ``DASK_CORRELATE_MARKERS``. Without a run folder the
preload does nothing (and says so once in the log).

Without ``collect`` (a batch script starting ``dask scheduler``/``dask worker`` itself) the
scheduler's preload writes ``manifest.json`` (what it cannot know is listed under ``unknown``)
and records its end time at close (``dask_teardown``). ``collect env -o RUN_DIR`` prints the
environment a job script exports for this path, Darshan included.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import click

from collectors.guard import never_raise

logger = logging.getLogger(__name__)

#: manifest written by this process's preload (the scheduler's), finished at teardown
_WRITTEN: dict[str, Any] = {}


@click.command()
@click.option("--dask-correlate-run-dir", default=None, help="run folder to write into")
def dask_setup(server, dask_correlate_run_dir: str | None = None) -> Any:  # noqa: ANN001
    run_dir = dask_correlate_run_dir or os.environ.get("DASK_CORRELATE_RUN_DIR")
    if not run_dir:
        logger.warning("dask-correlate: no run folder (set DASK_CORRELATE_RUN_DIR); "
                       "not recording")
        return None
    from collectors.options import Options, OptionsError

    try:
        opts = Options.from_environment()
    except OptionsError as err:  # set by hand (collect checks its flags): never fail the job
        logger.warning("dask-correlate: %s; not recording", err)
        return None
    from distributed import Scheduler, Worker

    if isinstance(server, Scheduler):
        from collectors.scheduler_plugin import CorrelateSchedulerPlugin

        _write_manifest(Path(run_dir), opts)
        server.add_plugin(CorrelateSchedulerPlugin(run_dir, opts))
        return _register_worker_plugin(server, run_dir, opts)
    elif isinstance(server, Worker):
        from collectors.worker_plugin import CorrelateWorkerPlugin

        # Dask awaits what dask_setup returns once the worker has started: the plugin is added
        # through the worker's public plugin_add, as a client's register_plugin would
        return server.plugin_add(plugin=CorrelateWorkerPlugin(run_dir, opts))
    return None


#: what a worker unpickles from the scheduler's copy of the worker plugin: the collectors where
#: this package is installed, else Dask's no-op WorkerPlugin, so that a worker without it is
#: not kept from starting (an unpicklable plugin fails its registration)
_GUARD = ("__import__('pickle').loads(plugin) "
          "if __import__('importlib.util').util.find_spec('collectors') "
          "and __import__('importlib.util').util.find_spec('collectors.worker_plugin') "
          "else __import__('distributed.diagnostics.plugin').diagnostics.plugin.WorkerPlugin()")


class _Guarded:
    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin

    def __reduce__(self) -> tuple[Any, tuple[str, dict[str, Any]]]:
        import pickle

        return eval, (_GUARD, {"plugin": pickle.dumps(self.plugin)})


async def _register_worker_plugin(scheduler: Any, run_dir: str, opts: Any) -> None:
    """The workers' collectors registered with the scheduler, as a client's
    ``register_plugin`` does: the scheduler's ``worker_plugins`` then list what each worker
    runs (a worker's own preload added them first; the copy it receives when it registers
    takes that one back, see ``CorrelateWorkerPlugin.setup``), and workers started without the
    preload record too. Never fails the scheduler's start."""
    try:
        import pickle

        from collectors.worker_plugin import CorrelateWorkerPlugin

        plugin = CorrelateWorkerPlugin(run_dir, opts)
        await scheduler.register_worker_plugin(None, pickle.dumps(_Guarded(plugin)),
                                               plugin.name, idempotent=True)
    except Exception as err:  # noqa: BLE001 - the job runs on without it
        from collectors.guard import record

        record(err, "register_worker_plugin")


@never_raise
def _write_manifest(run_dir: Path, opts: Any) -> None:
    from collectors import manifest

    written = manifest.start_from_preload(run_dir, opts.manifest())
    if written is not None:
        _WRITTEN.update(run_dir=run_dir, manifest=written)


def dask_teardown(server) -> None:  # noqa: ANN001
    _finish_manifest()


@never_raise
def _finish_manifest() -> None:
    if _WRITTEN:
        from collectors import manifest

        manifest.finish_from_preload(_WRITTEN["run_dir"], _WRITTEN["manifest"])
        _WRITTEN.clear()
