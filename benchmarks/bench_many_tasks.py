"""Benchmark: what `collect` costs jobs of many short tasks, and where each microsecond is paid.

Workloads (``benchmarks/many_tasks_job.py``, LocalCluster of 2 worker processes x 2 threads):
``tiles`` (5 tasks per tile of 1-20 ms: 64 KiB reads, numpy smoothing, pure-Python statistics,
a neighbour tile moved between workers, 16 KiB writes), ``noop`` (``client.map(inc, range(N))``)
and ``coro`` (``async def`` tasks with a few awaits each).

1. Overhead: each workload plain and under ``collect`` in every mode (``off``, ``sample``,
   ``yappi``, and ``darshan`` = ``--profile off`` + Darshan DXT when a runtime is found:
   ``DARSHAN_RUNTIME``, ``darshan-config``, common paths), and ``yappi-alone`` (the plain job
   with Yappi started in each worker as ``yappi`` starts it, and nothing else: Yappi's own
   floor, ``many_tasks_job.py --yappi-alone``), and ``null`` (the plain job with a scheduler
   and a worker plugin whose hooks do nothing, ``null_plugins.py``: Dask's own cost of calling
   a plugin on every transition), interleaved, ``--repeat`` times, in
   one invocation. Reports medians of the whole command's wall time and of the job's own timer
   (``compute_seconds``: the workload, cluster start-up excluded), as ratios to plain, and the
   CPU time of all the job's processes (``getrusage`` of the reaped children: the command,
   its cluster's workers), the measure that other load on a shared machine disturbs least,
   and the CPU µs per task it adds; and the CPU each kind of process used during the workload
   alone (``cpu_roles``: the scheduler's, which a LocalCluster shares with the client, and the
   workers'), to tell which side a difference is on.
2. Where (``--breakdown``): one more run per workload and mode with every collector hook
   wrapped in a timer (a ``sitecustomize`` on ``PYTHONPATH`` patches the plugin classes in each
   process; the timers' own cost is measured in each process and subtracted). Reports µs per
   task by where it is paid: the scheduler's event loop (its plugin hooks), the scheduler's
   flush thread (rows expanded, keys rendered, parts written), the workers' event loops
   (transition hook, execute/submit wrappers, periodic callback incl. profile snapshots), the
   task threads (the ``_timed`` wrapper around the task function: clocks, tags, row), the audit
   hook, the workers' flush threads and sampler threads, and start-up (plugin set-up; the
   imports a worker adds, timed in a fresh process). The garbage collector's time in each
   process is a row of its own, taken out of the row of the hook that was running when a
   threshold tripped; the plain job's collections (Dask's own) are in a column beside it: the
   objects the collectors keep alive make the job's collections run more often and longer. Yappi's
   per-call cost on the task threads has no hook to time: it is ``yappi-alone`` of part 1.
   With Darshan, its cost per process (``darshan_process_cost``).

    python benchmarks/bench_many_tasks.py [--repeat 3] [--tiles 600] [--tasks 5000]
        [--workloads tiles,noop,coro] [--modes off,sample,yappi,yappi-alone,darshan] [--breakdown]
        [--no-overhead] [--rows] [--baseline-tree DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "benchmarks" / "many_tasks_job.py"
NULL_PLUGINS = REPO / "benchmarks" / "null_plugins.py"
#: issue 20's targets on the tiles workload, whole job
TARGETS = {"off": 0.03, "sample": 0.10, "yappi": 0.15, "darshan": 0.05}

SITE = textwrap.dedent('''
    """Benchmark instrumentation (bench_many_tasks.py --breakdown): times every collector hook."""
    import functools, json, os, sys, threading, time
    _OUT = os.environ.get("BENCH_HOOK_TIMES")
    if _OUT and not os.environ.get("DASK_CORRELATE_RUN_DIR"):
        # the plain job: its garbage collections only (Dask's own), for the collectors' rows
        # to be read against; rewritten every 0.2 s (plain workers have no teardown hook)
        import gc, multiprocessing
        GC = {"start": 0, "ns": 0, "n": 0}

        def gc_plain(phase, info):
            if phase == "start":
                GC["start"] = time.thread_time_ns()
            else:
                GC["ns"] += time.thread_time_ns() - GC["start"]
                GC["n"] += 1
        gc.callbacks.append(gc_plain)

        def dump_plain():
            time.sleep(0.2)  # (a spawned worker's argv and parent are set after start-up)
            if sys.argv[0] == "-c":
                return  # multiprocessing's resource tracker
            # (a Nanny's worker is a multiprocessing child; the job's process is the main one)
            role = ("scheduler" if multiprocessing.current_process().name == "MainProcess"
                    else "worker")
            name = f"garbage collector ({role}, any thread; not in the rows above)"
            path = os.path.join(_OUT, f"{role}-{os.getpid()}.json")
            while True:
                time.sleep(0.2)
                with open(path + ".tmp", "w") as fh:
                    json.dump({"role": role, "parts": {name: [GC["ns"], GC["n"]]}}, fh)
                os.replace(path + ".tmp", path)
        threading.Thread(target=dump_plain, daemon=True).start()
    elif _OUT and os.environ.get("DASK_CORRELATE_RUN_DIR"):
        pc = time.thread_time_ns  # CPU of the calling thread: GIL waits are not cost
        GCL = threading.local()  # this thread's garbage-collection CPU so far

        def now():
            """The calling thread's CPU less its collections: a collection runs in whichever
            region allocates when a threshold trips, so it is counted in its own row only."""
            return pc() - getattr(GCL, "ns", 0)
        ACC = {}

        def add(name, ns):
            a = ACC.get(name)
            if a is None:
                a = ACC[name] = [0, 0]
            a[0] += ns
            a[1] += 1

        def timed(name, fn):
            @functools.wraps(fn)
            def w(*a, **k):
                t = now()
                try:
                    return fn(*a, **k)
                finally:
                    add(name, now() - t)
            return w

        def calibrate():
            """ns a timer wrapper adds per call (subtracted from every timed call)."""
            def nothing(*a, **k):
                return None
            w = timed("_calibration", nothing)
            best = []
            for _ in range(5):
                t = now()
                for _ in range(20000):
                    w(1, 2)
                mid = now()
                for _ in range(20000):
                    nothing(1, 2)
                best.append(((mid - t) - (now() - mid)) / 20000)
            ACC.pop("_calibration", None)
            return min(best)

        ROLE = ["?"]

        def dump():
            over = calibrate()
            ACC["audit hook (every audited event; counted, cost timed in a loop)"] = [
                hook_cost(), sum(EVENTS)]
            out = {"role": ROLE[0], "pid": os.getpid(), "timer_ns": over,
                   "parts": {k: [v[0] - (0 if k.startswith(("audit", "garbage")) else
                                         over * v[1] * NESTED.get(k, 1)), v[1]]
                             for k, v in ACC.items()}}
            path = os.path.join(_OUT, f"{ROLE[0]}-{os.getpid()}-{now()}.json")
            with open(path, "w") as fh:
                json.dump(out, fh)

        NESTED = {}  # part -> timer pairs per call (for the subtraction)

        from collectors import coroutine_steps, file_opens, profiling, sink
        from collectors import scheduler_plugin as sp
        from collectors import worker_plugin as wp

        S, W = sp.CorrelateSchedulerPlugin, wp.CorrelateWorkerPlugin
        for m in ("transition", "update_graph", "add_worker", "remove_worker", "add_client",
                  "remove_client"):
            setattr(S, m, timed(f"scheduler loop: {m}", getattr(S, m)))
        W.transition = timed("worker loop: transition hook", W.transition)
        W._on_loop = timed("worker loop: periodic (transfers, samples, snapshot)", W._on_loop)
        W._setup = timed("start-up: worker plugin setup", W._setup)
        S._start = timed("start-up: scheduler plugin setup", S._start)
        W._record_coroutine = timed("worker loop: coroutine rows", W._record_coroutine)
        orig_step = coroutine_steps.CoroutineSteps._step

        def _step(self, method, *args):
            t0 = now()
            inner = 0
            def m(*a):
                nonlocal inner
                s = now()
                try:
                    return method(*a)
                finally:
                    inner = now() - s
            try:
                return orig_step(self, m, *args)
            finally:
                add("worker loop: coroutine step wrapper", now() - t0 - inner)
        coroutine_steps.CoroutineSteps._step = _step
        NESTED["worker loop: coroutine step wrapper"] = 2

        orig_sample = profiling.StackSampler.sample_once
        profiling.StackSampler.sample_once = timed("sampler thread: stack samples", orig_sample)
        orig_flush = sink.ProcessSink.flush

        def flush(self):
            t = now()
            try:
                return orig_flush(self)
            finally:
                add(f"{ROLE[0]} flush thread: all", now() - t)
        sink.ProcessSink.flush = flush
        orig_write = sink.ProcessSink._write

        def _write(self, *a, **k):
            t = now()
            try:
                return orig_write(self, *a, **k)
            finally:
                add(f"{ROLE[0]} flush thread: rows to parts", now() - t)
        sink.ProcessSink._write = _write
        import gc

        def gc_timer(phase, info):
            """Collections run on whichever thread allocates when a threshold trips: their
            time is taken out of the row that was running then (``now``)."""
            if phase == "start":
                GCL.start = pc()
            else:
                ns = pc() - GCL.start
                GCL.ns = getattr(GCL, "ns", 0) + ns
                add(f"garbage collector ({ROLE[0]}, any thread; not in the rows above)", ns)
        gc.callbacks.append(gc_timer)
        hook = file_opens._hook
        EVENTS = [0, 0]  # audited events, opens; their cost is measured at dump time

        def counted(event, args):
            EVENTS[event == "open"] += 1
            return hook(event, args)
        file_opens._hook = counted

        def hook_cost():
            """µs the audit hook spends on this process's events: each kind timed in a loop
            here (a timer per event would cost more than the hook)."""
            import contextvars, sys
            rows = []
            def loop(event, args, n=100000):
                best = float("inf")
                for _ in range(3):
                    t = time.perf_counter_ns()
                    for _ in range(n):
                        hook(event, args)
                    best = min(best, (time.perf_counter_ns() - t) / n)
                return best
            other = loop("object.__getattr__", ())
            ctx = contextvars.copy_context()
            def in_task():
                file_opens.CURRENT.set((1, lambda table, row: rows.append(row)))
                return loop("open", (sys.executable, "r", 0), 20000)
            opened = ctx.run(in_task)
            return EVENTS[0] * other + EVENTS[1] * opened

        orig_timed = W._timed

        def _timed(self, key, seq, fn, *args, **kwargs):
            t0 = now()
            inner = 0
            def f(*a, **k):
                nonlocal inner
                s = now()
                try:
                    return fn(*a, **k)
                finally:
                    inner = now() - s
            try:
                return orig_timed(self, key, seq, f, *args, **kwargs)
            finally:
                add("task thread: _timed around the task", now() - t0 - inner)
        W._timed = _timed
        NESTED["task thread: _timed around the task"] = 2

        orig_patch = W._patch

        def _patch(self, worker):
            for executor in worker.executors.values():
                if "ThreadPoolExecutor" in type(executor).__name__:
                    executor.submit = timed("_dask_submit", executor.submit)
            orig_patch(self, worker)
            worker.execute = timed("worker loop: execute wrapper (sync part)", worker.execute)
            for name in self._orig_submits:
                worker.executors[name].submit = timed("_our_submit", worker.executors[name].submit)
        W._patch = _patch

        orig_setup, orig_teardown, orig_close = W._setup, W._teardown, S.close_sink

        def _setup2(self, worker):
            ROLE[0] = "worker"
            return orig_setup(self, worker)
        W._setup = _setup2

        def _start2(self, scheduler, _orig=S._start):
            ROLE[0] = "scheduler"
            return _orig(self, scheduler)
        S._start = _start2

        def _teardown(self, worker):
            r = orig_teardown(self, worker)
            ours, dasks = ACC.pop("_our_submit", [0, 0]), ACC.pop("_dask_submit", [0, 0])
            ACC["worker loop: submit wrapper"] = [ours[0] - dasks[0], ours[1]]
            NESTED["worker loop: submit wrapper"] = 2
            dump()
            return r
        W._teardown = _teardown

        def close_sink(self):
            r = orig_close(self)
            dump()
            return r
        S.close_sink = close_sink
''')

IMPORTS = textwrap.dedent("""
    import time, sys
    import distributed.worker  # already in every worker before the plugin
    out = {}
    for name in sys.argv[1:]:
        t = time.perf_counter()
        __import__(name)
        out[name] = time.perf_counter() - t
    print(" ".join(f"{k}={v}" for k, v in out.items()))
""")


def run(workload: str, mode: str | None, work: Path, args: argparse.Namespace,
        darshan: str | None, env: dict[str, str] | None = None
        ) -> tuple[float, float, int, float, tuple[float, ...]]:
    """One job; ``mode`` ``NAME@base`` runs the collectors of ``--baseline-tree``."""
    tree = REPO
    if mode is not None and mode.endswith("@base"):
        mode, tree = mode[:-5], args.baseline_tree
    env = dict(env or os.environ)  # the workers import the collectors of this tree
    env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
    job = [sys.executable, str(JOB), workload, "--out", str(work / "tiles"), "--tiles",
           str(args.tiles), "--tasks", str(args.tasks)]
    if mode == "null":  # plugins whose hooks do nothing: Dask's cost of calling them
        env.update({f"DASK_DISTRIBUTED__{role}__PRELOAD": repr([str(NULL_PLUGINS)])
                    for role in ("SCHEDULER", "WORKER")})
        cmd = job
    elif mode is None or mode == "yappi-alone":
        cmd = job + (["--yappi-alone"] if mode else [])
    else:
        out = work / f"run-{workload}-{mode}-{time.monotonic_ns()}"
        profile = "off" if mode == "darshan" else mode
        cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(out), "--profile",
               profile, "--darshan", darshan if mode == "darshan" else "off", "--", *job]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tree)
    total = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    compute = float(re.search(r"compute_seconds=([0-9.]+)", proc.stdout).group(1))
    tasks = int(re.search(r"tasks=([0-9]+)", proc.stdout).group(1))
    roles = tuple(float(x) for x in re.search(r"cpu_roles=([0-9.,]+)", proc.stdout).group(1)
                  .split(","))
    if mode not in (None, "yappi-alone", "null"):
        from collectors.sink import closing_record  # (this tree's: it reads older folders)

        for proc in out.glob("procs/*"):
            errors = (closing_record(proc) or {}).get("hook_errors")
            if errors:
                print(f"hook errors in {workload} {mode}: {errors}")
        shutil.rmtree(out, ignore_errors=True)
    return compute, total, tasks, cpu, roles


def overhead(args: argparse.Namespace, modes: list[str], work: Path, lib: str | None) -> None:
    for workload in args.workloads:
        run(workload, None, work, args, lib)  # warm caches (imports, page cache, tile files)
        order = [None, *modes]
        if args.baseline_tree:
            order = [None, *(x for m in modes
                             for x in ((m,) if m in ("yappi-alone", "null") else
                                       (f"{m}@base", m)))]
        res: dict[str | None, list[tuple[float, float, int, float, tuple[float, ...]]]] = {m: [] for m in order}
        for _ in range(args.repeat):
            for m in res:
                res[m].append(run(workload, m, work, args, lib))
        tasks = res[None][0][2]

        def med(m: str | None, i: int, res=res) -> float:
            return statistics.median(r[i] for r in res[m])

        base_c, base_t, base_cpu = med(None, 0), med(None, 1), med(None, 3)
        print(f"\n{workload}: {tasks} tasks, 2 workers x 2 threads, {args.repeat} interleaved "
              f"repetitions, medians; plain: {base_t:.2f} s whole job, {base_cpu:.2f} s CPU "
              f"(all processes), {base_c:.2f} s in job")
        print("| mode | whole job s | whole job | CPU s | CPU | CPU µs/task added | in job s "
              "| in job | target (whole job) | CPU µs/task added, paired |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for m in res:
            c, t, cpu = med(m, 0), med(m, 1), med(m, 3)
            target = f"≤ {TARGETS[m]:.0%}" if m in TARGETS and workload == "tiles" else ""
            target = "" if m and m.endswith("@base") else target
            print(f"| {m or 'plain'} | {t:.2f} | {t / base_t - 1:+.1%} | {cpu:.2f} | "
                  f"{cpu / base_cpu - 1:+.1%} | {(cpu - base_cpu) / tasks * 1e6:+.0f} | "
                  f"{c:.2f} | {c / base_c - 1:+.1%} | {target} | {paired(res, m, tasks)} |")
        print(f"\n{workload}: CPU during the workload by process (``cpu_roles``: cluster "
              "start-up and shutdown left out; the scheduler's process is the client's too), "
              "µs per task; medians, and paired with plain's run of the same repetition")
        print("| mode | scheduler | workers | scheduler, paired | workers, paired |")
        print("|---|---:|---:|---:|---:|")
        for m in res:
            runs = [r[4] for r in res[m]]
            cells = [f"{statistics.median(r[i] for r in runs) / tasks * 1e6:.0f}"
                     for i in range(2)]
            for i in range(2):
                diffs = [r[i] - b[4][i] for r, b in zip(runs, res[None], strict=True)]
                cells.append(f"{statistics.median(diffs) / tasks * 1e6:+.0f}" if m else "")
            print(f"| {m or 'plain'} | " + " | ".join(cells) + " |")
        sys.stdout.flush()


#: modes measured against another mode of the same repetition as well as against plain: the
#: collectors' own share on top of what the tool they wrap costs by itself
PAIRED_WITH = {"darshan": "off", "yappi": "yappi-alone"}


def paired(res: dict[str | None, list[tuple[float, float, int, float, tuple[float, ...]]]], mode: str | None,
           tasks: int) -> str:
    """Median over repetitions of the CPU µs per task ``mode`` used more than the plain job
    (or the mode ``PAIRED_WITH`` names) in the same repetition, and than its ``@base`` run just
    before it: the machine's drift from one minute to the next (tens of per cent on a shared
    VM) cancels in each difference, which the medians of the columns before do not."""
    if mode is None:
        return ""
    out = []
    for other in (PAIRED_WITH.get(mode), f"{mode}@base"):  # None: the plain job
        if other in res:
            diffs = [r[3] - b[3] for r, b in zip(res[mode], res[other], strict=True)]
            out.append(f"{statistics.median(diffs) / tasks * 1e6:+.0f} (vs {other or 'plain'})")
    return ", ".join(out)


def breakdown(args: argparse.Namespace, modes: list[str], work: Path, lib: str | None) -> None:
    site = work / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITE)
    modes = ["plain", *modes]
    for workload in args.workloads:
        table: dict[str, dict[str, float]] = {}
        for m in modes:
            times = work / f"times-{workload}-{m}"
            times.mkdir()
            env = dict(os.environ, BENCH_HOOK_TIMES=str(times), PYTHONPATH=os.pathsep.join(
                [str(site), str(REPO), os.environ.get("PYTHONPATH", "")]))
            _c, _t, tasks, _cpu, _roles = run(workload, None if m == "plain" else m, work,
                                              args, lib, env=env)
            parts: dict[str, float] = {}
            procs = [json.loads(p.read_text()) for p in times.glob("*.json")]
            for proc in procs:
                for name, (ns, _n) in proc["parts"].items():
                    parts[name] = parts.get(name, 0.0) + ns / tasks / 1000
            if not procs:
                raise SystemExit(f"--breakdown: no process reported its hook times (the "
                                 f"instrumentation in {site / 'sitecustomize.py'} no longer "
                                 f"matches the collectors?)")
            parts["(processes reporting)"] = len(procs)
            table[m] = parts
        names = sorted({n for p in table.values() for n in p})
        print(f"\n{workload}: µs per task by where it is paid (summed over processes; "
              f"{tasks} tasks; one instrumented run per mode, timer cost subtracted; plain: its "
              f"garbage collections only)")
        print("| where | " + " | ".join(modes) + " |")
        print("|---|" + "---:|" * len(modes))
        for n in names:
            if n == "(processes reporting)":
                continue
            print(f"| {n} | " + " | ".join(f"{table[m].get(n, 0.0):.2f}" for m in modes) + " |")
        print("| processes reporting | " + " | ".join(
            str(int(table[m]["(processes reporting)"])) for m in modes) + " |")
        sys.stdout.flush()
    mods = ["collectors.worker_plugin", "correlate.schema.run", "yappi"]
    rows = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", IMPORTS, *mods], capture_output=True,
                             text=True, check=True, cwd=REPO).stdout.split()
        rows.append({k: float(v) for k, v in (x.split("=") for x in out)})
    print("\nimports a worker adds (fresh process after `import distributed.worker`, best of 3, "
          "ms, cumulative order):")
    for k in mods:
        print(f"| {k} | {min(r[k] for r in rows) * 1000:.0f} |")


ROWS = textwrap.dedent('''
    """µs per row for the sink to write a part, for rows shaped like a tiles run's."""
    import tempfile, time
    from pathlib import Path
    from collectors import sink as s
    from correlate.schema import run as schema

    n = 20000
    key = "('smooth-0123456789abcdef0123456789abcdef', {}, 3)"
    shapes = {
        schema.SCHEDULER_TRANSITIONS: [(
            1_700_000_000_000_000_000 + i, key.format(i), "smooth", "smooth-0123", "processing",
            "memory", f"task-finished-{1e9 + i}", "tcp://127.0.0.1:40000" if i % 3 else None,
            140_000_000_000 + i if i % 3 else None, 524288 if i % 3 else None,
            "ndarray" if i % 3 else None) for i in range(n)],
        schema.WORKER_TRANSITIONS: [(
            1_700_000_000_000_000_000 + i, key.format(i), "ready", "executing",
            f"compute-task-{1e9 + i}") for i in range(n)],
    }
    t0 = time.process_time()
    first = s.ProcessSink(Path(tempfile.mkdtemp()), {schema.WORKER_TRANSITIONS.name: schema.WORKER_TRANSITIONS})
    first._write(schema.WORKER_TRANSITIONS.name, shapes[schema.WORKER_TRANSITIONS][:10])
    print(f"first-part {(time.process_time() - t0) * 1e3:.3f}")
    for table, rows in shapes.items():
        sink = s.ProcessSink(Path(tempfile.mkdtemp()), {table.name: table})
        best = 1e9
        for _ in range(5):
            t0 = time.perf_counter()
            sink._write(table.name, rows)
            best = min(best, time.perf_counter() - t0)
        print(f"{table.name} {best / n * 1e6:.3f}")
''')


def rows(args: argparse.Namespace) -> None:
    """A part's cost per row, and the first part's in a fresh process (imports included), this
    tree against --baseline-tree, alternating processes."""
    trees = [("this tree", REPO)]
    if args.baseline_tree:
        trees.insert(0, ("baseline", args.baseline_tree))
    best: dict[tuple[str, str], float] = {}
    for _ in range(3):
        for name, tree in trees:
            env = dict(os.environ, PYTHONPATH=str(tree))
            out = subprocess.run([sys.executable, "-c", ROWS], capture_output=True,
                                 text=True, check=True, cwd=tree, env=env).stdout
            for line in out.splitlines():
                table, value = line.split()
                best[(name, table)] = min(best.get((name, table), 1e9), float(value))
    print("\nparts: the first part of a fresh process (ms of CPU, the writer's imports "
          "included), then µs per row of a 20,000-row part; best of 3 processes (x 5 parts)")
    print("| tree | table | cost |\n|---|---|---:|")
    for (name, table), v in best.items():
        unit = "ms" if table == "first-part" else "µs/row"
        print(f"| {name} | {table} | {v:.2f} {unit} |")


def darshan_process_cost(lib: str, work: Path, repeat: int) -> None:
    """What Darshan costs every process it is preloaded into (the job's short-lived
    subprocesses too: ``uname`` and the like), by DXT cap: CPU of a fresh ``python -c pass``,
    interleaved, medians. DXT zeroes a buffer of its whole cap at exit."""
    from collectors import darshan_env

    caps = {"no Darshan": None, f"--dxt-segments {darshan_env.DXT_SEGMENTS:,} (default)":
            darshan_env.DXT_SEGMENTS, "--dxt-segments 5,000,000 (the cap before)": 5_000_000}
    envs = {}
    for name, segments in caps.items():
        if segments is not None:
            folder = work / f"dxt-{segments}"
            envs[name] = {**os.environ,
                          **darshan_env.environment(lib, folder, dxt_segments=segments)}
        else:
            envs[name] = dict(os.environ)
    cpu: dict[str, list[float]] = {name: [] for name in caps}
    for _ in range(max(repeat, 5)):
        for name, env in envs.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    base = statistics.median(cpu["no Darshan"])
    print("\nDarshan's cost per process (`python -c pass`, CPU of the whole process, "
          f"medians of {len(cpu['no Darshan'])} interleaved)")
    print("| configuration | CPU ms | added ms |\n|---|---:|---:|")
    for name, values in cpu.items():
        m = statistics.median(values)
        print(f"| {name} | {m * 1e3:.1f} | {(m - base) * 1e3:+.1f} |")


def compile_bytecode(tree: Path) -> None:
    """The collectors' bytecode, as a user's install has it: pip compiles a package's modules
    when it installs them (Dask's here too), and an editable checkout is compiled at its first
    import. Where ``PYTHONDONTWRITEBYTECODE`` is set (as on the machine these figures were
    measured on) nothing would write it, and every scheduler, worker and `collect` process of
    every job would compile the collectors' modules again (tens of ms each): a cost of this
    machine's setting, not of the collectors. Python reads existing bytecode whatever the
    setting."""
    import compileall

    for package in ("collectors", "correlate"):
        if (tree / package).is_dir():
            compileall.compile_dir(tree / package, quiet=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tiles", type=int, default=600, help="tiles workload: 5 tasks per tile")
    ap.add_argument("--tasks", type=int, default=5000, help="noop and coro workloads")
    ap.add_argument("--workloads", default="tiles,noop,coro")
    ap.add_argument("--modes", default="off,sample,yappi,yappi-alone,darshan")
    ap.add_argument("--breakdown", action="store_true", help="µs per task by where it is paid")
    ap.add_argument("--no-overhead", action="store_true", help="skip the overhead runs")
    ap.add_argument("--rows", action="store_true",
                    help="a part's cost: the first in a fresh process, and µs per row (and the "
                         "baseline's)")
    ap.add_argument("--baseline-tree", type=Path, default=None,
                    help="a source tree (e.g. `git archive REV collectors correlate`) whose "
                         "collectors run as MODE@base, interleaved with this tree's")
    args = ap.parse_args()
    args.workloads = args.workloads.split(",")
    sys.path.insert(0, str(REPO))
    from collectors.darshan_env import find_runtime

    lib, how = find_runtime("auto")
    modes = [m for m in args.modes.split(",") if m != "darshan" or lib]
    if not lib:
        print(f"darshan: not measured ({how})")
    for tree in (REPO, args.baseline_tree):
        if tree is not None:
            compile_bytecode(tree)
    work = Path(tempfile.mkdtemp(prefix="bench-many-tasks-"))
    try:
        if not args.no_overhead:
            overhead(args, modes, work, lib)
        if lib and "darshan" in modes:
            darshan_process_cost(lib, work, args.repeat)
        if args.breakdown:
            breakdown(args, [m for m in modes if m not in ("darshan", "yappi-alone", "null")],
                      work, lib)
        if args.rows:
            rows(args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
