"""Shared test helpers: real fixtures from ../shared (skipped with a reason when absent)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from testing import dask_starts

REPO = Path(__file__).resolve().parents[1]
#: ../shared/fixtures beside the checkout; CORRELATE_FIXTURES points elsewhere (a worktree
#: whose parent has no shared/)
SHARED_FIXTURES = Path(os.environ.get("CORRELATE_FIXTURES") or REPO.parent / "shared"
                       / "fixtures")
#: the start of fixture_path's skip reason (the marker check below looks for it)
FIXTURE_SKIP = "real fixture "


def fixture_path(name: str) -> Path:
    """Path of a real-run fixture folder/file under ../shared/fixtures, or skip the test."""
    path = SHARED_FIXTURES / name
    if not path.exists():
        where = "is absent" if not SHARED_FIXTURES.exists() else "does not hold it"
        pytest.skip(f"{FIXTURE_SKIP}{name!r} not available: {SHARED_FIXTURES} {where} "
                    "(these tests need the project's ../shared checkout)")
    return path


# ---- markers checked against what each test did ------------------------------------------------
# `cluster` must be on every test that starts Dask servers (so `-m "not cluster"` starts none) and
# `fixtures` on every test that needs ../shared; hand-written markers drift, so a test whose
# marker is missing fails with the reason instead of passing.

_STARTS = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    folder = Path(tempfile.mkdtemp(prefix="dask-starts-"))
    config.stash[_STARTS] = folder
    os.environ[dask_starts.ENV] = str(folder)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(dask_starts.SITE), os.environ.get("PYTHONPATH")]))
    dask_starts.watch()


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_STARTS, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _wrong_marker(item: pytest.Item, report: pytest.TestReport) -> str | None:
    starts = dask_starts.take(item.config.stash[_STARTS])
    if starts and item.get_closest_marker("cluster") is None:
        return (f"{item.nodeid} started Dask servers ({', '.join(sorted(set(starts)))}) "
                "without the `cluster` marker")
    reason = report.longrepr[2] if report.skipped and isinstance(report.longrepr, tuple) else ""
    if FIXTURE_SKIP in reason and item.get_closest_marker("fixtures") is None:
        return f"{item.nodeid} needs ../shared but has no `fixtures` marker"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    problem = _wrong_marker(item, report)
    if problem is not None:
        report.outcome = "failed"
        report.longrepr = problem
