"""Jobs with one planted performance problem each, for the findings and critical-path tests
(run under ``collect`` by ``tests/engine/test_findings.py``). ``python findings_job.py VARIANT
TRUTH[,FOLDER]``: the job writes TRUTH (a pickled dict: the variant, the chain's keys, and every
I/O call its tasks made, for genuine Darshan logs written afterwards when no darshan-runtime
traced the job).

Every variant but ``transfer`` and ``local`` runs the same base on 2 workers × 2 threads: 24
short sleeps (``short-*``).
- ``clean``: the base alone (its sleeps sent as threads free up, as in ``straggler`` and
  ``pinned``: worker-saturation 1.0);
- ``chain``: a serial chain of four 0.25 s sleeps (``chain-*``) on one worker, the base on the
  other (so that no short sleep holds the thread a link of the chain was sent to); ``apart``:
  the base alone on that other worker (the job without the chain);
- ``straggler``: ``short-5`` sleeps 1.0 s instead of 0.05 s;
- ``pinned``: the base with ``short-0..21`` restricted to one worker and the last two to the
  other (an imbalance: its threads idle while the first worker's tasks wait);
- ``gil``: beside it, two pure-Python loops (``spin-*``) on the same worker, each with a small
  write of its own file; ``gil-apart``: the same two on different workers;
- ``small``: beside it, ``scan`` reads a 512 MiB file in 512-byte requests; ``large``: the same
  read in 4 MiB requests. In both, ``load-0..3`` each read another 64 MiB file in 4 MiB requests
  (what large requests cost on this host, in the run itself).
- ``reread``: beside it, a chain of four tasks (``reread-*``, each after the one before, as the
  steps of an iterative solver re-read their input) each read the same ``REREAD_BYTES`` file
  whole, in 4 MiB requests; ``once``: only ``reread-0`` reads it, the three after it take its
  result and read nothing (the job without the repeats).
- ``tiny``: beside it, 1,000 tasks that do next to nothing (``tick-*``), each its own task;
  ``batched``: the same 1,000 calls in 10 tasks (``ticks-*``).
- ``meta``: beside it, ``reopen`` opens, stats and closes a small file 200,000 times, reading
  one byte each time (its time in metadata calls recorded as Darshan counts it);
  ``meta-once``: ``reopen`` opens it once and reads the byte as many times (the job without
  the metadata calls).
- ``shared``: beside it, four tasks (``part-*``) each write their own 64 MiB region of one
  file at once, in 1 MiB requests each synced to the disk before the next and followed by 4 ms
  of making the next block, holding a lock on
  the whole file from open to close (as HDF5's and NetCDF's file locking do): they take turns;
  ``own``: the same four each write a file of their own (the job without the sharing). The
  locks are ``flock``'s, HDF5's (one per open file, so threads of one process exclude one
  another too, unlike ``fcntl`` record locks): Darshan traces the open, the writes and the
  close, not the wait for the lock.
- ``spill``: beside the base (on the other worker, as in ``chain``), a chain on one worker
  whose links' inputs were spilled meanwhile: ``hop-0`` makes a result of ``HOP_BYTES``; each
  next link ``hop-<i>`` takes it and ``rest-<i>``, a ``REST_S`` sleep that starts with it,
  while ``fill-<i>`` (also started by it, on the worker's other thread) makes ``FILL_BYTES``.
  The worker's spill target (``MEMORY_TARGET`` of ``SPILL_LIMIT``) holds two hops but not a
  hop and a fill: storing ``fill-<i>`` writes the waiting hop to disk, off the path (``rest``
  sleeps meanwhile), and ``hop-<i>`` waits for it to be read back (Dask's ``disk-read``). The
  job records every spill file Dask's store writes and reads (what a Darshan trace of the
  worker shows). ``nospill``: the same job on workers with ``ROOMY_LIMIT`` (nothing spills).
  ``stored``: the same job with a target of ``STORED_TARGET``, below a hop: each hop is written
  to disk as it is stored (before the scheduler hears it ended) and read back by each of its
  dependents (benchmarks/bench_findings_costs.py; no test).
- ``transfer``: without the base, a chain of ``RELAYS`` links (``relay-*``) each making a result
  of ``RELAY_BYTES`` from its predecessor's, on alternate workers: each link waits for its input
  to come from the other worker. ``local``: the same chain on one worker.
- ``busy-loop``: beside it, three threads the first worker's event loop starts (no task) spin
  pure Python until ``crunch``, a pure-Python loop with a small write of its own file that
  runs there, has ended (at most 30 s).
"""

from __future__ import annotations

import fcntl
import functools
import gc
import os
import pickle
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHAIN = 4
CHAIN_S = 0.25
SHORT = 24
SHORT_S = 0.05
STRAGGLER_S = 1.0
SPIN = 30_000_000  # (each loop alone outlasts the sleeps beside it: apart, they set the span)
CRUNCH = 30_000_000  # (beside three spinning threads it gets a quarter of the GIL)
SCAN_BYTES = 512 << 20
LOAD_BYTES = 64 << 20
LOADS = 4
REREAD_BYTES = 1 << 30  # (read from the page cache: the chain outlasts the base)
READERS = 4
TICKS = 1000
BATCHES = 10
BUSY_S = 30.0
REOPENS = 200_000
PART_BYTES = 64 << 20
PARTS = 4
PREPARE_S = 0.004  # per 1 MiB block written by a part-* task
HOPS = 4
HOP_BYTES = 40 << 20
FILL_BYTES = 80 << 20
REST_S = 0.2
SPILL_LIMIT = 1_000_000_000
ROOMY_LIMIT = 8_000_000_000
MEMORY_TARGET = 0.1  # (of SPILL_LIMIT: 100 MB, more than two hops, less than a hop and a fill)
STORED_TARGET = 0.03  # (of SPILL_LIMIT: 30 MB, less than a hop)
RELAYS = 5
RELAY_BYTES = 64 << 20


def nap(seconds: float, *deps: object) -> float:
    time.sleep(seconds)
    return seconds


def _no_gc(fn: Callable[..., dict]) -> Callable[..., dict]:
    """Run ``fn`` with the cyclic garbage collector off: the job's record of every call (a
    tuple each) would otherwise trigger collections inside the calls it times."""
    @functools.wraps(fn)
    def run(*args: Any) -> dict:
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args)
        finally:
            if was:
                gc.enable()
    return run


def _calls(path: str, ops: list) -> dict:
    """What a DXT trace of this execution shows (write_logs_from_truth's input)."""
    return {"pid": os.getpid(), "thread": threading.get_ident(), "path": path, "ops": ops}


def spin(folder: str, name: str, steps: int = SPIN) -> dict:
    """A pure-Python loop (holds the GIL), then a small write of its own file."""
    total = 0
    for i in range(steps):
        total += i % 7
    path = os.path.join(folder, f"{name}.out")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.time()
    os.write(fd, b"s" * 4096)
    ops = [("write", 0, 4096, t0, time.time())]
    os.close(fd)
    return _calls(path, ops)


@_no_gc
def scan(path: str, request: int, *deps: object) -> dict:
    """Read the whole file in ``request``-byte preads into one buffer (a reader's buffer of
    that size: a fresh 4 MiB object per read would fault in its pages inside the call)."""
    ops = []
    buf = bytearray(request)
    fd = os.open(path, os.O_RDONLY)
    offset = 0
    while True:
        t0 = time.time()
        n = os.preadv(fd, [buf], offset)
        ops.append(("read", offset, n, t0, time.time()))
        if not n:
            break
        offset += n
    os.close(fd)
    return _calls(path, ops)


@_no_gc
def reopen(path: str, times: int, each: bool = True) -> dict:
    """Open, stat, read one byte of and close ``path`` ``times`` times (the open with the stat,
    and the close: Darshan's metadata time); ``each`` false: open it once, read the byte
    ``times`` times."""
    if not each:
        t0 = time.time()
        fd = os.open(path, os.O_RDONLY)
        os.fstat(fd)
        ops = [("open", 0, 0, t0, time.time())]
        for _ in range(times):
            t1 = time.time()
            data = os.pread(fd, 1, 0)
            ops.append(("read", 0, len(data), t1, time.time()))
        t2 = time.time()
        os.close(fd)
        return _calls(path, ops + [("close", 0, 0, t2, time.time())])
    ops = []
    for _ in range(times):
        t0 = time.time()
        fd = os.open(path, os.O_RDONLY)
        os.fstat(fd)
        t1 = time.time()
        data = os.pread(fd, 1, 0)
        t2 = time.time()
        os.close(fd)
        ops += [("open", 0, 0, t0, t1), ("read", 0, len(data), t1, t2),
                ("close", 0, 0, t2, time.time())]
    return _calls(path, ops)


@_no_gc
def write_part(path: str, part: int, nbytes: int) -> dict:
    """Write bytes ``part`` × ``nbytes`` … of ``path`` (made beforehand) in 1 MiB pwrites,
    each made durable (``fdatasync``) before the next, as a checkpoint or a log does, holding
    an exclusive lock on the whole file from its open to its close (HDF5's file locking,
    ``flock``: a writer of a file another writes waits after its open until that one closes
    it)."""
    block = b"w" * (1 << 20)
    t0 = time.time()
    fd = os.open(path, os.O_WRONLY)
    ops = [("open", 0, 0, t0, time.time())]
    fcntl.flock(fd, fcntl.LOCK_EX)  # (not a call Darshan traces)
    for offset in range(part * nbytes, (part + 1) * nbytes, len(block)):
        t0 = time.time()
        n = os.pwrite(fd, block, offset)
        ops.append(("write", offset, n, t0, time.time()))
        os.fdatasync(fd)  # (Darshan counts its time, DXT has no segment for it)
        # the next block is made while the file is held (HDF5's filters compress a chunk
        # between writes): the turns then outlast the job's short sleeps on any disk (on a
        # fast one the writes alone are over before they cost the 5% threshold of the window)
        time.sleep(PREPARE_S)
    t0 = time.time()
    os.close(fd)  # (releases the lock)
    ops.append(("close", 0, 0, t0, time.time()))
    return _calls(path, ops)


def make(nbytes: int, *deps: object) -> bytes:
    """``nbytes`` zero bytes, a new object (its inputs only order it). ``bytes(n)`` is calloc'd:
    its pages are mapped as they are first read, and it holds the GIL for no memset (which
    delayed the worker's event loop, and the next task's dispatch, by up to 0.05 s)."""
    return bytes(nbytes)


def _probe_spill() -> None:
    """Record every spill file Dask's store (``zict.File``) writes and reads in this worker:
    what a DXT trace of the worker holds (``write_logs_from_truth``'s input)."""
    import builtins

    import zict

    seen = builtins._findings_spill_io = []  # type: ignore[attr-defined]
    write, read = zict.File.__setitem__, zict.File.__getitem__

    def record(self: Any, key: object, op: str, t0: float) -> None:
        path = os.path.join(self.directory, self.filenames[key])
        seen.append(_calls(path, [(op, 0, os.path.getsize(path), t0, time.time())]))

    def setitem(self: Any, key: object, value: Any) -> None:
        t0 = time.time()
        write(self, key, value)
        record(self, key, "write", t0)

    def getitem(self: Any, key: object) -> Any:
        t0 = time.time()
        value = read(self, key)
        record(self, key, "read", t0)
        return value

    zict.File.__setitem__, zict.File.__getitem__ = setitem, getitem  # type: ignore


def _spill_seen() -> list:
    import builtins

    return list(builtins._findings_spill_io)  # type: ignore[attr-defined]


def tick(i: int) -> int:
    return i + 1


def ticks(first: int, n: int) -> int:
    return sum(tick(i) for i in range(first, first + n))


def busy_thread(seconds: float) -> None:
    """Start three threads in this process (called by ``client.run``: outside any task) that
    spin pure Python until ``crunch`` says it has ended (``sys.findings_crunch_done``; no
    system call in the loop: one would hand the GIL over at random and starve ``crunch`` for
    a time that varies from run to run), or for ``seconds``."""
    def loop() -> None:
        end = time.time() + seconds
        total = 0
        while time.time() < end and not getattr(sys, "findings_crunch_done", False):
            for i in range(10_000):
                total += i % 7

    for i in range(3):
        threading.Thread(target=loop, name=f"busy-loop-{i}", daemon=True).start()


def crunch(folder: str) -> dict:
    """``spin``, then say so to the spinning threads."""
    calls = spin(folder, "crunch", CRUNCH)
    sys.findings_crunch_done = True  # (the spinning threads read it)
    return calls


def _zeros(path: str, size: int, sync: bool = False) -> None:
    """A file of ``size`` zero bytes at ``path`` (``sync``: on the disk), unless one is there
    already (``small`` and ``large`` read the same files, ``reread`` and ``once`` another: each
    is written once per folder)."""
    if not (os.path.exists(path) and os.path.getsize(path) == size):
        block = bytes(min(size, 64 << 20))
        with open(path, "wb") as f:
            for at in range(0, size, len(block)):
                f.write(block[:size - at])
            if sync:
                os.fsync(f.fileno())


def prepare(variant: str, folder: str) -> None:
    """The files ``variant`` reads or writes, made in ``folder`` unless they are there (the
    tests make them before they record with the machine alone: writing them is no part of
    what is timed)."""
    if variant in ("small", "large"):
        for path, size in _scan_files(folder):
            _zeros(path, size)
    if variant in ("shared", "own"):
        # (the files' blocks exist beforehand: the writes then wait for the disk alone, not
        # for the allocation of blocks, which one journal serialises for all files)
        for i in range(1 if variant == "shared" else PARTS):
            _zeros(os.path.join(folder, "shared.out" if variant == "shared" else
                                f"own-{i}.out"), PART_BYTES * (PARTS if variant == "shared"
                                                                else 1), sync=True)
    if variant in ("reread", "once"):
        _zeros(os.path.join(folder, "shared.bin"), REREAD_BYTES)


def _scan_files(folder: str) -> list[tuple[str, int]]:
    return [(os.path.join(folder, "scanned.bin"), SCAN_BYTES),
            *((os.path.join(folder, f"loaded-{i}.bin"), LOAD_BYTES) for i in range(LOADS))]


def run(variant: str, truth_path: str, folder: str) -> None:
    from distributed import Client, LocalCluster, wait

    prepare(variant, folder)
    (data, _), *loaded = _scan_files(folder)
    others = [path for path, _size in loaded]
    shared = os.path.join(folder, "shared.bin")
    import dask

    memory: dict[str, Any] = {}
    limit: dict[str, Any] = {}
    if variant in ("spill", "nospill", "stored"):
        # spill above the target alone (the memory monitor's spill, pause and terminate off:
        # they act on the process's whole memory), uncompressed (the hops are one byte over)
        memory = {"distributed.worker.memory.target": (STORED_TARGET if variant == "stored"
                                                       else MEMORY_TARGET),
                  "distributed.worker.memory.spill": False,
                  "distributed.worker.memory.pause": False,
                  "distributed.worker.memory.terminate": False,
                  "distributed.worker.memory.spill-compression": False}
        limit = {"memory_limit": ROOMY_LIMIT if variant == "nospill" else SPILL_LIMIT}
    if variant in ("clean", "straggler", "pinned"):
        # the base's sleeps go out as threads free up (Dask's default, 1.1, holds one more on
        # each worker): with one more, a worker's last sleep can wait for its thread while the
        # other's threads idle, which in this 0.3 s window reaches the idle-threads threshold
        # on a loaded host; the pinned sleeps (restricted, never queued) wait all the same
        memory["distributed.scheduler.worker-saturation"] = 1.0
    with dask.config.set(memory), LocalCluster(
            n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None,
            **limit) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        workers = sorted(client.scheduler_info()["workers"])
        futures, chain, io = [], [], []
        held = []  # (results kept on the workers, not gathered)
        if variant in ("spill", "nospill", "stored"):
            client.run(_probe_spill, workers=[workers[0]])
            hop = client.submit(make, HOP_BYTES, key="hop-0", workers=[workers[0]])
            chain.append("hop-0")
            for i in range(1, HOPS):
                rest = client.submit(nap, REST_S, hop, key=f"rest-{i}", workers=[workers[0]])
                held.append(client.submit(make, FILL_BYTES, hop, key=f"fill-{i}",
                                          workers=[workers[0]]))
                hop = client.submit(make, HOP_BYTES, hop, rest, key=f"hop-{i}",
                                    workers=[workers[0]])
                chain += [f"rest-{i}", f"hop-{i}"]
            held.append(hop)
        if variant in ("transfer", "local"):
            relay = None
            for i in range(RELAYS):
                relay = client.submit(make, RELAY_BYTES, *([relay] if relay is not None else []),
                                      key=f"relay-{i}",
                                      workers=[workers[i % 2 if variant == "transfer" else 0]])
                chain.append(f"relay-{i}")
            held.append(relay)
        if variant == "chain":
            prev = None
            for i in range(CHAIN):
                key = f"chain-{i}"
                prev = client.submit(nap, CHAIN_S, *([prev] if prev is not None else []),
                                     key=key, workers=[workers[0]])
                chain.append(key)
                futures.append(prev)
        base = ({"workers": [workers[1]]}
                if variant in ("chain", "apart", "spill", "nospill", "stored") else {})
        if variant in ("gil", "gil-apart"):
            io += [client.submit(spin, folder, f"spin-{i}", key=f"spin-{i}",
                                 workers=[workers[0 if variant == "gil" else i]])
                   for i in range(2)]
        if variant in ("small", "large"):
            io.append(client.submit(scan, data, 512 if variant == "small" else 4 << 20,
                                    key="scan"))
            io += [client.submit(scan, o, 4 << 20, key=f"load-{i}") for i, o in enumerate(others)]
        if variant in ("reread", "once"):
            step = client.submit(scan, shared, 4 << 20, key="reread-0")
            io.append(step)
            for i in range(1, READERS):
                step = (client.submit(scan, shared, 4 << 20, step, key=f"reread-{i}")
                        if variant == "reread" else client.submit(nap, 0, step,
                                                                  key=f"reread-{i}"))
                (io if variant == "reread" else held).append(step)
        if variant in ("meta", "meta-once"):
            small = os.path.join(folder, "small.txt")
            Path(small).write_text("x" * 100)
            io.append(client.submit(reopen, small, REOPENS, variant == "meta", key="reopen"))
        if variant in ("shared", "own"):
            io += [client.submit(write_part, os.path.join(folder, "shared.out") if variant ==
                                 "shared" else os.path.join(folder, f"own-{i}.out"),
                                 i if variant == "shared" else 0, PART_BYTES, key=f"part-{i}")
                   for i in range(PARTS)]
        if variant == "tiny":
            futures += client.map(tick, range(TICKS), key=[f"tick-{i}" for i in range(TICKS)])
        if variant == "batched":
            n = TICKS // BATCHES
            futures += [client.submit(ticks, b * n, n, key=f"ticks-{b}") for b in range(BATCHES)]
        if variant == "busy-loop":
            client.run(busy_thread, BUSY_S, workers=[workers[0]])
            io.append(client.submit(crunch, folder, key="crunch", workers=[workers[0]]))
        where = [{"workers": [workers[0 if i < SHORT - 2 else 1]]} if variant == "pinned"
                 else base for i in range(SHORT)]
        # (no base beside the relays: its sleeps held the threads the links were sent to)
        futures += [client.submit(nap, STRAGGLER_S if variant == "straggler" and i == 5
                                  else SHORT_S, key=f"short-{i}", **where[i])
                    for i in range(SHORT) if variant not in ("transfer", "local")]
        client.gather(futures)
        wait(held)
        calls = client.gather(io)
        if variant in ("spill", "nospill", "stored"):
            calls += [c for rows in client.run(_spill_seen, workers=[workers[0]]).values()
                      for c in rows]
    # (pickled, not JSON: a million calls read and write several times faster;
    # docs/performance.md, test suite)
    Path(truth_path).write_bytes(pickle.dumps({"variant": variant, "chain": chain, "io": calls},
                                              protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    truth, _, folder = sys.argv[2].partition(",")
    run(sys.argv[1], truth, folder or os.path.dirname(os.path.abspath(truth)))
