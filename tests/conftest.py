"""Shared test helpers: real fixtures from ../shared (skipped with a reason when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: ../shared/fixtures beside the checkout; CORRELATE_FIXTURES points elsewhere (a worktree
#: whose parent has no shared/)
SHARED_FIXTURES = Path(os.environ.get("CORRELATE_FIXTURES") or REPO.parent / "shared"
                       / "fixtures")


def fixture_path(name: str) -> Path:
    """Path of a real-run fixture folder/file under ../shared/fixtures, or skip the test."""
    path = SHARED_FIXTURES / name
    if not path.exists():
        pytest.skip(f"real fixture {name!r} not available: {SHARED_FIXTURES} is absent "
                    "(these tests need the project's ../shared checkout)")
    return path
