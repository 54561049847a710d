"""For test_yappi_threads.py (run in its own process: an audit hook cannot be removed):
``python thread_start_race.py``. Another thread is held in the middle of installing a profile
function (its audit hook waits, as a Python audit hook may give the GIL away there) while a
library's helper thread and a task thread start under ``YappiProfile``; prints a JSON line of
what ran and what Yappi saw."""

from __future__ import annotations

import json
import sys
import threading

from collectors.profiling import TaskTags, YappiProfile

inside, release = threading.Event(), threading.Event()


def audit(event: str, _args: tuple) -> None:
    if event == "sys.setprofile" and threading.current_thread().name == "installer":
        inside.set()
        release.wait(30)


def helper_work() -> str:
    return "helper"


def main() -> None:
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
    import yappi

    seen = {f.name for f in yappi.get_func_stats()}
    print(json.dumps({"ran": sorted(ran), "errors": errors,
                      "helper_profiled": "helper_work" in seen,
                      "threads_unhooked": prof.threads_unhooked,
                      "bootstrap_restored": threading.Thread._bootstrap_inner.__qualname__  # type: ignore[attr-defined]
                      == "Thread._bootstrap_inner"}))


if __name__ == "__main__":
    main()
