"""Attach the collectors to an existing ``Client`` (notebooks):

    with collectors.record(client, "runs/nb", profile="sample"):
        result = big_computation.compute()

Options are checked before anything is started or written: an unknown profile or a bad flush
interval raises ``collectors.options.OptionsError`` here. Registers the scheduler and worker
plugins on the running cluster, writes the manifest, and on
exit unregisters them (each process flushes and writes ``closed.json``) and finalises the
manifest. Darshan cannot be attached to processes that are already running; start the cluster
under ``collect`` for I/O traces.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from collectors import manifest
from collectors.options import DEFAULTS, Options


@contextlib.contextmanager
def record(client: Any, out: str | Path, *, profile: str = DEFAULTS.profile,
           flush_interval: float = DEFAULTS.flush_interval) -> Iterator[Path]:
    opts = Options(profile=profile, flush_interval=flush_interval, darshan="off", dxt=None,
                   dxt_segments=None)
    from collectors.scheduler_plugin import CorrelateSchedulerPlugin
    from collectors.worker_plugin import CorrelateWorkerPlugin

    run_dir = Path(out).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    info = manifest.start(run_dir, command=[sys.executable, "<notebook>"], options=opts.manifest(),
        darshan={"runtime": None, "reason": "attached to a running cluster (Python API)"})
    sched = CorrelateSchedulerPlugin(str(run_dir), opts)
    work = CorrelateWorkerPlugin(str(run_dir), opts)
    client.register_plugin(sched)
    client.register_plugin(work)
    code = 0
    try:
        yield run_dir
    except BaseException:
        code = 1
        raise
    finally:
        client.unregister_worker_plugin(work.name)
        client.run_on_scheduler(_close_scheduler_plugin, sched.name)
        manifest.finish(run_dir, info, code)


def _close_scheduler_plugin(name: str, dask_scheduler: Any = None) -> None:
    plugin = dask_scheduler.plugins.pop(name, None)
    if plugin is not None:
        plugin.close_sink()
