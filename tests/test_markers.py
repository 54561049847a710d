"""The markers are checked against what each test did (tests/conftest.py): a test that makes a
Dask server, in its process or in a child, fails without ``cluster``; a test skipped for want of
``../shared`` fails without ``fixtures``. Run on an inner pytest session of literal tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

INNER = '''
import subprocess
import sys

import pytest

from tests.conftest import fixture_path

CHILD = [sys.executable, "-c", "from distributed.core import Server; Server({})"]


def test_child_server_unmarked():
    subprocess.run(CHILD, check=True)


@pytest.mark.cluster
def test_child_server_marked():
    subprocess.run(CHILD, check=True)


def test_child_without_distributed_unmarked():
    subprocess.run([sys.executable, "-c", "import json"], check=True)


def test_own_server_unmarked():
    from distributed.core import Server
    Server({})


def test_fixture_unmarked():
    fixture_path("no-such-fixture")


@pytest.mark.fixtures
def test_fixture_marked():
    fixture_path("no-such-fixture")
'''

CONFTEST = '''
from tests.conftest import pytest_configure, pytest_runtest_makereport, pytest_unconfigure
'''


def test_a_server_made_without_the_cluster_marker_or_a_fixture_skip_without_fixtures_fails(
        tmp_path):
    # GIVEN an inner session of literal tests, with this suite's marker checks
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_inner.py").write_text(INNER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    # WHEN it runs
    proc = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                           "-p", "no:zarr", "-W", "ignore::pytest.PytestUnknownMarkWarning",
                           str(tmp_path)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    # THEN the tests whose marker is missing fail, saying why; the others pass or skip
    outcome = {line.split("::")[1].split()[0]: line.split()[1]
               for line in proc.stdout.splitlines() if line.startswith("test_inner.py::")
               and line.split()[1] in ("PASSED", "FAILED", "SKIPPED", "ERROR")}
    assert outcome == {"test_child_server_unmarked": "FAILED",
                       "test_child_server_marked": "PASSED",
                       "test_child_without_distributed_unmarked": "PASSED",
                       "test_own_server_unmarked": "FAILED",
                       "test_fixture_unmarked": "FAILED",
                       "test_fixture_marked": "SKIPPED"}, proc.stdout[-3000:]
    assert "test_child_server_unmarked started Dask servers (Server) without the `cluster` " \
        "marker" in proc.stdout
    assert "test_fixture_unmarked needs ../shared but has no `fixtures` marker" in proc.stdout
