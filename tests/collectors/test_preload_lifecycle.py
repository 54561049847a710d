"""The preload's plugins in Dask's own lifecycle: the worker plugin is added through the
worker's public ``plugin_add`` (Dask lists it among the worker's plugins), and a server that
is stopped but never closed leaves no flush thread behind, its rows flushed."""

from __future__ import annotations

import asyncio
import threading

import pytest
from distributed import Scheduler, Worker

from testing.raw_parts import read_raw

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
