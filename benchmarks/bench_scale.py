"""Benchmark: correlate at 10k, 100k and 1M task executions with 10× as many DXT segments.

In one run, on synthetic but schema-exact run folders (``testing.synthetic``, genuine
``.darshan`` logs written through libdarshan-util):

1. ``correlate RUN --no-reports`` in a fresh process per size: wall time and peak RSS, and the
   cost per execution (linear growth keeps it flat). Targets: 1M + 10M in ≤ 20 s, ≤ 4 GB.
   The largest size runs ``--repeat`` times, each followed by its *I/O floor*: in a fresh
   process too, only reading what correlate reads (every run-folder part, every DXT segment
   decoded) and writing what it wrote, with no joins. The floor is this machine's speed at
   that minute (a shared VM's varies by ±20 %), so ``correlate ÷ floor`` is the figure that
   compares across runs and machines. Every timed process starts right after a throwaway one
   touched more memory than it will use (``fault_in``).
2. The attribution (exact-thread: segment → execution on the same host/pid/thread whose
   window holds it, then I/O per execution × file × op and per execution) in polars vs a plain
   pandas ``merge_asof`` to the same output on the same data: segments/s and the ratio, with
   the per-execution bytes checked equal.
3. ``--cluster local:2`` (2 worker processes) vs single-process on the largest run: speed-up,
   and the output tables compared row for row.
   After each, the whole command with its reports (report.md + figures, report.html,
   trace.json) on the same run: peak RSS and its time × the tables-only run just before
   (targets ≤ 4 GB, ≤ 2×), and the trace's size and events (what Perfetto's UI must load).
4. The largest run as Darshan before 3.5 logs it (DXT v1: no thread ids, so every segment is
   split over the task windows it overlaps): time and peak RSS (target ≤ 4 GB).
5. ``correlate darshan LOG -o x.parquet`` on a 1M-segment DXT v2 log against
   ``darshan-dxt-parser LOG > /dev/null`` (``bench_darshan.whole_command``; target ≥ 2×; said
   SKIPPED when darshan-dxt-parser is not on PATH), and where the command's time goes.

    python benchmarks/bench_scale.py [--sizes 10000 100000 1000000] [--repeat 3]
                                     [--workers 8 --threads 4] [--keep DIR] [--stages]

``--stages``: only the largest size, once, with each stage's wall and CPU time and peak RSS
(``correlate.console.STAGE_LOG``): where the memory and time go.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from correlate.frames import allocator

REPO = Path(__file__).resolve().parents[1]

#: children run with correlate's allocator settings (the I/O floor's child loads polars itself,
#: not through the correlate CLI that sets them)
AS_FROM_A_SHELL = {**os.environ, allocator.VARIABLE: allocator.settings()}

#: memory touched before each timed process (more than any of them holds)
FAULT_IN_BYTES = 6 << 30


def fault_in() -> None:
    """Touch ``FAULT_IN_BYTES`` in a throwaway process, so that the next timed process finds the
    memory it faults in backed by the host. On this VM a page the guest has not touched for a
    while costs several times more to fault in than one freed just before (docs/performance.md,
    "The machine"): without this, each figure depended on what ran before it and when."""
    subprocess.run([sys.executable, "-c", f"b = bytearray({FAULT_IN_BYTES})\n"
                    "for i in range(0, len(b), 4096): b[i] = 1"], check=True)


def correlate_cli(run: Path, out: Path, *extra: str, reports: bool = False
                  ) -> tuple[float, float]:
    """(seconds, peak RSS in MB = 10⁶ bytes) of ``correlate RUN -o OUT --no-reports`` (or with
    its reports) in its own process (RSS of the whole process tree: the largest of the parent
    and, with --cluster, its workers), memory faulted in first."""
    fault_in()
    cmd = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "correlate.cli", "run", str(run),
           "-o", str(out), *([] if reports else ["--no-reports"]), "--memory-limit", "none",
           *extra]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=AS_FROM_A_SHELL)
    dt = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"correlate failed on {run}:\n{proc.stderr[-3000:]}")
    return dt, int(proc.stderr.strip().splitlines()[-1]) * 1024 / 1e6  # time's %M is KiB


#: what Perfetto's UI can hold: a browser tab's memory ("2gb is typical") for the loaded trace,
#: whose representation "can be 2-4x" the trace file (perfetto.dev/docs/visualization/
#: large-traces)
TAB_MEMORY, INFLATION = 2e9, 4


def trace_facts(path: Path) -> str:
    """trace.json's size, events and whether it fits Perfetto's UI by its documented limits."""
    trace = json.loads(path.read_text())
    size = path.stat().st_size
    fits = size * INFLATION <= TAB_MEMORY
    return (f"trace.json {size / 1e6:,.0f} MB, {len(trace['traceEvents']):,} events, "
            f"{trace['otherData']['executions']:,} of {trace['otherData']['executions_in_run']:,}"
            f" executions drawn; ×{INFLATION} its size = {size * INFLATION / 1e9:.2f} GB "
            f"{'≤' if fits else '>'} Perfetto UI's {TAB_MEMORY / 1e9:.0f} GB tab: "
            f"{'opens' if fits else 'does NOT open'} in ui.perfetto.dev")


def io_floor(run: Path, outputs: Path) -> dict[str, float]:
    """Seconds to only read and write what ``correlate RUN`` read and wrote (into ``outputs``):
    each process's run-folder tables read as correlate reads them, every Darshan log decoded
    two at a time as correlate's partitions are, and the output tables (read first, untimed)
    written again through correlate's own sink. No joins, sorts or attribution."""
    from correlate.frames.mappers import local_map
    from correlate.schema import TABLES
    from correlate.schema.run import SNAPSHOT_SUFFIX, STREAM_SUFFIX
    from correlate.sinks import ParquetSink
    from correlate.sources import darshan_logs, run_parts, run_streams
    from correlate.sources.run_folder import FORMAT3_BY_NAME

    t = time.perf_counter()
    rows = 0
    streams: dict[str, list] = {}
    for proc in sorted(d for d in (run / "procs").iterdir() if d.is_dir()):
        names = {p.name for p in proc.iterdir()}
        if not run_streams.is_format3(names):  # formats 1 and 2: a folder of parts per table
            for table_dir in sorted(d for d in proc.iterdir() if d.is_dir()):
                for part in run_parts.part_files(table_dir):
                    rows += run_parts.read(part, TABLES[table_dir.name]).height
            continue
        for name in sorted(names):  # format 3: streams framed, read a table at a time
            if name.endswith(SNAPSHOT_SUFFIX):
                rows += pl.read_ipc(proc / name).height
            elif name.endswith(STREAM_SUFFIX):
                framing, _mtime = run_streams.framed(str(proc / name))
                streams.setdefault(name, []).append(
                    (len(streams.get(name, ())), str(proc / name), framing))
    for name, members in streams.items():
        frame, _rejects = run_streams.read_many(
            members, FORMAT3_BY_NAME[name.removesuffix(STREAM_SUFFIX)])
        rows += 0 if frame is None else frame.height
    read = time.perf_counter() - t
    t = time.perf_counter()
    for _log in local_map(darshan_logs.read_log, darshan_logs.expand_paths([run / "darshan"])):
        pass
    decode = time.perf_counter() - t
    tables = {p.stem: pl.read_parquet(p) for p in sorted(outputs.glob("*.parquet"))}
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        sink = ParquetSink(Path(tmp))
        t = time.perf_counter()
        for name, df in tables.items():
            sink.write(name, df)
        write = time.perf_counter() - t
    return {"read": read, "decode": decode, "write": write, "total": read + decode + write,
            "rows_read": rows}


def io_floor_in_process(run: Path, outputs: Path) -> dict[str, float]:
    """``io_floor`` in a fresh process, as correlate itself is measured (memory faulted in
    first)."""
    fault_in()
    proc = subprocess.run([sys.executable, __file__, "--floor-of", str(run), str(outputs)],
                          capture_output=True, text=True, check=True, env=AS_FROM_A_SHELL)
    return json.loads(proc.stdout.splitlines()[-1])


def attribution_inputs(run: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Segments and executions of a run on one clock, as the attribution sees them."""
    from correlate.engine import number_executions
    from correlate.sources.detect import load
    from correlate.timeline import align

    frames = load(run).conformed()
    ex = number_executions(frames.executions)
    seg = frames.io_segments.with_row_index("seg_id").with_columns(
        pl.col("op").cast(pl.String))
    clocks = pl.concat([align.worker_offsets(frames.clock_samples),
                        align.darshan_offsets(frames.io_segments, frames.clock_markers)])
    return align.align_segments(seg, clocks), ex


def polars_join(seg: pl.DataFrame, ex: pl.DataFrame) -> pl.DataFrame:
    from correlate.attribution import exact

    att = exact.io_to_executions(seg, ex)
    return exact.task_io_totals(exact.task_files(att)).select(
        "execution_id", "read_bytes", "write_bytes")


def pandas_merge_asof(seg: pl.DataFrame, ex: pl.DataFrame) -> pl.DataFrame:
    """The same exact-thread attribution written the usual pandas way, to the same output:
    I/O per execution × file × op (``task_files``), then the per-execution totals."""
    import pandas as pd

    s = seg.select("host", "pid", "thread_id", "path", "op", "length", "host_start_ns",
                   "host_stop_ns").to_pandas()
    e = ex.filter(pl.col("thread_id").is_not_null()).select(
        "host", "pid", "thread_id", "execution_id", "local_start_ns", "local_stop_ns").to_pandas()
    s["mid"] = (s["host_start_ns"] + s["host_stop_ns"]) // 2
    s = s.sort_values("mid")
    e = e.sort_values("local_start_ns")
    m = pd.merge_asof(s, e, left_on="mid", right_on="local_start_ns",
                      by=["host", "pid", "thread_id"], direction="backward")
    m = m[m["mid"] <= m["local_stop_ns"]]
    m["bytes"] = m["length"].astype("float64")
    m["io_time_s"] = (m["host_stop_ns"] - m["host_start_ns"]) / 1e9
    files = m.groupby(["execution_id", "path", "op"], as_index=False, observed=True).agg(
        bytes=("bytes", "sum"), ops=("bytes", "size"), io_time_s=("io_time_s", "sum"))
    files["read_bytes"] = files["bytes"].where(files["op"] == "read", 0.0)
    files["write_bytes"] = files["bytes"].where(files["op"] == "write", 0.0)
    out = files.groupby("execution_id", as_index=False)[["read_bytes", "write_bytes"]].sum()
    out["execution_id"] = out["execution_id"].astype("int64")
    return pl.from_pandas(out)


def timed(fn, *args):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def stages(run: Path, out: Path) -> list[dict]:
    """Each stage of ``correlate RUN --no-reports`` (``correlate.console.STAGE_LOG``): wall and
    CPU seconds, and the process's peak RSS during it. A run of its own: the log resets the
    process's peak at each stage, so ``/usr/bin/time`` would see only the last stage's."""
    from correlate.console import STAGE_LOG

    fault_in()
    with tempfile.TemporaryDirectory(prefix="bench-stages-") as tmp:
        log = Path(tmp) / "stages.jsonl"
        subprocess.run([sys.executable, "-m", "correlate.cli", "run", str(run), "-o", str(out),
                        "--no-reports", "--memory-limit", "none"], check=True,
                       capture_output=True, env={**AS_FROM_A_SHELL, STAGE_LOG: str(log)})
        return [json.loads(line) for line in log.read_text().splitlines()]


def print_stages(rows: list[dict]) -> None:
    print(f"\n{'stage':<26}{'wall s':>8}{'CPU s':>8}{'peak RSS MB':>13}{'RSS after MB':>14}")
    for r in rows:
        print(f"{r['stage']:<26}{r['wall_s']:>8.2f}{r['cpu_s']:>8.2f}{r['peak_rss_mb']:>13,.0f}"
              f"{r['rss_after_mb']:>14,.0f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--cluster-size", type=int, default=100_000,
                    help="size of the run correlated with --cluster local:2 too (must be one of "
                         "--sizes; the cluster holds a second copy of the data)")
    ap.add_argument("--keep", type=Path, default=None,
                    help="keep the generated runs here (and reuse runs already there)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of the largest size, each followed by its I/O floor")
    ap.add_argument("--stages", action="store_true",
                    help="only the largest size's stages (time and peak RSS of each), then stop")
    ap.add_argument("--floor-of", type=Path, nargs=2, metavar=("RUN", "OUTPUTS"),
                    help=argparse.SUPPRESS)  # io_floor_in_process: print io_floor as JSON
    args = ap.parse_args()
    if args.floor_of:
        allocator.keep_freed_c_memory()  # as the correlate CLI does
        print(json.dumps(io_floor(*args.floor_of)))
        return
    from correlate.reports.lifecycles import MAX_TASKS as LIFECYCLES_MAX_TASKS
    sys.path.insert(0, str(REPO))  # testing/ (support code, not installed)
    from testing.same_outputs import differences
    from testing.synthetic import without_thread_ids, write_run

    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    if args.stages:
        n = args.sizes[-1]
        if not (root / f"run-{n}" / "manifest.json").exists():
            write_run(root / f"run-{n}", workers=args.workers, threads=args.threads,
                      executions=n, segments=10 * n)
        print(f"correlate {n:,} executions + {10 * n:,} segments, stage by stage:")
        print_stages(stages(root / f"run-{n}", root / f"out-{n}-stages"))
        return
    rows = []
    for n in args.sizes:
        run = root / f"run-{n}"
        if not (run / "manifest.json").exists():
            t = time.perf_counter()
            write_run(run, workers=args.workers, threads=args.threads, executions=n,
                      segments=10 * n)
            gen = time.perf_counter() - t
        else:
            gen = float("nan")
        dt, rss = correlate_cli(run, root / f"out-{n}")
        lifecycles = (root / f"out-{n}" / "task_lifecycles.jsonl").exists()
        rows.append((n, 10 * n, gen, dt, rss, lifecycles))
        print(f"  {n:>9,} executions: generated in {gen:.1f} s, correlated in {dt:.1f} s, "
              f"{rss:,.0f} MB peak", flush=True)

    print(f"\n{'executions':>11}{'segments':>12}{'correlate s':>13}{'peak RSS MB':>13}"
          f"{'µs/execution':>14}  task_lifecycles.jsonl")
    for n, s, _gen, dt, rss, lifecycles in rows:
        print(f"{n:>11,}{s:>12,}{dt:>13.2f}{rss:>13,.0f}{dt / n * 1e6:>14.1f}  "
              f"{'written' if lifecycles else 'not written'} (correlate writes it up to "
              f"{LIFECYCLES_MAX_TASKS:,} tasks)")
    n = rows[-1][0]
    big, out = root / f"run-{n}", root / f"out-{n}"
    runs, floors = [rows[-1][3]], [io_floor_in_process(big, out)]
    whole = [correlate_cli(big, root / f"out-{n}-reports", reports=True)]
    rss = rows[-1][4]
    for _ in range(args.repeat - 1):
        dt, peak = correlate_cli(big, out)
        runs.append(dt)
        rss = max(rss, peak)
        floors.append(io_floor_in_process(big, out))
        whole.append(correlate_cli(big, root / f"out-{n}-reports", reports=True))
    print(f"\nlargest, {len(runs)} runs, each followed by its I/O floor (fresh process: read "
          "run folder + decode DXT + write outputs, no joins):")
    for dt, f in zip(runs, floors, strict=True):
        print(f"  correlate {dt:5.1f} s   floor {f['total']:5.1f} s (read {f['read']:.1f}, decode "
              f"{f['decode']:.1f}, write {f['write']:.1f})   ×{dt / f['total']:.2f} the floor")
    ratios = [dt / f["total"] for dt, f in zip(runs, floors, strict=True)]
    print(f"largest: median {statistics.median(runs):.1f} s, best {min(runs):.1f} s (target ≤ 20 s "
          f"for 1M + 10M), peak {rss / 1e3:.2f} GB (target ≤ 4); median ×"
          f"{statistics.median(ratios):.2f} the I/O floor")
    times = [w / dt for (w, _), dt in zip(whole, runs, strict=True)]
    print("\nwhole command with reports, each after the tables-only run above: " + ", ".join(
        f"{w:.1f} s ×{w / dt:.2f}" for (w, _), dt in zip(whole, runs, strict=True))
        + f"; median ×{statistics.median(times):.2f} tables-only (target ≤ 2), peak "
        f"{max(r for _, r in whole) / 1e3:.2f} GB (target ≤ 4)")
    print(trace_facts(root / f"out-{n}-reports" / "trace.json"))
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        print(f"growth {first[0]:,} → {last[0]:,} executions ({last[0] / first[0]:.0f}×): time "
              f"×{last[3] / first[3]:.1f}, per-execution cost ×"
              f"{(last[3] / last[0]) / (first[3] / first[0]):.2f} (1.0 = linear"
              f"{'' if first[5] == last[5] else '; only the smaller run wrote task_lifecycles.jsonl'})")

    threadless = without_thread_ids(big, root / f"run-{n}-v1")
    dt_v1, rss_v1 = correlate_cli(threadless, root / f"out-{n}-v1")
    summary = {d: json.loads((root / d / "summary.json").read_text())
               for d in (f"out-{n}", f"out-{n}-v1")}
    methods = summary[f"out-{n}-v1"]["io"]["segments_by_method"]
    print(f"\nwithout thread ids (DXT v1, Darshan before 3.5: segments split over the windows "
          f"they overlap): {dt_v1:.1f} s, ×{dt_v1 / statistics.median(runs):.1f} the median "
          f"above, peak {rss_v1 / 1e3:.2f} GB (target ≤ 4); segments by method {methods}; "
          f"same I/O total: "
          f"{summary[f'out-{n}']['io']['total'] == summary[f'out-{n}-v1']['io']['total']}")

    seg, ex = attribution_inputs(big)
    t_pl, got_pl = timed(polars_join, seg, ex)
    t_pd, got_pd = timed(pandas_merge_asof, seg, ex)
    equal = got_pl.sort("execution_id").equals(got_pd.sort("execution_id").select(
        got_pl.columns).cast(got_pl.schema))
    print(f"\nattribution join on {seg.height:,} segments × {ex.height:,} executions: polars "
          f"{t_pl:.2f} s ({seg.height / t_pl / 1e6:.2f} M seg/s), pandas merge_asof "
          f"{t_pd:.2f} s ({seg.height / t_pd / 1e6:.2f} M seg/s): polars ×{t_pd / t_pl:.1f}; "
          f"per-execution bytes identical: {equal}")
    del seg, ex

    size = args.cluster_size if args.cluster_size in args.sizes else args.sizes[0]
    dt_c, rss_c = correlate_cli(root / f"run-{size}", root / "out-cluster", "--cluster",
                                "local:2")
    single = next(r[3] for r in rows if r[0] == size)
    print(f"--cluster local:2 on {size:,} executions: {dt_c:.1f} s vs single-process "
          f"{single:.1f} s: speed-up ×{single / dt_c:.2f} (includes starting the cluster); "
          f"outputs identical row for row: "
          f"{not differences(root / f'out-{size}', root / 'out-cluster')}")
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_darshan import make_segments, whole_command

    from testing.darshan_writer import write_log

    log = write_log(root / "dxt-v2-1M.darshan", make_segments(1_000_000, 4096), layout="v2-40",
                    posix=False)
    whole_command(log, 5)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
