"""Attach the collectors to an existing ``Client`` (notebooks):

    with collectors.record(client, "runs/nb", profile="sample"):
        result = big_computation.compute()

Options are checked before anything is started or written: an unknown profile or a bad flush
interval raises ``collectors.options.OptionsError`` here. Registers the scheduler and worker
plugins on the running cluster, writes the manifest, and on
exit unregisters them (each process flushes and closes its proc.json) and finalises the
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


#: where a sender's rank is read from when not given: ours first, then what MPI launchers and
#: Slurm set in each rank's environment (MPICH/Hydra, PMIx, Open MPI, srun)
RANK_VARIABLES = ("DASK_CORRELATE_RANK", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK",
                  "SLURM_PROCID")


def sender_rank(environ: Any = None) -> int | None:
    """The rank this process sends data as: the first of ``RANK_VARIABLES`` set to an integer
    (None: none is)."""
    import os

    env = os.environ if environ is None else environ
    for name in RANK_VARIABLES:
        value = env.get(name)
        if value is not None and value.strip().lstrip("-").isdigit():
            return int(value)
    return None


def declare_sender(client: Any, rank: int | None = None) -> Any:
    """Tell the recorded run that the data ``client`` scatters comes from ``rank`` (default:
    ``sender_rank()``). Once per client, before or after its scatters; one event through the
    scheduler (``client.log_event``). Returns the rank said (None: none known, nothing sent);
    with an asynchronous client, an awaitable of it. Never raises: a failure to tell is a
    warning, the job goes on."""
    rank = sender_rank() if rank is None else int(rank)
    told = _tell(client, {"client": client.id, "rank": rank}) if rank is not None else None
    if getattr(client, "asynchronous", False):
        return _then(told, rank)
    return rank


def scatter(client: Any, data: Any, *, step: Any = None, rank: int | None = None,
            **kwargs: Any) -> Any:
    """``client.scatter(data, **kwargs)``, then one event telling the recorded run the keys it
    sent, their ``step`` (any value, kept as text; default: the keys' Dask task group), the
    sender's ``rank`` (default: ``sender_rank()``) and how long the scatter call took on this
    client's clock. Returns what ``client.scatter`` returns; with an asynchronous client, an
    awaitable of it (``await collectors.scatter(client, data)``)."""
    import time

    if getattr(client, "asynchronous", False):
        return _scatter_async(client, data, step, rank, kwargs)
    t0 = time.perf_counter()
    futures = client.scatter(data, **kwargs)
    _tell(client, _sent(client, futures, step, rank, time.perf_counter() - t0))
    return futures


async def _scatter_async(client: Any, data: Any, step: Any, rank: int | None,
                         kwargs: dict[str, Any]) -> Any:
    import time

    t0 = time.perf_counter()
    futures = await client.scatter(data, **kwargs)
    await _then(_tell(client, _sent(client, futures, step, rank, time.perf_counter() - t0)),
                None)
    return futures


def _sent(client: Any, futures: Any, step: Any, rank: int | None, send_s: float
          ) -> dict[str, Any]:
    from correlate.frames.keys import key_str

    found = (futures.values() if isinstance(futures, dict)
             else futures if isinstance(futures, (list, tuple, set)) else [futures])
    return {"client": client.id, "rank": sender_rank() if rank is None else int(rank),
            "keys": [key_str(f.key) for f in found if hasattr(f, "key")],
            "step": None if step is None else str(step), "send_s": send_s}


def _tell(client: Any, msg: dict[str, Any]) -> Any:
    """``client.log_event`` of ``msg`` (an asynchronous client's: its awaitable)."""
    from collectors.scheduler_plugin import SENDER_TOPIC

    try:
        return client.log_event(SENDER_TOPIC, msg)
    except Exception as err:  # (the data was sent: only the note about it is lost)
        _warn(err)
        return None


async def _then(told: Any, value: Any) -> Any:
    """``value`` once an asynchronous client's event has been told (a failure is a
    warning)."""
    if told is not None:
        try:
            await told
        except Exception as err:  # noqa: BLE001 - the data was sent: only the note is lost
            _warn(err)
    return value


def _warn(err: Exception) -> None:
    import warnings

    warnings.warn(f"dask-correlate: could not tell the scheduler about the sender "
                  f"({type(err).__name__}: {err})", stacklevel=4)
