"""CPython gh-106883 made to happen, not waited for: run as a script (``--guard`` installs
``collectors.frames_guard``).

The main thread calls ``sys._current_frames()`` with a collection due at every allocation; a
gc callback, at a collection inside that call (the runtime's HEAD_LOCK held), lets the other
thread call ``sys._current_frames()`` too and gives the GIL away. On an affected Python the
other thread takes the GIL and waits for HEAD_LOCK, and the main thread waits for the GIL: the
process never ends. Prints "done" when it ends."""

from __future__ import annotations

import argparse
import gc
import sys
import threading
import time


def call_frames_from_other_thread(ready: threading.Event) -> None:
    ready.wait()
    sys._current_frames()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--guard", action="store_true")
    args = parser.parse_args()
    if args.guard:
        from collectors import frames_guard

        frames_guard.install(force=True)
    ready, armed = threading.Event(), threading.Event()
    main_thread = threading.get_ident()

    def give_the_gil_away(phase: str, info: dict) -> None:
        if phase == "start" and armed.is_set() and threading.get_ident() == main_thread:
            armed.clear()
            ready.set()
            time.sleep(0.2)

    other = threading.Thread(target=call_frames_from_other_thread, args=(ready,), daemon=True)
    other.start()
    gc.callbacks.append(give_the_gil_away)
    threshold = gc.get_threshold()
    for _ in range(200):  # until a collection fell inside the call (the other thread then ran)
        if not other.is_alive():
            break
        gc.set_threshold(1)
        armed.set()
        sys._current_frames()
        armed.clear()
        gc.set_threshold(*threshold)
        time.sleep(0.001)
    print("done", flush=True)


if __name__ == "__main__":
    main()
