"""The client of the deployment tests: connects through a scheduler file (the way batch jobs
do), runs a small graph (independent CPU tasks, file I/O tasks, and a task depending on all of
them), writes what each task observed to TRUTH (JSON) and shuts the cluster down.

    python client.py SCHEDULER_FILE TRUTH DATA_DIR [--no-shutdown]

Run as a script its task functions travel by value (``__main__``); imported by another client
script (jobqueue, dask-mpi, docs/deploy.md's) they travel by reference, so the tests put this folder
on every process's PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path


def observed(key: str, **extra):
    return {"key": key, "thread": threading.get_ident(), "pid": os.getpid(), **extra}


def burn(key: str, seconds: float):
    c0 = time.thread_time()
    x = 0
    while time.thread_time() - c0 < seconds:
        x += 1
    return observed(key, cpu=time.thread_time() - c0)


def write_read(key: str, folder: str, nbytes: int):
    """Write ``nbytes`` in four calls and read them back in one; ``ops`` are the calls
    (op, offset, length, start, end on ``time.time()``), what a Darshan trace of the task shows
    (``testing.darshan_writer.write_logs_from_truth`` writes it where no runtime traced it)."""
    path = os.path.join(folder, f"{key}.bin")
    ops, chunk = [], nbytes // 4
    with open(path, "wb", buffering=0) as fh:
        for i in range(4):
            t0 = time.time()
            fh.write(b"d" * chunk)
            ops.append(("write", i * chunk, chunk, t0, time.time()))
    with open(path, "rb", buffering=0) as fh:
        t0 = time.time()
        got = len(fh.read(nbytes))
        ops.append(("read", 0, got, t0, time.time()))
    return observed(key, path=path, written=nbytes, read=got, ops=ops)


def gather_all(key: str, *parts):
    return observed(key, inputs=len(parts))


def graph(client, data_dir: str) -> list[dict]:
    fs = [client.submit(burn, f"burn-{i}", 0.05 + 0.01 * i, key=f"burn-{i}") for i in range(8)]
    fs += [client.submit(write_read, f"io-{i}", data_dir, 64 * 1024 * (i + 1), key=f"io-{i}")
           for i in range(4)]
    fs.append(client.submit(gather_all, "gather-0", *fs, key="gather-0"))
    return client.gather(fs)


def main(argv: list[str]) -> None:
    from distributed import Client

    scheduler_file, truth, data_dir = argv[:3]
    with Client(scheduler_file=scheduler_file, timeout=60) as client:
        client.wait_for_workers(int(os.environ.get("CLIENT_WORKERS", "1")), timeout=60)
        results = graph(client, data_dir)
        Path(truth).write_text(json.dumps(results))
        if "--no-shutdown" not in argv:
            client.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
