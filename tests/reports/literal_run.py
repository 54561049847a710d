"""A literal run for report tests, correlated by the real engine.

The literal run: a scheduler and two workers with two threads each; tasks read and write files
(exact-thread DXT segments), one task's I/O straddles its window, the event loop writes outside
any task, keys include HTML/script injection attempts, one record was rejected.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from correlate.engine import correlate_frames, write_outputs
from correlate.sources.frames import RunFrames, make_rejects

MS = 1_000_000
T0 = 1_700_000_000_000 * MS
XSS_IMG = "<img src=x onerror=alert(1)>"
XSS_SCRIPT = "</script><script>window.__pwned=1</script>"
HOSTILE_KEYS = (f"{XSS_IMG}-0", f"load-{XSS_SCRIPT}")


def _processes() -> pl.DataFrame:
    return pl.DataFrame({
        "host": ["h", "h", "h"], "pid": [1, 10, 20], "role": ["scheduler", "worker", "worker"],
        "worker": [None, "tcp://10.0.0.1:4001", "tcp://10.0.0.2:4002"],
        "nthreads": [None, 2, 2],
        "main_thread_id": pl.Series([900, 910, 920], dtype=pl.UInt64),
        "closed_cleanly": [True, True, False], "match": ["pid", "pid", "pid"]})


#: (key, pid, thread, start_ms, stop_ms, cpu_s)
EXECUTIONS = [
    ("read-a-0", 10, 11, 0, 40, 0.02), ("read-a-1", 10, 12, 5, 50, 0.03),
    ("read-a-2", 20, 21, 0, 30, 0.01), (HOSTILE_KEYS[0], 20, 22, 2, 60, 0.05),
    ("mul-b-0", 10, 11, 45, 90, 0.04), ("mul-b-1", 10, 12, 55, 95, None),
    (HOSTILE_KEYS[1], 20, 21, 35, 80, 0.02), ("sum-c-0", 20, 22, 65, 120, 0.05),
]


def _executions() -> pl.DataFrame:
    rows = [(k, "h", pid, tid, seq, s * MS + T0, e * MS + T0, cpu, "ok",
             f"tcp://10.0.0.{1 if pid == 10 else 2}:400{1 if pid == 10 else 2}")
            for seq, (k, pid, tid, s, e, cpu) in enumerate(EXECUTIONS)]
    df = pl.DataFrame(rows, orient="row", schema={
        "key": pl.String, "host": pl.String, "pid": pl.Int64, "thread_id": pl.UInt64,
        "execution_seq": pl.Int64, "local_start_ns": pl.Int64, "local_stop_ns": pl.Int64,
        "cpu_s": pl.Float64, "status": pl.String, "worker": pl.String})
    return df.with_columns(window_source=pl.lit("executor-hook"))


#: (pid, thread, start_ms, stop_ms, op, path, length)
SEGMENTS = [
    (10, 11, 1, 3, "read", "/data/a-0.bin", 4096), (10, 11, 4, 6, "read", "/data/a-0.bin", 4096),
    (10, 12, 6, 9, "read", "/data/a-1.bin", 8192), (20, 21, 1, 2, "read", "/data/a-2.bin", 1000),
    (20, 22, 3, 8, "read", f"/data/{XSS_IMG}.bin", 5000),
    (20, 22, 59, 61, "write", "/out/x.bin", 300),      # straddles its task's end
    (10, 11, 50, 52, "write", "/out/b-0.bin", 2048), (10, 12, 60, 70, "write", "/out/b-1.bin", 2048),
    (20, 21, 40, 41, "read", "/data/a-2.bin", 512), (20, 22, 70, 90, "write", "/out/c.bin", 65536),
    (10, 910, 20, 21, "write", "/tmp/event-loop.log", 77),     # event loop, outside tasks
    (1, 901, 10, 11, "write", "/tmp/scheduler.log", 33),        # scheduler process
]


def _segments() -> pl.DataFrame:
    rows = [("h", pid, tid, path, "DXT_POSIX", op, 0, n, s * MS + T0, e * MS + T0, i)
            for i, (pid, tid, s, e, op, path, n) in enumerate(SEGMENTS)]
    return pl.DataFrame(rows, orient="row", schema={
        "host": pl.String, "pid": pl.Int64, "thread_id": pl.UInt64, "path": pl.String,
        "module": pl.String, "op": pl.String, "offset": pl.Int64, "length": pl.Int64,
        "local_start_ns": pl.Int64, "local_stop_ns": pl.Int64, "segment_index": pl.Int64})


def _func_stats() -> pl.DataFrame:
    rows = []
    for seq, (_key, pid, tid, _s, _e, _cpu) in enumerate(EXECUTIONS):
        rows.append(("h", pid, tid, seq, "work", "compute", "/src/work.py", 10, 3, 0.03, 0.02))
        rows.append(("h", pid, tid, seq, "numpy", f"f{XSS_IMG}", "/np/x.py", 5, 1, 0.01, 0.01))
    return pl.DataFrame(rows, orient="row", schema={
        "host": pl.String, "pid": pl.Int64, "thread_id": pl.UInt64, "execution_seq": pl.Int64,
        "module": pl.String, "name": pl.String, "file": pl.String, "line": pl.Int64,
        "ncall": pl.Int64, "ttot_s": pl.Float64, "tsub_s": pl.Float64}).with_columns(
        clock=pl.lit("wall"))


def _transitions() -> pl.DataFrame:
    rows = []
    for key, _pid, _tid, s, e, _cpu in EXECUTIONS:
        for t, a, b in ((s - 1, "released", "waiting"), (s - 1, "waiting", "processing"),
                        (e + 1, "processing", "memory")):
            rows.append((key, "scheduler", "h", 1, a, b, "stim-" + key, max(t, 0) * MS + T0))
    return pl.DataFrame(rows, orient="row", schema={
        "key": pl.String, "side": pl.String, "host": pl.String, "pid": pl.Int64,
        "start": pl.String, "finish": pl.String, "stimulus_id": pl.String,
        "local_time_ns": pl.Int64})


def literal_frames() -> RunFrames:
    return RunFrames(
        processes=_processes(), executions=_executions(), io_segments=_segments(),
        func_stats=_func_stats(), transitions=_transitions(),
        rejects=make_rejects([("darshan", "/logs/bad.darshan", "truncated <gz> region", 2)]),
        source_format="run-folder",
        facts={"command": "python job.py --key '<b>x</b>'", "hosts": ["h"], "workers": 2,
               "nthreads": [2], "started_ns": T0 - 1000 * MS, "ended_ns": T0 + 2000 * MS,
               "versions": {"dask": "2024.8.0", "distributed": "2024.8.0"}},
        warnings=("worker clock <unknown> for one process",))


def write_run(frames: RunFrames, out: Path) -> Path:
    write_outputs(correlate_frames(frames), out)
    return out
