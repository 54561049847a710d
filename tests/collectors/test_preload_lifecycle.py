"""The preload's plugins in Dask's own lifecycle: the worker plugin is added through the
worker's public ``plugin_add`` (Dask lists it among the worker's plugins), and a server that
is stopped but never closed leaves no flush thread behind, its rows flushed."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from distributed import Scheduler, Worker

from testing.raw_parts import closing_records, read_raw

pytestmark = pytest.mark.cluster


def flush_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "dask-correlate-flush"]


def test_stopped_servers_leave_no_flush_thread_and_the_worker_lists_its_plugin(
        tmp_path, monkeypatch):
    monkeypatch.setenv("DASK_CORRELATE_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("DASK_CORRELATE_PROFILE", "off")

    async def main() -> None:
        before = len(flush_threads())
        s = await Scheduler(dashboard_address=":0", preload=["collectors.preload"])
        w = await Worker(s.address, nthreads=1, preload=["collectors.preload"])
        assert "dask-correlate-worker" in w.plugins
        assert len(flush_threads()) == before + 2
        w.stop()
        s.stop()
        assert len(flush_threads()) == before
        await w.close()
        await s.close()

    asyncio.run(main())
    # the rows gathered until the stop were flushed
    assert read_raw(tmp_path / "run", "cluster_events").height >= 1


def test_the_schedulers_view_of_worker_plugins_matches_each_workers(tmp_path, monkeypatch):
    """The scheduler's preload registers the workers' collectors with it (as a client's
    register_plugin would): a preloaded worker keeps the collectors its own preload started
    (one folder, not two) under that name, a worker started without the preload records too,
    and plugins a client adds and removes leave both views equal (Dask's own
    test_remove_with_client)."""
    run = tmp_path / "run"
    monkeypatch.setenv("DASK_CORRELATE_RUN_DIR", str(run))
    monkeypatch.setenv("DASK_CORRELATE_PROFILE", "off")
    from distributed import Client
    from distributed.diagnostics.plugin import WorkerPlugin

    class Mine(WorkerPlugin):
        pass

    async def main() -> None:
        s = await Scheduler(dashboard_address=":0", preload=["collectors.preload"])
        assert "dask-correlate-worker" in s.worker_plugins
        w = await Worker(s.address, nthreads=2, preload=["collectors.preload"])
        bare = await Worker(s.address, nthreads=2)
        assert set(w.plugins) == set(bare.plugins) == set(s.worker_plugins)
        async with Client(s.address, asynchronous=True) as c:
            await c.register_plugin(Mine(), name="mine")
            assert set(w.plugins) == set(s.worker_plugins)
            await c.unregister_worker_plugin("mine")
            assert set(w.plugins) == set(s.worker_plugins)
            futures = [c.submit(pow, i, 2, workers=[x.address], pure=False) for i in range(8)
                       for x in (w, bare)]
            assert len(await c.gather(futures)) == 16
        await w.close()
        await bare.close()
        await s.close()

    asyncio.run(main())
    folders = sorted(p.name.split("-")[0] for p in (run / "procs").iterdir())
    assert folders == ["scheduler", "worker", "worker"]
    assert len(closing_records(run)) == 3
    ex = read_raw(run, "task_executions")
    assert ex.height == 16


def test_unregistering_the_collectors_closes_them(tmp_path, monkeypatch):
    run = tmp_path / "run"
    monkeypatch.setenv("DASK_CORRELATE_RUN_DIR", str(run))
    monkeypatch.setenv("DASK_CORRELATE_PROFILE", "off")
    from distributed import Client

    async def main() -> None:
        s = await Scheduler(dashboard_address=":0", preload=["collectors.preload"])
        w = await Worker(s.address, nthreads=1, preload=["collectors.preload"])
        async with Client(s.address, asynchronous=True) as c:
            assert await c.submit(pow, 3, 2) == 9
            await c.unregister_worker_plugin("dask-correlate-worker")
            await asyncio.sleep(0.2)
            assert "dask-correlate-worker" not in w.plugins
            assert len(closing_records(run, "worker-*")) == 1
            assert await c.submit(pow, 4, 2) == 16  # the worker runs on, unrecorded
        await w.close()
        await s.close()

    asyncio.run(main())
    assert read_raw(run, "task_executions").height == 1


def test_a_worker_without_the_collectors_unpickles_a_no_op_plugin():
    """The scheduler's copy of the worker plugin, unpickled where this package is not
    installed, is Dask's no-op WorkerPlugin: such a worker still starts."""
    import pickle
    import subprocess
    import sys

    from collectors.preload import _Guarded
    from collectors.worker_plugin import CorrelateWorkerPlugin

    data = pickle.dumps(_Guarded(CorrelateWorkerPlugin("/nowhere")))
    assert type(pickle.loads(data)) is CorrelateWorkerPlugin
    without = "\n".join([
        "import sys, pickle, importlib.util",
        "sys.meta_path = [f for f in sys.meta_path if 'editable' not in repr(f)]",
        # the checkout itself leaves the path (not the virtual environment inside it)
        "sys.path = [p for p in sys.path if p.rstrip('/') != sys.argv[1]]",
        "assert importlib.util.find_spec('collectors') is None",
        "print(type(pickle.loads(sys.stdin.buffer.read())).__name__)"])
    import collectors

    repo = str(Path(collectors.__file__).parents[1])
    out = subprocess.run([sys.executable, "-c", without, repo], input=data, capture_output=True,
                         env={}, cwd="/", check=True).stdout
    assert out.decode().strip() == "WorkerPlugin"


def test_a_worker_whose_options_differ_from_the_schedulers_keeps_its_own_collectors(
        tmp_path, monkeypatch):
    """A worker's options come from its own environment (its Darshan preload sets the
    markers): the scheduler's copy, with the scheduler's options, still takes the worker's
    running collectors back, so the worker has one folder and every execution is timed (two
    copies undid each other's executor wrapper: no execution at all)."""
    run = tmp_path / "run"
    monkeypatch.setenv("DASK_CORRELATE_RUN_DIR", str(run))
    monkeypatch.setenv("DASK_CORRELATE_PROFILE", "off")
    from distributed import Client

    async def main() -> None:
        s = await Scheduler(dashboard_address=":0", preload=["collectors.preload"])
        monkeypatch.setenv("DASK_CORRELATE_MARKERS", "1")  # as Darshan's environment sets it
        monkeypatch.setenv("DASK_CORRELATE_DXT", "on")
        w = await Worker(s.address, nthreads=2, preload=["collectors.preload"])
        async with Client(s.address, asynchronous=True) as c:
            futures = [c.submit(pow, i, 2, pure=False) for i in range(8)]
            assert len(await c.gather(futures)) == 8
        await w.close()
        await s.close()

    asyncio.run(main())
    folders = sorted(p.name.split("-")[0] for p in (run / "procs").iterdir())
    assert folders == ["scheduler", "worker"]
    assert read_raw(run, "task_executions").height == 8
