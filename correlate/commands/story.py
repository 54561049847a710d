"""``correlate story RUN KEY``: one task's life — scheduler and worker transitions, executions
(thread, window, CPU) and transfers, in time order (the seed-004 object view). A KEY that is not
exact is matched as a substring; several matches are listed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from correlate.commands import memory
from correlate.errors import InputError
from correlate.sources import FORMATS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, help="run folder (ours or imported)")
    p.add_argument("key", help="task key, or a unique part of it")
    p.add_argument("--format", default=None,
                   choices=tuple(FORMATS),
                   help="input format (default: detected)")
    memory.add_argument(p, "told from the bytes of a run folder of ours before it is loaded")


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
    from rich.text import Text  # not at the top: every command's parser imports this module

    from correlate.console import results
    from correlate.sources.detect import load
    from correlate.timeline.lifecycles import matching_keys, story

    if not args.run_dir.exists():
        raise InputError(args.run_dir, "no such file or directory")
    run_dir = args.run_dir
    if args.format is None and is_output_folder(run_dir):
        run_dir = _run_folder_of(run_dir)
        if run_dir is None:  # no run folder around it: the lifecycles it wrote tell the story
            told = story_from_lifecycles(args.run_dir / "task_lifecycles.jsonl", args.key)
            results().print(Text("\n".join(story_lines(told))))
            return 0
    memory.check_load(run_dir, memory.limit_of(args))
    frames = load(run_dir, args.format, lazy=True)
    key = _pick(matching_keys(frames, args.key), args.key)
    # the story is the command's output: stdout
    results().print(Text("\n".join(story_lines(story(frames, key)))))
    return 0


def is_output_folder(path: Path) -> bool:
    """A folder `correlate RUN` wrote (its tables and summary), not a run folder."""
    return (path / "summary.json").is_file() and (path / "tasks.parquet").is_file()


def _run_folder_of(out: Path) -> Path | None:
    """The run folder an output folder sits in (``RUN/correlated``, the default), if its
    parent is one."""
    from correlate.sources.detect import detect

    try:
        detect(out.resolve().parent)
    except InputError:
        return None
    return out.resolve().parent


def story_from_lifecycles(path: Path, wanted: str) -> dict[str, Any]:
    """The story of one key from an output folder's ``task_lifecycles.jsonl`` (written by
    `correlate RUN` up to its task limit), for an output folder outside its run folder."""
    import json

    if not path.is_file():
        raise InputError(path.parent, "is correlate's output folder, without "
                         "task_lifecycles.jsonl (not written for this many tasks), and not "
                         "inside its run folder: give the run folder it was made from, e.g. "
                         "correlate story RUN_DIR KEY")
    lines: dict[str, str] = {}
    text = json.dumps(wanted)[1:-1]  # as the key's text appears in a line
    with path.open() as fh:
        for line in fh:
            if text in line:  # a key holding it is in its line; json only for those
                lines[json.loads(line)["key"]] = line
    key = _pick(sorted(lines), wanted)
    return json.loads(lines[key])


def value_text(v: Any) -> str:
    """A detail value as a user reads it: floats to 4 significant digits (a measured CPU time
    of 0.09760992700000001 s is 0.09761), lists and mappings without Python's brackets."""
    if isinstance(v, bool) or not isinstance(v, float | list | dict):
        return str(v)
    if isinstance(v, list):
        return " ".join(value_text(x) for x in v)
    if isinstance(v, dict):
        return " ".join(f"{k}:{value_text(x)}" for k, x in v.items())
    return f"{v:.4g}" if v == 0 or 1e-4 <= abs(v) < 1e7 else f"{v:.3e}"


def story_lines(story: dict[str, Any]) -> list[str]:
    """The story as aligned columns, one line per event: its details stay on that line (on
    80 columns a table column wrapped them into 5-10 lines each)."""
    times = [e["run_time_ns"] for e in story["events"] if e["run_time_ns"] is not None]
    t0 = min(times) if times else 0
    deps = ", ".join(story["depends_on"][:5]) or "none"
    more = f" (+{len(story['depends_on']) - 5})" if len(story["depends_on"]) > 5 else ""
    unrecorded = story.get("executions_unrecorded") or 0
    also = (f" ({unrecorded} known from the scheduler's startstops only: not written by its "
            "worker)" if unrecorded else "")
    head = [story["key"], f"prefix {story['prefix']} · {story['executions']} execution(s)"
            f"{also} · "
            f"depends on {deps}{more} · {len(story['dependents'])} dependent(s)"]
    rows = [("t+ s", "what", "clock", "details")]
    for e in story["events"]:
        t = "" if e["run_time_ns"] is None else f"{(e['run_time_ns'] - t0) / 1e9:.4f}"
        details = ", ".join(f"{k}={value_text(v)}" for k, v in e.items()
                            if k not in ("time_ns", "run_time_ns", "kind", "clock")
                            and v is not None)
        rows.append((t, e["kind"], e.get("clock") or "", details))
    if not story["events"]:
        rows.append(("", "graph only", "", "no transition, execution or transfer recorded"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return head + [f"{r[0]:>{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}"
                   for r in rows]
