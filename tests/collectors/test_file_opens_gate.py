"""The file-open audit hook is added only where Darshan traces the worker (its evidence serves
Darshan's I/O alone; the hook runs for every audited event of the process)."""

from __future__ import annotations

import pytest

from testing.raw_parts import read_raw

pytestmark = pytest.mark.cluster


def _open_a_file(path: str) -> int:
    with open(path, "rb") as fh:
        return len(fh.read())


def _hook_installed() -> bool:
    from collectors import file_opens

    return file_opens._installed


@pytest.mark.parametrize("preload", [None, "/nonexistent/lib/libdarshan.so"])
def test_opens_are_recorded_only_in_workers_that_preload_darshan(tmp_path, monkeypatch,
                                                                 preload):
    from distributed import Client, LocalCluster

    import collectors

    data = tmp_path / "data.bin"
    data.write_bytes(b"x" * 100)
    if preload is not None:  # (the loader says it cannot preload it, and goes on)
        monkeypatch.setenv("LD_PRELOAD", preload)
    else:
        monkeypatch.delenv("LD_PRELOAD", raising=False)
    run = tmp_path / "run"
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        with collectors.record(client, run, profile="off"):
            assert client.gather(client.map(_open_a_file, [str(data)] * 4, pure=False)) == [
                100] * 4
            installed = set(client.run(_hook_installed).values())
    assert read_raw(run, "task_executions").height == 4
    opened = (read_raw(run, "task_file_opens") if list(run.glob("procs/*/task_file_opens*"))
              else None)
    if preload is None:
        assert installed == {False} and opened is None
    else:
        assert installed == {True}
        assert opened is not None and opened.filter(
            opened["path"] == str(data)).height == 4
