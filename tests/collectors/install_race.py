"""For test_yappi_clears.py (run in its own process: an audit hook cannot be removed):
``python install_race.py [thread-start]``. Another thread is held in the middle of installing a
profile function (its audit hook waits, as a Python audit hook may give the GIL away there),
while a task thread starts an execution under ``YappiProfile`` (or, with ``thread-start``, a
library's helper thread and a task thread start); prints a JSON line of what happened."""

from __future__ import annotations

import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from collectors import profiling
from collectors.profiling import TaskTags, YappiProfile

inside, release = threading.Event(), threading.Event()


def audit(event: str, _args: tuple) -> None:
    if event == "sys.setprofile" and threading.current_thread().name == "installer":
        inside.set()
        release.wait(30)


def short_call() -> int:
    return 1


def execution(prof: YappiProfile, ex: ThreadPoolExecutor, seq: int,
              release_after: float | None) -> dict:
    """One execution on the task thread of ``ex`` while another thread's install is held;
    the install is released ``release_after`` s later (None: only once the execution has
    ended). (Threads are started before: a thread that starts meanwhile can fail to start,
    its own install refused in ``threading``'s bootstrap.)"""
    tags = prof.tags
    resume, pause = prof.task_hooks()
    out: dict = {}
    start = threading.Event()

    def run() -> None:
        start.wait(30)
        tags.local.seq = prof.acquire(seq)
        resume()
        if release_after is not None:
            time.sleep(release_after * 2)
        for _ in range(3):
            short_call()
        pause()
        tags.local.seq = 0
        rows = prof.finish(seq)
        out["short_call"] = sum(r[8] for r in rows if r[5] == "short_call")
        out["rows"] = len(rows)

    def wake() -> None:
        inside.wait(30)
        time.sleep(release_after)  # type: ignore[arg-type]
        release.set()

    inside.clear()
    release.clear()
    running = ex.submit(run)
    waker = threading.Thread(target=wake)
    if release_after is not None:
        waker.start()
    installer = threading.Thread(target=sys.setprofile, args=(None,), name="installer")
    installer.start()
    assert inside.wait(10)
    start.set()
    running.result()
    release.set()
    installer.join()
    if release_after is not None:
        waker.join()
    return out


def main() -> None:
    sys.addaudithook(audit)
    attempts = []
    install = profiling.set_profile

    def counted(fn) -> bool:
        def attempt() -> None:
            attempts.append(1)
            fn()
        return install(attempt)
    profiling.set_profile = counted
    prof = YappiProfile(TaskTags(), "wall")
    prof.start(("task-thread",))
    with ThreadPoolExecutor(1, thread_name_prefix="task-thread") as ex:
        ex.submit(short_call).result()  # its thread started
        got = execution(prof, ex, 1, release_after=0.02)
    prof.stop()
    print(json.dumps({**got, "attempts": len(attempts), "cut": prof.executions_cut}))


def helper_work() -> str:
    return "helper"


def thread_start() -> None:
    """Threads starting while the install is held: what ran, what Yappi saw."""
    import yappi

    sys.addaudithook(audit)
    prof = YappiProfile(TaskTags(), "wall")
    prof.start(("task-thread",))
    ran: list[str] = []
    errors: list[str] = []
    threading.excepthook = lambda a: errors.append(repr(a.exc_value))
    installer = threading.Thread(target=sys.setprofile, args=(None,), name="installer")
    installer.start()
    assert inside.wait(10)
    helper = threading.Thread(target=lambda: ran.append(helper_work()), name="lib-helper")
    task = threading.Thread(target=lambda: ran.append("task"), name="task-thread-0")
    helper.start()
    task.start()
    helper.join(10)
    task.join(10)
    release.set()
    installer.join()
    prof.stop()
    seen = {f.name for f in yappi.get_func_stats()}
    restored = threading.Thread._bootstrap_inner.__qualname__  # type: ignore[attr-defined]
    print(json.dumps({"ran": sorted(ran), "errors": errors,
                      "helper_profiled": "helper_work" in seen,
                      "threads_unhooked": prof.threads_unhooked,
                      "bootstrap_restored": restored == "Thread._bootstrap_inner"}))


if __name__ == "__main__":
    thread_start() if sys.argv[1:] == ["thread-start"] else main()
