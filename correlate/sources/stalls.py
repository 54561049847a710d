"""The stalls a process's watchdog wrote (``stalls.txt``, collectors.watchdog): which thread made
no progress, from when to when, and where every thread was.

A block is a header line ``== {json}`` and the stacks faulthandler dumped after it; a stall's
end is a second header with its start and its end."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FILE = "stalls.txt"  # (collectors.watchdog.FILE: the analysis does not import the collectors)
_THREAD = re.compile(r"(?:Current thread|Thread) (0x[0-9a-f]+)")
_FRAME = re.compile(r'\s+File "(.*)", line (\d+) in (.*)')
#: the thread each kind of stall is about, by name (the event loop: by its frames)
_THREAD_OF = {"flush": "dask-correlate-flush", "sampler": "dask-correlate-sampler"}
_LOOP_FRAMES = ("run_forever", "_run_once", "start")  # asyncio/tornado's loop, at a stack's base


def read(folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The stalls recorded in a process folder, and the lines that could not be read."""
    path = folder / FILE
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return [], []
    blocks: list[tuple[dict[str, Any], dict[str, list[tuple[str, int, str]]]]] = []
    bad: list[str] = []
    stacks: dict[str, list[tuple[str, int, str]]] = {}
    thread = None
    for line in text.splitlines():
        if line.startswith("== "):
            try:
                header = json.loads(line[3:])
            except json.JSONDecodeError:
                bad.append(line)
                continue
            stacks, thread = {}, None
            blocks.append((header, stacks))
        elif m := _THREAD.match(line):
            thread = m.group(1)
            stacks[thread] = []
        elif (m := _FRAME.match(line)) and thread is not None:
            stacks[thread].append((m.group(1), int(m.group(2)), m.group(3)))
        elif line.strip() and not line.startswith("  <"):  # ("<no Python frame>", "  ...")
            bad.append(line)
    return _stalls(blocks), bad


def _stalls(blocks: list[tuple[dict[str, Any], dict[str, list[tuple[str, int, str]]]]]
            ) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    open_: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    for header, stacks in blocks:
        kind = str(header.get("kind"))
        key = (kind, header.get("owner"), header.get("start"))
        if key in open_ and header.get("end") is not None:
            open_.pop(key)["end"] = header["end"]
            continue
        out.append(_stall(kind, header.get("owner"), header.get("start"), header.get("end"),
                          header.get("cpu_s"), header.get("threads") or {}, stacks))
        if header.get("end") is None:
            open_[key] = out[-1]
    return out


def _stall(kind: str, owner: str | None, start: float | None, end: float | None,
           cpu_s: float | None, names: dict[str, str],
           stacks: dict[str, list[tuple[str, int, str]]]) -> dict[str, Any]:
    threads = [{"thread": tid, "name": names.get(tid),
                "frames": [f"{func} ({file}:{line})" for file, line, func in frames]}
               for tid, frames in stacks.items()]
    return {"kind": kind, "owner": owner, "start": start, "end": end, "cpu_s": cpu_s,
            "thread": _stalled_thread(kind, threads), "threads": threads}


def _stalled_thread(kind: str, threads: list[dict[str, Any]]) -> str | None:
    """The thread the stall is about: the named collector thread, or the event loop's (the
    thread whose stack begins in the loop)."""
    if kind in _THREAD_OF:
        return next((t["thread"] for t in threads if t["name"] == _THREAD_OF[kind]), None)
    return next((t["thread"] for t in threads
                 if any(f.split(" ", 1)[0] in _LOOP_FRAMES for f in t["frames"][-6:])), None)


def describe(process: str, stall: dict[str, Any]) -> str:
    """One line: who stalled, when, for how long, and where."""
    start, end = stall["start"], stall["end"]
    when = (datetime.fromtimestamp(start, UTC).strftime("%H:%M:%S UTC")
            if isinstance(start, int | float) else "an unknown time")
    how_long = (f"for {end - start:.1f} s" if isinstance(start, int | float)
                and isinstance(end, int | float) else "(still stalled where its records end)")
    what = {"event-loop": f"the event loop of {stall['owner']} made no progress",
            "flush": f"the collectors' flush thread of {stall['owner']} made no progress",
            "sampler": f"the collectors' sampler of {stall['owner']} made no progress",
            "process": "no thread of the process ran (stopped, or the GIL held throughout)"
                       + (f"; CPU {stall['cpu_s']:.2f} s meanwhile"
                          if isinstance(stall.get("cpu_s"), int | float) else ""),
            }.get(stall["kind"], stall["kind"])
    where = next((t for t in stall["threads"] if t["thread"] == stall["thread"]), None)
    if where is None:
        where = next((t for t in stall["threads"] if t["frames"]), None)
    at = (f"; {where['name'] or where['thread']} at " + " ← ".join(where["frames"][:3])
          if where is not None and where["frames"] else "")
    return f"{process}: stalled at {when} {how_long}: {what}{at}"
