"""Regenerate docs/tables.md from correlate.schema (the one place tables are defined):

    python docs/generate.py        # tests/test_docs.py fails when the file is stale
"""

from __future__ import annotations

from pathlib import Path

HEADER = """# Tables

Generated from `correlate/schema/` by `python docs/generate.py`; do not edit by hand.
Times are Int64 nanoseconds since the epoch; the name says the clock: `local_*_ns` is the
recording process's own `time.time_ns()` clock, `reported_*_ns` is what Dask reported in
`startstops` (worker clock + `scheduler_delay` for compute and transfer, raw worker clock for
disk-read/disk-write), `*_ns` without prefix is the aligned run timeline (the scheduler's clock).
"""

SECTIONS = (
    ("Run folder (written by `collect`)", "run"),
    ("Darshan (decoded by `correlate darshan` and the engine)", "darshan"),
    ("Canonical frames (what every source adapter produces)", "canonical"),
    ("Outputs (written by `correlate` into RUN_DIR/correlated/)", "outputs"),
)


def render() -> str:
    from correlate import schema

    out = [HEADER]
    for title, module in SECTIONS:
        out += [f"## {title}\n", schema.describe(getattr(schema, module).ALL)]
    return "\n".join(out)


if __name__ == "__main__":
    Path(__file__).with_name("tables.md").write_text(render())
