"""What the per-task hooks of the worker plugin cost: recording each execution's file opens
(``collectors.file_opens``) and timing each active slice of a coroutine task
(``collectors.coroutine_steps``).

The audit hook runs for every audited event of a worker process, so three costs matter, each
measured in a fresh child process without the hook and with it, side by side in one run:

- an audited event that is not an open (``sys._getframe``, which logging, inspect and typing
  raise often): the hook's one comparison;
- an ``open`` outside any task (the context variable is unset);
- an ``open`` inside a task (a row appended to the sink's buffer);

plus the two context-variable sets and resets a task pays on the event loop; and, for a
coroutine awaiting ``asyncio.sleep(0)`` in a loop on a real event loop, the cost per step of
driving it through ``CoroutineSteps`` with the plugin's tag updates, against awaiting it plainly.

    python benchmarks/bench_task_hooks.py
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import contextvars, os, sys, tempfile, time
    from collections import deque
    hooked = sys.argv[1] == "1"
    if hooked:
        from collectors import file_opens
        file_opens.install()
        rows = deque()
        def append(table, row):
            rows.append(row)
    path = os.path.join(tempfile.mkdtemp(), "f")
    open(path, "w").close()

    def per_call(fn, n):
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter_ns()
            fn(n)
            best = min(best, (time.perf_counter_ns() - t0) / n)
        return best

    def frames(n):
        for _ in range(n):
            sys._getframe()

    def opens(n):
        for _ in range(n):
            os.close(os.open(path, os.O_RDONLY))

    out = [per_call(frames, 200_000), per_call(opens, 20_000)]
    if hooked:
        file_opens.CURRENT.set((1, append))
        out.append(per_call(opens, 20_000))
        var = contextvars.ContextVar("key")
        def task_vars(n):
            for _ in range(n):
                a = var.set(("k", 1)); b = file_opens.CURRENT.set((1, append))
                file_opens.CURRENT.reset(b); var.reset(a)
        out.append(per_call(task_vars, 200_000))
    print(*out)
""")


def _child(hooked: bool) -> list[float]:
    out = subprocess.run([sys.executable, "-c", CHILD, "1" if hooked else "0"], check=True,
                         capture_output=True, text=True).stdout.split()
    return [float(x) for x in out]


STEPS = textwrap.dedent("""
    import asyncio, sys, threading, time
    from collectors.coroutine_steps import CoroutineSteps, slices
    from collectors.profiling import TaskTags
    wrapped = sys.argv[1] == "1"
    n = 100_000
    tags, tid = TaskTags(), threading.get_ident()

    async def task():
        for _ in range(n):
            await asyncio.sleep(0)

    def enter():
        tags.current[tid] = 1
        tags.local.seq = 1

    def leave():
        tags.local.seq = 0
        tags.current.pop(tid, None)

    def done(steps, result):
        slices(steps, (steps[0][0], steps[-1][1]))

    async def main():
        best = float("inf")
        for _ in range(5):
            coro = task()
            t0 = time.perf_counter_ns()
            await (CoroutineSteps(coro, enter, leave, done) if wrapped else coro)
            best = min(best, (time.perf_counter_ns() - t0) / n)
        return best

    print(asyncio.run(main()))
""")


def _steps(wrapped: bool) -> float:
    return float(subprocess.run([sys.executable, "-c", STEPS, "1" if wrapped else "0"],
                                check=True, capture_output=True, text=True).stdout)


def main() -> None:
    rounds = [(_child(False), _child(True)) for _ in range(3)]
    base = [min(r[0][i] for r in rounds) for i in range(2)]
    hook = [min(r[1][i] for r in rounds) for i in range(4)]
    print("ns per call, best of 3 fresh processes × 5 repeats")
    print(f"{'':34}{'no hook':>10}{'hook':>10}{'added':>10}")
    print(f"{'audited event, not an open':34}{base[0]:10.0f}{hook[0]:10.0f}"
          f"{hook[0] - base[0]:10.0f}")
    print(f"{'open outside a task':34}{base[1]:10.0f}{hook[1]:10.0f}{hook[1] - base[1]:10.0f}")
    print(f"{'open inside a task (row recorded)':34}{base[1]:10.0f}{hook[2]:10.0f}"
          f"{hook[2] - base[1]:10.0f}")
    print(f"{'per task: context variables':34}{'':10}{hook[3]:10.0f}{hook[3]:10.0f}")
    plain = min(_steps(False) for _ in range(3))
    timed = min(_steps(True) for _ in range(3))
    print(f"{'coroutine step (asyncio.sleep(0))':34}{plain:10.0f}{timed:10.0f}"
          f"{timed - plain:10.0f}")


if __name__ == "__main__":
    main()
