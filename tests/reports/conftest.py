"""Fixtures for report tests: output folders of the literal run (``literal_run``).

``tests/reports`` is a package so that this conftest does not shadow ``tests/conftest.py``
(other test modules import ``fixture_path`` from it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from correlate.reports import write_reports

from .literal_run import literal_frames, write_run


@pytest.fixture(scope="session")
def literal_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Output folder of the literal run (tables + summary, no reports yet)."""
    return write_run(literal_frames(), tmp_path_factory.mktemp("literal") / "out")


@pytest.fixture(scope="session")
def literal_reports(literal_out: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the literal run's output folder with every report written."""
    out = shutil.copytree(literal_out, tmp_path_factory.mktemp("literal-reports") / "out")
    write_reports(out)
    return out
