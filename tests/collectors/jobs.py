"""Dask jobs run under `collect` by the collector tests. Each task reports what it observed
itself (thread id, its own time.time() and thread_time() readings); the job writes that truth
to JSON next to the run folder."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path


def _observed(key: str, **extra):
    return {"key": key, "thread": threading.get_ident(), "pid": os.getpid(), **extra}


def distinctive_cpu_burner(seconds: float) -> int:
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < seconds:
        x += 1
    return x


def burn(key: str, seconds: float):
    w0, c0 = time.time(), time.thread_time()
    distinctive_cpu_burner(seconds)
    c1, w1 = time.thread_time(), time.time()
    return _observed(key, wall=(w0, w1), cpu=c1 - c0)


def nap(key: str, seconds: float):
    w0, c0 = time.time(), time.thread_time()
    time.sleep(seconds)
    c1, w1 = time.thread_time(), time.time()
    return _observed(key, wall=(w0, w1), cpu=c1 - c0)


def make_block(key: str, nbytes: int):
    return b"x" * nbytes


def consume(key: str, block: bytes):
    return _observed(key, wall=(time.time(), time.time()), cpu=0.0, got=len(block))


def cluster_job(truth_path: str) -> None:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=4, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        workers = sorted(client.scheduler_info()["workers"])
        futures = [client.submit(burn, f"burn-{i}", 0.2 + 0.05 * i, key=f"burn-{i}")
                   for i in range(4)]
        futures += [client.submit(nap, f"nap-{i}", 0.15, key=f"nap-{i}") for i in range(4)]
        block = client.submit(make_block, "block-0", 3_000_000, key="block-0",
                              workers=[workers[0]])
        futures.append(client.submit(consume, "consume-0", block, key="consume-0",
                                     workers=[workers[1]]))
        results = client.gather(futures)
    Path(truth_path).write_text(json.dumps(results))


def io_task(key: str, folder: str, chunks: list[int]):
    """Write a file in known chunks, read it back in 8 KiB preads until EOF; record every call
    (what a DXT trace must show)."""
    ops, path = [], os.path.join(folder, f"{key}.bin")
    c0 = time.thread_time()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    offset = 0
    for n in chunks:
        t0 = time.time()
        os.write(fd, b"w" * n)
        ops.append(("write", offset, n, t0, time.time()))
        offset += n
        time.sleep(0.001)
    os.close(fd)
    fd = os.open(path, os.O_RDONLY)
    offset = 0
    while True:
        t0 = time.time()
        data = os.pread(fd, 8192, offset)
        ops.append(("read", offset, len(data), t0, time.time()))
        offset += len(data)
        if not data:
            break
    os.close(fd)
    return _observed(key, path=path, ops=ops, cpu=time.thread_time() - c0)


def _io_tasks(client, folder: str) -> list:
    return [client.submit(io_task, f"io-{i}", folder,
                          [16384 + 4096 * ((i * 7 + j) % 7) for j in range(10 + i % 5)],
                          key=f"io-{i}", pure=False) for i in range(16)]


def io_job(args: str) -> None:
    truth_path, folder = args.split(",")
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=4, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        fs = _io_tasks(client, folder)
        fs += [client.submit(burn, f"burn-{i}", 0.05 + 0.02 * i, key=f"burn-{i}")
               for i in range(6)]
        fs += [client.submit(nap, f"nap-{i}", 0.1, key=f"nap-{i}") for i in range(6)]
        results = client.gather(fs)
    Path(truth_path).write_text(json.dumps(results))


def marked_task(key: str, folder: str, seconds: float, sleep: bool):
    """Burn CPU or sleep between two small writes of its own file, one as it starts and one as
    it ends (every task leaves I/O on its own thread); record both calls."""
    ops, path = [], os.path.join(folder, f"{key}.mark")
    c0 = time.thread_time()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for offset in (0, 512):
        t0 = time.time()
        os.write(fd, b"m" * 512)
        ops.append(("write", offset, 512, t0, time.time()))
        if not offset:
            time.sleep(seconds) if sleep else distinctive_cpu_burner(seconds)
    os.close(fd)
    return _observed(key, path=path, ops=ops, cpu=time.thread_time() - c0)


def io_every_job(args: str) -> None:
    """``io_job`` where the CPU and sleep tasks also write at their start and end: every
    execution leaves I/O on its own thread (thread inference has evidence for each)."""
    truth_path, folder = args.split(",")
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=4, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        fs = _io_tasks(client, folder)
        fs += [client.submit(marked_task, f"burn-{i}", folder, 0.05 + 0.02 * i, False,
                             key=f"burn-{i}") for i in range(6)]
        fs += [client.submit(marked_task, f"nap-{i}", folder, 0.1, True, key=f"nap-{i}")
               for i in range(6)]
        results = client.gather(fs)
    Path(truth_path).write_text(json.dumps(results))


def die_once(marker: str) -> int:
    if not os.path.exists(marker):
        Path(marker).write_text("killed")
        os.kill(os.getpid(), signal.SIGKILL)
    return 1


def kill_job(marker: str) -> None:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=4, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        done = client.gather([client.submit(nap, f"early-{i}", 0.05, key=f"early-{i}")
                              for i in range(6)])
        assert len(done) == 6
        time.sleep(1.5)  # > 2 flush intervals: the early tasks are on disk
        client.submit(die_once, marker, key="die-once").result()


def parquet_job(args: str) -> None:
    """16 parquet files read by ``dd.read_parquet`` (pyarrow reads the footer on the executor
    thread, the pages on its own I/O threads) on 2 workers × 4 threads, then a groupby-mean."""
    truth_path, folder = args.split(",")
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd
    from distributed import Client, LocalCluster

    files = []
    for i in range(16):
        rng = np.random.default_rng(i)
        rows = 20_000 + 1_000 * i
        path = os.path.join(folder, f"part-{i:03d}.parquet")
        pd.DataFrame({"g": rng.integers(0, 20, rows), "x": rng.random(rows)}).to_parquet(
            path, row_group_size=rows // 4)
        files.append(path)
    with LocalCluster(n_workers=2, threads_per_worker=4, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        dd.read_parquet(folder).groupby("g").x.mean().compute()
    Path(truth_path).write_text(json.dumps({"files": files}))


def _probe_chunk_opens(folder: str) -> None:
    """The test's own record of which thread opens each chunk file (a real Darshan would see
    the read on that thread), independent of the collector. (The list lives on a module the
    worker imported: this function arrives pickled by value, with globals of its own.)"""
    import builtins

    seen = builtins._chunk_opens = []

    def hook(event, args):
        if event == "open" and isinstance(args[0], str) and args[0].startswith(folder):
            seen.append((os.getpid(), threading.get_ident(), args[0], time.time_ns()))
    sys.addaudithook(hook)


def _chunk_opens() -> list:
    import builtins

    return list(builtins._chunk_opens)


def zarr_job(args: str) -> None:
    """A zarr 3 array of 8 × 8 uncompressed chunks summed by ``da.from_zarr`` on 2 workers × 2
    threads: zarr reads every chunk on its own I/O thread, the executor thread touches none."""
    truth_path, folder = args.split(",")
    import dask.array as da
    import numpy as np
    import zarr
    from distributed import Client, LocalCluster

    store = os.path.join(folder, "a.zarr")
    z = zarr.create_array(store=store, shape=(512, 512), chunks=(64, 64), dtype="f8",
                          compressors=None)
    z[:] = np.arange(512 * 512, dtype="f8").reshape(512, 512)
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(_probe_chunk_opens, os.path.join(store, "c"))
        total = da.from_zarr(store).sum().compute()
        opens = [o for got in client.run(_chunk_opens).values() for o in got]
    Path(truth_path).write_text(json.dumps({"sum": float(total), "opens": opens}))


async def coro_task(key: str, folder: str, i: int):
    """An ``async def`` task: three rounds of CPU work and a 32 KiB write to its own file,
    each followed by an await that lets the loop run other coroutines; records every write
    and its own CPU (the thread CPU of its running pieces, not of the awaits)."""
    import asyncio

    ops, cpu, path = [], 0.0, os.path.join(folder, f"{key}.bin")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for k in range(3):
            c0 = time.thread_time()
            distinctive_cpu_burner(0.002 + 0.0005 * (i % 4))
            t0 = time.time()
            os.pwrite(fd, b"c" * (32768 + 1024 * i), k * 65536)
            ops.append(("write", k * 65536, 32768 + 1024 * i, t0, time.time()))
            cpu += time.thread_time() - c0
            await asyncio.sleep(0.004 + 0.001 * (i % 3))
    finally:
        os.close(fd)
    return _observed(key, path=path, ops=ops, cpu=cpu)


def coro_job(args: str) -> None:
    """16 coroutine tasks interleaving on the event loops of 2 workers × 2 threads, beside 8
    thread tasks doing file I/O."""
    truth_path, folder = args.split(",")
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        fs = [client.submit(coro_task, f"coro-{i}", folder, i, key=f"coro-{i}", pure=False)
              for i in range(16)]
        fs += [client.submit(io_task, f"io-{i}", folder, [20000 + 1000 * i] * 3,
                             key=f"io-{i}", pure=False) for i in range(8)]
        results = client.gather(fs)
    Path(truth_path).write_text(json.dumps(results))


SPILL_KEYS = [("make-spill", i) for i in range(14)] + ["spill me/ü#1", "spill%20two"]


def _probe_spill() -> None:
    """The test's own record of every spill file Dask's store (zict.File) writes and reads:
    path, thread, size and time (what a Darshan trace holds), independent of the collector."""
    import builtins

    import zict

    seen = builtins._spill_io = []
    write, read = zict.File.__setitem__, zict.File.__getitem__

    def record(self, key, op, t0, t1):
        path = os.path.join(self.directory, self.filenames[key])
        seen.append((os.getpid(), threading.get_ident(), path, op, os.path.getsize(path),
                     t0, t1, str(key)))

    def setitem(self, key, value):
        t0 = time.time()
        write(self, key, value)
        record(self, key, "write", t0, time.time())

    def getitem(self, key):
        t0 = time.time()
        value = read(self, key)
        record(self, key, "read", t0, time.time())
        return value

    zict.File.__setitem__, zict.File.__getitem__ = setitem, getitem


def _spill_seen() -> list:
    import builtins

    return list(builtins._spill_io)


def make_block_mib(i: int, mib: int):
    import numpy as np

    return np.full(mib * 131072, float(i))


def total(*blocks) -> float:
    return float(sum(b.sum() for b in blocks))


def spill_job(args: str) -> None:
    """16 results of 8 MiB on 2 workers × 2 threads with a 400 MB memory limit and low spill
    thresholds (tuple keys and string keys that need quoting), then sums that read them back."""
    import dask
    from distributed import Client, LocalCluster, wait

    truth_path, _folder = args.split(",")
    memory = {"distributed.worker.memory.target": 0.2, "distributed.worker.memory.spill": 0.25,
              "distributed.worker.memory.pause": False,
              "distributed.worker.memory.terminate": False}
    with dask.config.set(memory), LocalCluster(
            n_workers=2, threads_per_worker=2, processes=True, memory_limit="400MB",
            dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(_probe_spill)
        parts = [client.submit(make_block_mib, i, 8, key=k) for i, k in enumerate(SPILL_KEYS)]
        wait(parts)
        time.sleep(1.0)  # the memory monitor spills what is above the target
        sums = [client.submit(total, *parts[j:j + 4], key=f"total-{j}")
                for j in range(0, len(parts), 4)]
        client.gather(sums)
        del parts, sums  # released: nothing left to spill before the record is read
        while any(client.run(lambda dask_worker: len(dask_worker.data)).values()):
            time.sleep(0.05)
        seen = [row for rows in client.run(_spill_seen).values() for row in rows]
    Path(truth_path).write_text(json.dumps({"spill": seen}))


def many_functions(i: int) -> int:
    """Calls a hundred functions made anew for this execution (and kept alive, so that no
    code object is reused): each execution leaves a hundred new functions in Yappi's tables,
    whatever its tag, so Yappi's memory grows with the executions (this function is sent by
    value)."""
    import types

    made = types.ModuleType(f"_many_functions_{i}")
    exec("".join(f"def f{k}(x):\n    return x + {k}\n" for k in range(100)), made.__dict__)
    sys.modules[made.__name__] = made
    return sum(getattr(made, f"f{k}")(i) for k in range(100))


def profile_budget_job(truth_path: str) -> None:
    """Workers of a 100 MB memory limit (Dask's own pause, spill and terminate off): the
    collectors give Yappi a tenth of it, which these executions' new functions exceed."""
    import dask
    from distributed import Client, LocalCluster

    memory = {"distributed.worker.memory.target": False, "distributed.worker.memory.spill": False,
              "distributed.worker.memory.pause": False,
              "distributed.worker.memory.terminate": False}
    with dask.config.set(memory), LocalCluster(
            n_workers=2, threads_per_worker=2, processes=True, memory_limit="100MB",
            dashboard_address=None) as cluster, Client(cluster) as client:
        for batch in range(10):
            client.gather(client.map(many_functions, range(batch * 150, (batch + 1) * 150)))
            time.sleep(0.1)
    Path(truth_path).write_text(json.dumps({"batches": 10}))


def raise_on(i: int) -> bytes:
    if i % 2:
        raise ValueError(f"odd input {i}")
    return b"x" * i


def flaky_once(marker: str) -> int:
    """Raises on its first run only: retried (``retries=1``), the task ends in memory."""
    if not os.path.exists(marker):
        Path(marker).write_text("raised")
        raise RuntimeError("first try fails")
    return 1


def fail_job(truth_path: str) -> None:
    """4 of 8 ``raise_on`` tasks raise; each has a ``consume`` task that depends on it; a
    retried task succeeds the second time; the job then exits with code 3. The truth: the
    keys that raised and those that erred with them."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        roots = client.map(raise_on, range(8), key=[f"raise_on-{i}" for i in range(8)])
        leaves = [client.submit(consume, f"consume-{i}", r, key=f"consume-{i}")
                  for i, r in enumerate(roots)]
        flaky = client.submit(flaky_once, truth_path + ".flaky", key="flaky_once-0", retries=1)
        flaky.result()
        client.gather(leaves, errors="skip")
        raised = [f"raise_on-{i}" for i in range(1, 8, 2)]
        Path(truth_path).write_text(json.dumps({
            "raised": raised, "erred": raised + [f"consume-{i}" for i in range(1, 8, 2)]}))
    sys.exit(3)


def stuck(key: str, folder: str) -> None:
    """Says it started (a file named by its key), then runs until the job is killed."""
    Path(folder, key).write_text("started")
    time.sleep(600)


def stuck_job(folder: str) -> None:
    """Killed while it runs: 3 ``stuck`` tasks on 1 worker × 2 threads, 2 of them executing
    (the test kills the job once they said so), the third waiting for a thread."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.gather([client.submit(stuck, f"stuck-{i}", folder, key=f"stuck-{i}")
                       for i in range(3)])


def _probe_p2p() -> None:
    """The test's own record of the P2P shuffle's disk buffer (``DiskShardsBuffer``): every
    shard write (path, thread, bytes, time), every partition read back (and whether the run
    reads it through a memory map, which no DXT read shows), and each shuffle folder's files
    and sizes when the buffer closes, independent of the collector."""
    import builtins

    from distributed.shuffle._disk import DiskShardsBuffer

    seen = builtins._p2p_io = {"io": [], "folders": []}
    write_frames, read, close = (DiskShardsBuffer._write_frames, DiskShardsBuffer.read,
                                 DiskShardsBuffer.close)

    def nbytes(frame) -> int:
        return memoryview(frame).nbytes

    def writing(self, frames, id):
        frames = list(frames)
        t0 = time.time()
        write_frames(self, frames, id)
        seen["io"].append((os.getpid(), threading.get_ident(), str(self.directory / str(id)),
                           "write", sum(map(nbytes, frames)), t0, time.time(), False))

    def reading(self, id):
        path = self.directory / str(id)
        size = os.path.getsize(path) if path.exists() else 0
        t0 = time.time()
        value = read(self, id)
        mapped = type(getattr(self._read, "__self__", None)).__name__.startswith("Array")
        seen["io"].append((os.getpid(), threading.get_ident(), str(path), "read", size, t0,
                           time.time(), mapped))
        return value

    async def closing(self):
        if self.directory.exists():
            seen["folders"] += [(os.getpid(), self.directory.name, f.name, f.stat().st_size)
                                for f in self.directory.iterdir()]
        await close(self)

    DiskShardsBuffer._write_frames, DiskShardsBuffer.read = writing, reading
    DiskShardsBuffer.close = closing


def _p2p_seen() -> dict:
    import builtins

    return dict(builtins._p2p_io)


def p2p_job(args: str) -> None:
    """A dataframe P2P shuffle with a per-partition groupby, a P2P merge of two frames and an
    array P2P rechunk, on 2 workers x 2 threads (P2P's disk buffer on, as by default). Dask's
    comm offload threshold is lowered (the workers read it from the environment when they
    start) so that the shuffles' messages are serialised on Dask's offload thread, as large
    ones are in real jobs: code a transfer task started, on a thread that runs no task."""
    os.environ["DASK_DISTRIBUTED__COMM__OFFLOAD"] = "1 KiB"
    import dask
    import dask.array as da
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd
    from distributed import Client, LocalCluster

    truth_path, _folder = args.split(",")
    rng = np.random.default_rng(0)
    left = pd.DataFrame({"k": np.arange(200_000) % 97, "v": rng.random(200_000)})
    # each right key once: the merge's output is one row per left row (with keys repeated on
    # both sides it was 103 million rows, seconds of pandas CPU that no check looks at); the
    # rows each side shuffles are as many as before
    right = pd.DataFrame({"k": np.arange(50_000), "w": rng.random(50_000)})
    with dask.config.set({"distributed.p2p.storage.disk": True}), LocalCluster(
            n_workers=2, threads_per_worker=2, processes=True,
            dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(_probe_p2p)
        df = dd.from_pandas(left, npartitions=8)
        sums = df.shuffle(on="k", shuffle_method="p2p").map_partitions(
            lambda p: p.groupby("k").v.sum()).compute()
        merged = df.merge(dd.from_pandas(right, npartitions=4), on="k", shuffle_method="p2p",
                          broadcast=False).w.sum().compute()
        x = da.from_array(rng.random((1200, 1200)), chunks=(1200, 40))
        rechunked = x.rechunk((40, 1200), method="p2p").sum().compute()
        time.sleep(0.5)  # the buffers close after the results arrive
        seen = client.run(_p2p_seen)
    Path(truth_path).write_text(json.dumps({
        "io": [r for s in seen.values() for r in s["io"]],
        "folders": [r for s in seen.values() for r in s["folders"]],
        "results": [float(sums.sum()), float(merged), float(rechunked)]}))


def hold_memory(mib: int, seconds: float) -> int:
    """Holds ``mib`` MiB (every page touched) for ``seconds``: its worker passes its memory
    pause fraction and pauses until this returns."""
    block = bytearray(mib << 20)
    memoryview(block)[::4096] = b"\x01" * len(range(0, len(block), 4096))
    time.sleep(seconds)
    return len(block)


def inc(i: int) -> int:
    return i + 1


def pause_job(args: str) -> None:
    """One worker of 2 threads, 400 MB memory limit, pausing at 60%, no queuing on the
    scheduler: a task holds 300 MiB for 2.5 s (the worker pauses), another sleeps 1 s, and
    eight short tasks sent with them are ready on the worker, waiting for a thread; the sleeper's
    thread is free after 1 s, but the paused worker starts nothing until it resumes. Truth:
    Dask's own events of the worker's status and its worker-side transition log."""
    import dask
    from distributed import Client, LocalCluster

    truth_path, _folder = args.split(",")
    memory = {"distributed.worker.memory.target": False, "distributed.worker.memory.spill": False,
              "distributed.worker.memory.pause": 0.6,
              "distributed.worker.memory.terminate": False,
              "distributed.scheduler.worker-saturation": "inf"}
    with dask.config.set(memory), LocalCluster(
            n_workers=1, threads_per_worker=2, processes=True, memory_limit="400MB",
            dashboard_address=None) as cluster, Client(cluster) as client:
        held = client.submit(hold_memory, 300, 2.5, key="hold-memory")
        sleeper = client.submit(time.sleep, 1.0, key="sleep-1s")
        small = client.map(inc, range(8), key=[f"inc-{i}" for i in range(8)])
        client.gather([held, sleeper, *small])
        (address,) = client.scheduler_info()["workers"]
        events = [(t, msg) for t, msg in client.get_events(address)
                  if isinstance(msg, dict) and msg.get("action") == "worker-status-change"]
        log = client.run(lambda dask_worker: [(str(k), f, ts) for k, _s, f, *_r, ts
                                              in dask_worker.state.log
                                              if f in ("ready", "executing")])
    Path(truth_path).write_text(json.dumps({"events": events, "log": list(log.values())[0],
                                            "worker": address}))


if __name__ == "__main__":
    {"cluster": cluster_job, "fail": fail_job, "kill": kill_job, "io": io_job, "io-every": io_every_job,
     "parquet": parquet_job, "zarr": zarr_job, "coro": coro_job,
     "spill": spill_job, "profile-budget": profile_budget_job, "p2p": p2p_job,
     "stuck": stuck_job, "pause": pause_job}[sys.argv[1]](sys.argv[2])
