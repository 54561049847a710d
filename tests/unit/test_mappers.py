"""The local mapper: results in order, two items at a time."""

from __future__ import annotations

import threading
import time

from correlate.frames.mappers import local_map


def test_local_map_yields_in_order_computing_two_at_a_time():
    lock, running, most, started = threading.Lock(), [0], [0], []

    def slow(i: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            started.append(i)
        time.sleep(0.02 * (3 - i % 3))  # later items often finish first
        with lock:
            running[0] -= 1
        return i * i

    got = []
    for value in local_map(slow, range(9)):
        got.append(value)
        # never more than two ahead of what the caller has taken
        assert len(started) <= len(got) + 2
    assert got == [i * i for i in range(9)]
    assert most[0] == 2


def test_local_map_one_at_a_time_computes_the_next_while_the_caller_holds_one():
    lock, running, most = threading.Lock(), [0], [0]
    done = threading.Event()

    def work(i: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        if i == 1:
            done.set()
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return i

    got = []
    for value in local_map(work, range(6), at_once=1):
        if value == 0:  # the caller is busy with item 0: item 1 is computed meanwhile
            assert done.wait(5)
        got.append(value)
    assert got == list(range(6))
    assert most[0] == 1
