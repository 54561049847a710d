"""``correlate story RUN KEY``: one task's life — scheduler and worker transitions, executions
(thread, window, CPU) and transfers, in time order (the seed-004 object view). A KEY that is not
exact is matched as a substring; several matches are listed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from correlate.commands.run import FORMATS
from correlate.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, help="run folder (ours or imported)")
    p.add_argument("key", help="task key, or a unique part of it")
    p.add_argument("--format", default=None,
                   choices=FORMATS[1:],
                   help="input format (default: detected)")


def _pick(keys: list[str], wanted: str) -> str:
    if wanted in keys:
        return wanted
    hits = sorted(k for k in keys if wanted in k)
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise InputError(None, f"no task key contains {wanted!r}")
    shown = "; ".join(hits[:10]) + (f"; … ({len(hits)} in all)" if len(hits) > 10 else "")
    raise InputError(None, f"{len(hits)} task keys contain {wanted!r}: {shown}")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from correlate.lifecycles import all_keys, story, with_transitions
    from correlate.sources.detect import load

    if not args.run_dir.exists():
        raise InputError(args.run_dir, "no such file or directory")
    frames = with_transitions(load(args.run_dir, args.format, lazy=True))
    key = _pick(all_keys(frames).to_list(), args.key)
    # the story is the command's output: stdout
    Console(soft_wrap=True).print(_table(story(frames, key)))
    return 0


def _table(story: dict[str, Any]) -> Table:
    from rich.table import Table
    from rich.text import Text

    times = [e["time_ns"] for e in story["events"] if e["time_ns"] is not None]
    t0 = min(times) if times else 0
    deps = ", ".join(story["depends_on"][:5]) or "none"
    more = f" (+{len(story['depends_on']) - 5})" if len(story["depends_on"]) > 5 else ""
    title = Text(f"{story['key']}\nprefix {story['prefix']} · {story['executions']} "
                 f"execution(s) · depends on {deps}{more} · "
                 f"{len(story['dependents'])} dependent(s)")
    table = Table(title=title, title_justify="left", show_edge=False)
    for col in ("t+ s", "what", "clock", "details"):
        table.add_column(col, justify="right" if col == "t+ s" else "left", overflow="fold")
    for e in story["events"]:
        t = "" if e["time_ns"] is None else f"{(e['time_ns'] - t0) / 1e9:.4f}"
        details = ", ".join(f"{k}={v}" for k, v in e.items()
                            if k not in ("time_ns", "kind", "clock") and v is not None)
        table.add_row(t, e["kind"], e.get("clock", ""), Text(details))
    if not story["events"]:
        table.add_row("", "graph only", "", Text("no transition, execution or transfer recorded"))
    return table
