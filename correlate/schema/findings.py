"""The tables of findings and of the critical path (``correlate/findings/``,
docs/findings.md); listed in ``schema.outputs.ALL``."""

from __future__ import annotations

from correlate.schema.table import Column, Table

CRITICAL_PATH = Table(
    "critical_path",
    "The chain of executions that set the task window, first link first: each link released "
    "by its dependency that ended last or by the execution before it on its thread, whichever "
    "ended later (correlate/findings/critical_path.py, docs/findings.md).",
    (
        Column("position", "Int64", "0 = first link", nullable=False),
        Column("execution_id", "Int64", "→ tasks.execution_id", nullable=False),
        Column("key", "String", "Dask key", nullable=False),
        Column("prefix", "String", "task prefix"),
        Column("worker", "String", "worker address"),
        Column("thread_id", "UInt64", "executing thread"),
        Column("start_ns", "Int64", "start, run timeline", nullable=False),
        Column("stop_ns", "Int64", "end, run timeline", nullable=False),
        Column("duration_s", "Float64", "the link's own time"),
        Column("cpu_s", "Float64", "of it, thread CPU (null: not measured)"),
        Column("io_time_s", "Float64", "of it, inside I/O calls (null: not captured)"),
        Column("other_s", "Float64", "of it, neither (sleeps, locks, the GIL; at least: an I/O "
               "call's own CPU is in both, 0 where they exceed it; null when CPU or I/O is "
               "unknown)"),
        Column("gate", "Enum:first,dependency,thread,queue,submission", "what released it: the "
               "first link of the chain, its dependency that ended last (the predecessor), the "
               "execution before it on its thread, (its task queued by the scheduler) the "
               "execution that ended last before its assignment, or (its task submitted after "
               "its inputs ended) the execution that ended last before the submission",
               nullable=False),
        Column("wait_s", "Float64", "its predecessor's end (the first link: the window's start) "
               "→ its start"),
        Column("wait_submission_s", "Float64", "of the wait, before its task reached the "
               "scheduler (null: not recorded)"),
        Column("wait_scheduler_s", "Float64", "of the rest, before the scheduler assigned it "
               "(null: assignment not recorded)"),
        Column("wait_transfer_s", "Float64", "of the rest, incoming transfers of its inputs"),
        Column("wait_read_back_s", "Float64", "of the rest, inputs read back from spill"),
        Column("wait_paused_s", "Float64", "of the rest, ready on its worker while the worker "
               "was paused at its memory limit"),
        Column("wait_free_thread_s", "Float64", "of the rest, ready on its worker while a "
               "thread of it was free: the worker's event loop had not handed it over"),
        Column("wait_other_s", "Float64", "the remainder: the clocks' alignment, and the "
               "worker's dispatch where its thread count is unknown (null: the scheduler's "
               "parts are unknown)"),
    ),
    sort_by=("position",),
)

FINDINGS = Table(
    "findings",
    "What to fix first: one row per finding, the costliest first (correlate/findings/, "
    "docs/findings.md).",
    (
        Column("rank", "Int64", "1 = the costliest (cost_s descending, then kind; unknown "
               "costs last)", nullable=False),
        Column("kind", "String", "the rule (docs/findings.md)", nullable=False),
        Column("cost_s", "Float64", "seconds of the task window at stake: what removing the "
               "problem would save, bounded by what it contributes to the critical path "
               "(null: cannot be bounded from the evidence)"),
        Column("prefixes", "List:String", "task prefixes it concerns"),
        Column("keys", "List:String", "a few of its keys"),
        Column("files", "List:String", "files it concerns"),
        Column("evidence", "String", "the numbers behind it, one sentence", nullable=False),
        Column("advice", "String", "what to change, one sentence", nullable=False),
        Column("partial", "String", "what evidence was missing, when some was (null: none)"),
    ),
    sort_by=("rank",),
)

ALL = (CRITICAL_PATH, FINDINGS)
