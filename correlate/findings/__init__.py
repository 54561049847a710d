"""Findings and the critical path: what to fix first, and what it costs (docs/findings.md).

One door: ``analyse`` takes the output tables the engine has made (and ``Evidence``: what the
run captured) and returns the ``critical_path`` and ``findings`` tables with their
``summary.json`` parts. The path is ``critical_path.py``; the rules are listed in ``rules.py``
(each a pure function of ``context.Context``), by family in ``timing.py`` and ``io_rules.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from correlate.findings import critical_path, rules
from correlate.findings.context import Evidence
from correlate.findings.waits import stored

__all__ = ["Analysis", "Evidence", "analyse", "stored"]


@dataclass(frozen=True)
class Analysis:
    critical_path: pl.DataFrame
    findings: pl.DataFrame
    #: ``summary.json`` ``critical_path`` (null: no timed execution) and ``findings``
    summary: dict[str, Any]


def analyse(tasks: pl.DataFrame, task_files: pl.DataFrame, dependencies: pl.DataFrame,
            assigned: pl.DataFrame, evidence: Evidence) -> Analysis:
    """The critical path of ``tasks`` (``assigned``: key → assigned_ns, the scheduler's
    assignment on the run timeline) and the findings of every rule over it."""
    path = critical_path.critical_path(tasks, dependencies, assigned)
    found = rules.findings(tasks, task_files, path, evidence)
    return Analysis(critical_path=path, findings=found, summary={
        "critical_path": critical_path.summary(path, tasks),
        "findings": rules.as_json(found)})
