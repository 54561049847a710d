"""What recording data that enters Dask from outside costs the scheduler: the wrapper around
``Scheduler.update_data`` per call (in the event loop), and the flush-time expansion of the
recorded calls into ``scheduler_arrivals`` rows per key (off the event loop).

A stand-in scheduler holds a no-op ``update_data``; the plugin wraps it exactly as it wraps a
real scheduler's. Timed best of 5, given per call and per key. A real scatter call is a round
trip to the workers and the scheduler (the in-situ test's calls took milliseconds), so the
wrapper's share of it is what this shows.

    python benchmarks/bench_arrivals.py [--calls 200000] [--keys 10]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from collectors.scheduler_plugin import CorrelateSchedulerPlugin
from collectors.sink import ProcessSink
from correlate.schema import run as schema


def stand_in() -> SimpleNamespace:
    def update_data(*, who_has: dict, nbytes: dict, client: str | None = None) -> None:
        return None

    stream = SimpleNamespace(comm=SimpleNamespace(peer_address="tcp://10.0.0.1:40000"))
    return SimpleNamespace(update_data=update_data, handlers={"update_data": update_data},
                           stream_handlers={}, client_comms={"Client-1": stream})


def per_call(calls: int, keys: int, wrapped: bool) -> float:
    best = float("inf")
    who = {("field-0", i): ["tcp://10.0.0.2:1"] for i in range(keys)}
    sizes = dict.fromkeys(who, 8000)
    for _ in range(5):
        s = stand_in()
        plugin = CorrelateSchedulerPlugin("unused")
        if wrapped:
            plugin._watch_update_data(s)
        f = s.update_data
        t = time.perf_counter()
        for _ in range(calls):
            f(who_has=who, nbytes=sizes, client="Client-1")
        best = min(best, (time.perf_counter() - t) / calls)
    return best


def per_key_flush(calls: int, keys: int) -> float:
    best = float("inf")
    who = {("field-0", i): ["tcp://10.0.0.2:1"] for i in range(keys)}
    sizes = dict.fromkeys(who, 8000)
    for _ in range(5):
        with tempfile.TemporaryDirectory() as tmp:
            s = stand_in()
            plugin = CorrelateSchedulerPlugin(tmp)
            plugin._watch_update_data(s)
            plugin.sink = ProcessSink(Path(tmp) / "procs" / "scheduler-h-1", {
                t.name: t for t in (schema.SCHEDULER_ARRIVALS, schema.SENDER_NOTES)})
            for _ in range(calls):
                s.update_data(who_has=who, nbytes=sizes, client="Client-1")
            t = time.perf_counter()
            plugin._expand_arrivals(plugin.sink)
            best = min(best, (time.perf_counter() - t) / (calls * keys))
            plugin.sink.close()
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=10, help="keys per update_data call")
    args = ap.parse_args()
    plain = per_call(args.calls, args.keys, wrapped=False)
    wrapped = per_call(args.calls, args.keys, wrapped=True)
    flush = per_key_flush(args.calls // 10, args.keys)
    print(f"update_data ({args.keys} keys a call): {plain * 1e9:,.0f} ns plain, "
          f"{wrapped * 1e9:,.0f} ns wrapped: +{(wrapped - plain) * 1e9:,.0f} ns a call")
    print(f"flush-time expansion: {flush * 1e9:,.0f} ns a key (off the event loop)")


if __name__ == "__main__":
    main()
