"""The workload of the real-run comparison tests (test_compare_real_runs.py), run under
``collect``: ``python compare_job.py MODE TRUTH_JSON DATA_DIR``.

Six task prefixes in six phases (each gathered before the next starts, so one prefix's change
cannot shift another's CPU contention), on 2 worker processes × 2 threads:

- ``burn``    8 × ``BURN_S`` of thread CPU (a busy loop on ``time.thread_time``);
- ``crunch``  8 × ``CRUNCH_S`` of thread CPU (arithmetic on a list; unrelated to ``burn``);
- ``load``    8 × read one input file in 256 KiB ``pread`` calls from storage throttled to
  ``BANDWIDTH`` (the throttle sleeps inside each call's recorded window, as a slow file system
  would);
- ``nap``     8 × sleep ``NAP_S``;
- ``hold``    8 × a result of ``HOLD_BYTES`` kept in worker memory (400 MB limit, spilled above
  a target of 10% of it, the memory monitor's spill and pause off);
- ``store``   4 × write 256 KiB in four unthrottled calls, into the run's own ``out/``.

Every run has its own scratch folder (the workers' ``local_directory``: ``scratch/`` in its
working folder) and output folder, as batch jobs do.

``MODE`` plants one change on top of ``base``; each touches one prefix, or the whole setup:

- ``cpu``     ``burn`` does 3× the CPU work;
- ``bytes``   ``load`` reads twice the bytes from storage twice as fast (same time);
- ``slowio``  ``load`` reads the same bytes from storage half as fast;
- ``sleep``   ``nap`` sleeps ``EXTRA_NAP_S`` more;
- ``spill``   ``hold``'s results are 24× larger: they no longer fit under the target, and spill;
- ``more``    twice the ``crunch`` tasks;
- ``threads`` 1 thread per worker instead of 2.
- ``twice``   ``load`` reads its input file twice, at the same storage speed (the test records
  it beside CPU burners: one step's bytes doubled on a loaded machine).

Every task records its own I/O calls (op, offset, length, wall window) and thread, written to
TRUTH_JSON; the test turns them into genuine Darshan logs (``testing.darshan_writer``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

MODES = ("base", "cpu", "bytes", "slowio", "sleep", "spill", "more", "threads", "twice")
N_TASKS = 8
INPUT_BYTES = 1024 * 1024  # base; ``bytes``: twice
CHUNK = 256 * 1024
BANDWIDTH = 8 * 1024 * 1024  # bytes/s of the throttled input storage
BURN_S = 0.03
CRUNCH_S = 0.03
# a sleep wakes a few ms late on a busy host: long enough that this lateness stays below
# compare's material change (at 0.05 s one CI run named it before the planted change)
NAP_S = 0.2
EXTRA_NAP_S = 0.1
HOLD_BYTES = 1024 * 1024  # ``spill``: 24×
STORE_BYTES = 256 * 1024


def _observed(key: str, ops: list, cpu0: float, path: str | None = None) -> dict:
    return {"key": key, "thread": threading.get_ident(), "pid": os.getpid(), "path": path,
            "ops": ops, "cpu": time.thread_time() - cpu0}


def burn(key: str, seconds: float) -> dict:
    c0 = time.thread_time()
    x = 0
    while time.thread_time() - c0 < seconds:
        x += 1
    return _observed(key, [], c0)


def crunch(key: str, seconds: float) -> dict:
    c0 = time.thread_time()
    values = list(range(1000))
    while time.thread_time() - c0 < seconds:
        values = [v * 3 % 1009 for v in values]
    return _observed(key, [], c0)


def load(key: str, path: str, bandwidth: float, passes: int = 1) -> dict:
    c0, ops = time.thread_time(), []
    fd = os.open(path, os.O_RDONLY)
    try:
        for _ in range(passes):
            offset = 0
            while True:
                t0 = time.time()
                data = os.pread(fd, CHUNK, offset)
                time.sleep(len(data) / bandwidth)
                ops.append(("read", offset, len(data), t0, time.time()))
                offset += len(data)
                if not data:
                    break
    finally:
        os.close(fd)
    return _observed(key, ops, c0, path)


def nap(key: str, seconds: float) -> dict:
    c0 = time.thread_time()
    time.sleep(seconds)
    return _observed(key, [], c0)


def hold(nbytes: int) -> bytes:
    return os.urandom(16) * (nbytes // 16)


def _probe_spill() -> None:
    """Record every spill file Dask's store (zict.File) writes and reads: path, thread, size
    and time, what a Darshan trace would hold (the test writes them into the logs)."""
    import builtins

    import zict

    seen = builtins._compare_spill_io = []
    write, read = zict.File.__setitem__, zict.File.__getitem__

    def record(self, key, op, t0):
        path = os.path.join(self.directory, self.filenames[key])
        seen.append({"key": f"spill:{key}", "thread": threading.get_ident(),
                     "pid": os.getpid(), "path": path,
                     "ops": [(op, 0, os.path.getsize(path), t0, time.time())]})

    def setitem(self, key, value):
        t0 = time.time()
        write(self, key, value)
        record(self, key, "write", t0)

    def getitem(self, key):
        t0 = time.time()
        value = read(self, key)
        record(self, key, "read", t0)
        return value

    zict.File.__setitem__, zict.File.__getitem__ = setitem, getitem


def _spill_seen() -> list:
    import builtins

    return list(builtins._compare_spill_io)


def store(key: str, path: str) -> dict:
    c0, ops = time.thread_time(), []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for i in range(4):
            n = STORE_BYTES // 4
            t0 = time.time()
            os.write(fd, b"s" * n)
            ops.append(("write", i * n, n, t0, time.time()))
    finally:
        os.close(fd)
    return _observed(key, ops, c0, path)


def prepare_inputs(data: Path, mode: str) -> list[Path]:
    """The ``load`` inputs: same paths in every run, twice the size in ``bytes``."""
    data.mkdir(parents=True, exist_ok=True)
    size = INPUT_BYTES * (2 if mode == "bytes" else 1)
    paths = [data / f"input-{i}.bin" for i in range(N_TASKS)]
    for p in paths:
        p.write_bytes(b"i" * size)
    return paths


def main(mode: str, truth_path: str, data_dir: str) -> None:
    import dask
    from distributed import Client, LocalCluster, wait

    assert mode in MODES, mode
    data = Path(data_dir)
    inputs = prepare_inputs(data, mode)
    burn_s = BURN_S * (3 if mode == "cpu" else 1)
    n_crunch = N_TASKS * (2 if mode == "more" else 1)
    bandwidth = BANDWIDTH * {"bytes": 2.0, "slowio": 0.5}.get(mode, 1.0)
    passes = 2 if mode == "twice" else 1
    nap_s = NAP_S + (EXTRA_NAP_S if mode == "sleep" else 0.0)
    hold_bytes = HOLD_BYTES * (24 if mode == "spill" else 1)
    memory = {"distributed.worker.memory.target": 0.1, "distributed.worker.memory.spill": False,
              "distributed.worker.memory.pause": False,
              "distributed.worker.memory.terminate": False}
    # each run's own scratch and output folders (in its working folder), as batch jobs have:
    # compare must match their files by a logical path
    out = Path.cwd() / "out"
    out.mkdir(exist_ok=True)
    with dask.config.set(memory), LocalCluster(
            n_workers=2, threads_per_worker=1 if mode == "threads" else 2, processes=True,
            memory_limit="400MB", dashboard_address=None,
            local_directory=str(Path.cwd() / "scratch")) as cluster, Client(cluster) as client:
        client.run(_probe_spill)
        results = client.gather([client.submit(burn, f"burn-{i}", burn_s, key=f"burn-{i}")
                                 for i in range(N_TASKS)])
        results += client.gather([client.submit(crunch, f"crunch-{i}", CRUNCH_S,
                                                key=f"crunch-{i}") for i in range(n_crunch)])
        results += client.gather([client.submit(load, f"load-{i}", str(p), bandwidth, passes,
                                                key=f"load-{i}") for i, p in enumerate(inputs)])
        results += client.gather([client.submit(nap, f"nap-{i}", nap_s, key=f"nap-{i}")
                                  for i in range(N_TASKS)])
        held = [client.submit(hold, hold_bytes, key=f"hold-{i}") for i in range(N_TASKS)]
        wait(held)
        del held
        results += client.gather([client.submit(store, f"store-{i}", str(out / f"out-{i}.bin"),
                                                key=f"store-{i}") for i in range(N_TASKS // 2)])
        results += [r for rows in client.run(_spill_seen).values() for r in rows]
    Path(truth_path).write_text(json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:4])
