"""Benchmark: where Yappi's cost comes from inside a Dask worker, one factor at a time.

The two kinds of thread a worker has, each measured alone (so GIL hand-offs between them do
not blur the figures): 4 "executor" threads running pure-Python task code (many small calls
and a builtin per iteration), and an event-loop thread processing small coroutines (like the
worker's comms and transitions). Interleaved configurations, median of ``--repeat``:

- no profiler (baseline);
- Yappi wall clock over all threads, without a tag callback;
- + the tag callback as a Python function;
- + the tag callback as a C-level callable (``functools.partial(getattr, local, "seq", 0)``:
  no Python frame per profiled call);
- + the same on a ``threading.local`` subclass with a class-level default, so threads that
  never ran a task (the event loop) raise no AttributeError per profiled call;
- CPU clock instead of wall; builtins profiled too.

Checks first that the C-level tag splits stats per execution.

    python benchmarks/bench_yappi.py [--repeat 5] [--calls 150000] [--rounds 2000]
    python benchmarks/bench_yappi.py --snapshots-only | --memory-only
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import yappi


def leaf(x: int) -> int:
    return x * 2 + 1


def middle(x: int) -> int:
    return leaf(x) + leaf(x + 1)


def task_work(calls: int, local: threading.local, seq: int) -> int:
    local.seq = seq
    total = 0
    for i in range(calls // 3):
        total += middle(i) & 0xFF
        total += len(str(i))  # a builtin call per iteration
    local.seq = 0
    return total


def run_tasks(calls: int, local: threading.local) -> float:
    """Four task threads at once (GIL-bound, like a worker's executor threads)."""
    threads = [threading.Thread(target=task_work, args=(calls, local, n + 1))
               for n in range(4)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - t


async def _tick(i: int) -> int:
    await asyncio.sleep(0)
    return i + 1


async def _event_loop_work(rounds: int) -> None:
    for _ in range(rounds):
        await asyncio.gather(*(_tick(i) for i in range(50)))


def run_event_loop(rounds: int) -> float:
    """An event loop thread processing small coroutines (like a worker's comms)."""
    th = threading.Thread(target=lambda: asyncio.run(_event_loop_work(rounds)))
    t = time.perf_counter()
    th.start()
    th.join()
    return time.perf_counter() - t


class TagLocal(threading.local):
    """A class-level default: threads that never ran a task find ``seq`` without the
    AttributeError that ``getattr(local, "seq", 0)`` raises and swallows on every call."""

    seq = 0


def python_tag(local: threading.local):  # type: ignore[no-untyped-def]
    def tag() -> int:
        return getattr(local, "seq", 0)
    return tag


def c_tag(local: threading.local):  # type: ignore[no-untyped-def]
    return functools.partial(getattr, local, "seq", 0)


CONFIGS = {
    # name: (yappi clock or None, tag factory or None, builtins, TagLocal (class default) or
    # a plain threading.local)
    "no profiler (baseline)": (None, None, False, False),
    "yappi wall, no tag": ("wall", None, False, False),
    "yappi wall, Python tag callback": ("wall", python_tag, False, False),
    "yappi wall, C-level tag callback": ("wall", c_tag, False, False),
    "yappi wall, C tag, class default": ("wall", c_tag, False, True),
    "yappi cpu, C tag, class default": ("cpu", c_tag, False, True),
    "yappi wall, C tag, default, builtins": ("wall", c_tag, True, True),
}


def measure(name: str, work) -> float:  # type: ignore[no-untyped-def]
    clock, tag, builtins, class_default = CONFIGS[name]
    local = TagLocal() if class_default else threading.local()
    if clock:
        yappi.clear_stats()
        yappi.set_clock_type(clock)
        yappi.set_tag_callback(tag(local) if tag else None)
        yappi.start(builtins=builtins, profile_threads=True)
    try:
        return work(local)
    finally:
        if clock:
            yappi.stop()
            yappi.set_tag_callback(None)
            yappi.clear_stats()


def check_tags_split_executions(local: threading.local) -> None:
    """The C-level tag must split stats per execution exactly as the Python one does."""
    import _yappi

    yappi.clear_stats()
    yappi.set_tag_callback(functools.partial(getattr, local, "seq"))
    yappi.start(profile_threads=True)
    run_tasks(3000, local)
    yappi.stop()
    tags: set[int] = set()
    _yappi.enum_func_stats(lambda e: tags.add(e[12]) if e[0] == "leaf" else None, {})
    yappi.set_tag_callback(None)
    yappi.clear_stats()
    assert tags == {1, 2, 3, 4}, f"tags seen on leaf(): {tags}"


def snapshot_reads(sizes: tuple[int, ...] = (1_000, 4_000, 16_000, 64_000)) -> None:
    """What reading executions' profiles costs as executions accumulate. With a tag per
    execution (as before the tag pool): 100 executions' entries read tag by tag (each read
    walks every tag held) and all entries read in one walk. With the collectors' tag pool:
    ``YappiProfile.finish`` per execution as it ends (its slot read and given back). Each in a
    child process: Yappi keeps every tag it made."""
    per_tag = f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
import _yappi
from collectors.profiling import TaskTags, YappiProfile
prof = YappiProfile(TaskTags(), "wall")
prof.start()
on, off = prof.task_hooks()
sys.setprofile(None)
def leaf(x): return x
def task(x): return leaf(x) + leaf(x + 1)
done = 0
print("| executions so far | 100 read tag by tag | all read at once |")
print("|---:|---:|---:|")
for n in {sizes!r}:
    while done < n:
        done += 1
        prof.tags.local.seq = done
        on(); task(done); off()
    prof.tags.local.seq = 0
    t = time.perf_counter()
    for seq in range(n - 99, n + 1):
        _yappi.enum_func_stats(lambda e: None, {{"tag": seq}})
    by_tag = time.perf_counter() - t
    t = time.perf_counter()
    _yappi.enum_func_stats(lambda e: None, {{}})
    whole = time.perf_counter() - t
    print(f"| {{n:,}} | {{by_tag * 1e3:.1f}} ms | {{whole * 1e3:.1f}} ms |")
"""
    pooled = f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from collectors.profiling import TaskTags, YappiProfile
prof = YappiProfile(TaskTags(), "wall")
prof.start()
on, off = prof.task_hooks()
sys.setprofile(None)
def leaf(x): return x
def task(x): return leaf(x) + leaf(x + 1)
done = 0
print("| executions so far | finish() of the last 100, per execution |")
print("|---:|---:|")
for n in {sizes!r}:
    spent = 0.0
    while done < n:
        done += 1
        prof.tags.local.seq = prof.acquire(done)
        on(); task(done); off()
        prof.tags.local.seq = 0
        t = time.perf_counter()
        prof.finish(done)
        if done > n - 100:
            spent += time.perf_counter() - t
    print(f"| {{n:,}} | {{spent / 100 * 1e6:.1f}} µs |")
"""
    print("\nprofile reads as executions accumulate (2 entries per execution, one thread)")
    print("a tag per execution:")
    sys.stdout.flush()
    subprocess.run([sys.executable, "-c", per_tag], check=True)
    print("the collectors' tag pool:")
    sys.stdout.flush()
    subprocess.run([sys.executable, "-c", pooled], check=True)


def memory_per_execution(executions: int = 20_000, functions: int = 28) -> None:
    """Yappi's memory per execution with a tag per execution and with the collectors' tag
    pool (``_memory``), side by side."""
    print(f"\nwhat Yappi keeps per execution ({executions:,} executions, one thread)")
    print("| tags | Python functions per task | bytes (Yappi's count) | bytes (peak RSS) |")
    print("|---|---:|---:|---:|")
    for pooled in (False, True):
        _memory(executions, functions, pooled)


def _memory(executions: int, functions: int, pooled: bool) -> None:
    """What Yappi keeps per execution for the rest of the job: tasks that each call
    ``functions`` distinct Python functions (and a builtin in each), each under its own tag or
    (``pooled``) under a slot of the collectors' pool read and given back as it ends, with the
    hook on only around the task, as ``collect --profile yappi`` runs them. Yappi's
    own count (``get_mem_usage``) and the process's peak RSS, per execution. Run in a child
    process (it leaves Yappi running with every tag it made)."""
    code = f"""
import resource, sys, threading
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
import yappi
from collectors.profiling import TaskTags, YappiProfile
prof = YappiProfile(TaskTags(), "wall")
ns = {{}}
src = "".join(f"def f{{i}}(x):\\n    return len([x]) + {{i}}\\n" for i in range({functions}))
exec(compile(src, "/job/module.py", "exec"), ns)
fs = [ns[f"f{{i}}"] for i in range({functions})]
out = []
def executor():
    on, off = prof.task_hooks()
    m0, r0 = yappi.get_mem_usage(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for seq in range(1, {executions} + 1):
        prof.tags.local.seq = prof.acquire(seq) if {pooled!r} else seq
        on()
        for f in fs:
            f(seq)
        off()
        prof.tags.local.seq = 0
        if {pooled!r}:
            prof.finish(seq)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r0
    out.append(((yappi.get_mem_usage() - m0) / {executions}, rss * 1024 / {executions}))
prof.start(("executor",))
t = threading.Thread(target=executor, name="executor-0")
t.start()
t.join()
prof.stop()
print(f"| {'pool' if pooled else 'one per execution'} | {functions} | {{out[0][0]:,.0f}} | {{out[0][1]:,.0f}} |")
"""
    sys.stdout.flush()
    subprocess.run([sys.executable, "-c", code], check=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--calls", type=int, default=150_000, help="Python calls per task thread")
    ap.add_argument("--rounds", type=int, default=2_000,
                    help="event-loop rounds of 50 coroutines")
    ap.add_argument("--snapshots-only", action="store_true",
                    help="only the cost of profile snapshots as executions accumulate")
    ap.add_argument("--memory-only", action="store_true",
                    help="only what Yappi keeps per execution for the rest of the job")
    args = ap.parse_args()
    if args.snapshots_only:
        snapshot_reads()
        return
    if args.memory_only:
        memory_per_execution()
        return
    check_tags_split_executions(TagLocal())
    parts = {"task threads": lambda local: run_tasks(args.calls, local),
             "event loop": lambda local: run_event_loop(args.rounds)}
    times = {(part, name): [] for part in parts for name in CONFIGS}
    for _ in range(args.repeat):
        for part, work in parts.items():
            for name in CONFIGS:  # interleaved, so drift hits every configuration alike
                times[part, name].append(measure(name, work))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"task threads: 4 × {args.calls:,} Python calls; event loop: {args.rounds:,} "
          f"rounds of 50 coroutines; each measured alone, median of {args.repeat}\n")
    print(f"{'configuration':<36}{'task threads':>14}{'':>8}{'event loop':>12}{'':>8}")
    for name in CONFIGS:
        cells = []
        for part in parts:
            base = med[part, "no profiler (baseline)"]
            cells.append(f"{med[part, name]:>12.3f} s{med[part, name] / base:>7.1f}×")
        print(f"{name:<36}" + "  ".join(cells))
    for part in parts:
        base = med[part, "no profiler (baseline)"]
        no_tag = med[part, "yappi wall, no tag"]
        print(f"\n{part}: tag callback adds {(med[part, 'yappi wall, Python tag callback'] - no_tag) / base:+.0%} "
              f"of baseline as a Python function, "
              f"{(med[part, 'yappi wall, C-level tag callback'] - no_tag) / base:+.0%} as a C-level callable, "
              f"{(med[part, 'yappi wall, C tag, class default'] - no_tag) / base:+.0%} as a C-level "
              "callable on a threading.local with a class default")
    snapshot_reads()


if __name__ == "__main__":
    main()
