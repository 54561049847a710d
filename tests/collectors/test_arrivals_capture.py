"""Data entering Dask without an execution, as the scheduler plugin records it on a real
LocalCluster: every key a client scatters (directly to the workers, or through the scheduler)
with its worker, size and client; what senders say of it (``collectors.declare_sender``,
``collectors.scatter``); nothing for the keys tasks computed."""

from __future__ import annotations

import numpy as np
import pytest
from distributed import Client, LocalCluster

import collectors
from collectors.api import sender_rank
from testing.raw_parts import read_raw


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


@pytest.mark.cluster
def test_scattered_keys_are_recorded_with_size_worker_client_and_rank(client, tmp_path):
    block = np.ones(1000)  # 8,000 bytes as Dask's sizeof says
    with collectors.record(client, tmp_path / "run") as run:
        assert collectors.declare_sender(client, rank=7) == 7
        direct = client.scatter({"field-0-a": block}, direct=True)
        through = client.scatter({("field-1", 0): block[:10]}, direct=False)
        noted = collectors.scatter(client, {("field-2", 1): block[:100]}, step="s2", rank=3)
        total = client.submit(sum, [direct["field-0-a"].result().sum(), 1]).result()
        assert total == 1001
        assert through and noted
        # the wrapper is in place while recording, and gone once the plugin closed
        assert client.run_on_scheduler(_wrapped)
    assert not client.run_on_scheduler(_wrapped)
    rows = read_raw(run, "scheduler_arrivals").sort("local_time_ns")
    workers = set(client.scheduler_info()["workers"])
    assert rows.select("key", "nbytes", "client").rows() == [
        ("field-0-a", 8000 + _overhead(block), client.id),
        ("('field-1', 0)", 80 + _overhead(block[:10]), client.id),
        ("('field-2', 1)", 800 + _overhead(block[:100]), client.id)]
    assert set(rows["worker"]) <= workers and rows["worker"].null_count() == 0
    # the client's end of its stream to the scheduler: this process's host
    assert all(a.startswith("tcp://127.0.0.1:") for a in rows["client_address"]), rows
    notes = read_raw(run, "sender_notes").sort("local_time_ns")
    assert notes.select("client", "rank", "key", "step").rows() == [
        (client.id, 7, None, None), (client.id, 3, "('field-2', 1)", "s2")]
    assert notes["send_s"][1] > 0


def _overhead(a: np.ndarray) -> int:
    """What Dask's sizeof adds to an array's bytes (its object header)."""
    from dask.sizeof import sizeof

    return sizeof(a) - a.nbytes


def _wrapped(dask_scheduler=None) -> bool:
    return "update_data" in vars(dask_scheduler)


def test_the_rank_comes_from_the_first_variable_set():
    assert sender_rank({}) is None
    assert sender_rank({"PMI_RANK": "2", "SLURM_PROCID": "5"}) == 2
    assert sender_rank({"DASK_CORRELATE_RANK": "4", "PMI_RANK": "2"}) == 4
    assert sender_rank({"PMI_RANK": "x", "OMPI_COMM_WORLD_RANK": "1"}) == 1


@pytest.mark.cluster
def test_an_asynchronous_client_scatters_and_declares_through_the_same_calls(client, tmp_path):
    import asyncio

    async def send() -> tuple:
        async with Client(client.scheduler.address, asynchronous=True) as aclient:
            rank = await collectors.declare_sender(aclient, rank=5)
            futures = await collectors.scatter(aclient, {("field-9", 0): np.ones(10)},
                                               step="a1", rank=5)
            value = await aclient.submit(sum, [futures[("field-9", 0)]])
            return aclient.id, rank, float(value.sum())

    with collectors.record(client, tmp_path / "run") as run:
        aid, rank, total = asyncio.run(send())
    assert (rank, total) == (5, 10.0)
    rows = read_raw(run, "scheduler_arrivals")
    assert rows.select("key", "client").rows() == [("('field-9', 0)", aid)]
    notes = read_raw(run, "sender_notes").sort("local_time_ns")
    assert notes.select("client", "rank", "key", "step").rows() == [
        (aid, 5, None, None), (aid, 5, "('field-9', 0)", "a1")]
    assert notes["send_s"][1] > 0
