"""The workload of the real-run comparison test (test_compare_real_runs.py), run under
``collect``: ``python compare_job.py before|after TRUTH_JSON DATA_DIR``.

Four task prefixes in four phases (each gathered before the next starts, so one prefix's change
cannot shift another's CPU contention):

- ``burn``  8 × 30 ms of CPU;
- ``load``  8 × read one input file in 256 KiB ``pread`` calls from storage throttled to
  ``BANDWIDTH`` (the throttle sleeps inside each call's recorded window, as a slow file system
  would); the ``after`` run's inputs are twice as large, so it reads twice the bytes;
- ``nap``   8 × sleep 50 ms; the ``after`` run sleeps ``EXTRA_NAP_S`` more per task;
- ``store`` 4 × write 256 KiB in four unthrottled calls.

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

N_TASKS = 8
INPUT_BYTES = 2 * 1024 * 1024  # before; after: twice
CHUNK = 256 * 1024
BANDWIDTH = 8 * 1024 * 1024  # bytes/s of the throttled input storage (slow enough that each
# file's doubled read time stands well above sleep overshoot on a loaded machine)
BURN_S = 0.03
NAP_S = 0.05
EXTRA_NAP_S = 0.3
STORE_BYTES = 256 * 1024


def _observed(key: str, ops: list, cpu0: float, path: str | None = None) -> dict:
    return {"key": key, "thread": threading.get_ident(), "pid": os.getpid(), "path": path,
            "ops": ops, "cpu": time.thread_time() - cpu0}


def burn(key: str) -> dict:
    c0 = time.thread_time()
    x = 0
    while time.thread_time() - c0 < BURN_S:
        x += 1
    return _observed(key, [], c0)


def load(key: str, path: str) -> dict:
    c0, ops, offset = time.thread_time(), [], 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            t0 = time.time()
            data = os.pread(fd, CHUNK, offset)
            time.sleep(len(data) / BANDWIDTH)
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
    """The ``load`` inputs: same paths in both runs, twice the size in ``after``."""
    data.mkdir(parents=True, exist_ok=True)
    size = INPUT_BYTES * (2 if mode == "after" else 1)
    paths = [data / f"input-{i}.bin" for i in range(N_TASKS)]
    for p in paths:
        p.write_bytes(b"i" * size)
    return paths


def main(mode: str, truth_path: str, data_dir: str) -> None:
    from distributed import Client, LocalCluster

    assert mode in ("before", "after"), mode
    data = Path(data_dir)
    inputs = prepare_inputs(data, mode)
    nap_s = NAP_S + (EXTRA_NAP_S if mode == "after" else 0.0)
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        phases = (
            lambda: [client.submit(burn, f"burn-{i}", key=f"burn-{i}") for i in range(N_TASKS)],
            lambda: [client.submit(load, f"load-{i}", str(p), key=f"load-{i}")
                     for i, p in enumerate(inputs)],
            lambda: [client.submit(nap, f"nap-{i}", nap_s, key=f"nap-{i}")
                     for i in range(N_TASKS)],
            lambda: [client.submit(store, f"store-{i}", str(data / f"out-{i}.bin"),
                                   key=f"store-{i}") for i in range(N_TASKS // 2)])
        results = [r for submit in phases for r in client.gather(submit())]
    Path(truth_path).write_text(json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:4])
