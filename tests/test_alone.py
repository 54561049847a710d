"""Under xdist, a test marked `alone` runs while no other test does, and a module fixture holds
the machine alone only inside ``with machine_alone():`` (tests/conftest.py); the session ends
saying how long each module held it. Checked on an inner ``-n 3 --dist loadfile`` session of
literal tests that write when each of them, and the fixture's block, began and ended."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CONFTEST = '''
from tests.conftest import (machine_alone, pytest_collection_modifyitems, pytest_configure,
                            pytest_runtest_makereport, pytest_runtest_protocol,
                            pytest_unconfigure)
'''

# each test (and the block) appends "NAME START END" (CLOCK_MONOTONIC: one clock for every
# process) to the file SPANS names
SPANS = '''
import os
import time


def span(name, seconds):
    t0 = time.monotonic()
    time.sleep(seconds)
    with open(os.environ["SPANS"], "a") as f:
        f.write(f"{name} {t0} {time.monotonic()}\\n")
'''

RECORDS = '''
import pytest
from spans import span


@pytest.fixture(scope="module")
def recorded(machine_alone):
    span("records-before", 0.3)  # shared
    with machine_alone():
        span("records-alone", 1.5)
    span("records-after", 0.3)  # shared again


@pytest.mark.parametrize("i", range(3))
def test_reads(recorded, i):
    span(f"reads-{i}", 0.3)
'''

ALONE = '''
import pytest
from spans import span

pytestmark = pytest.mark.alone


@pytest.mark.parametrize("i", range(3))
def test_alone(i):
    span(f"alone-{i}", 0.4)
'''

OTHERS = '''
import pytest
from spans import span


@pytest.mark.parametrize("i", range(6))
def test_other(i):
    span(f"{__name__}-{i}", 0.2)
'''


def test_the_alone_tests_and_the_fixtures_alone_block_overlap_no_other_test(tmp_path):
    # GIVEN an inner session: a module whose fixture records alone, a module of `alone` tests,
    # two of plain tests, on three workers
    for name, text in {"conftest": CONFTEST, "spans": SPANS, "test_records": RECORDS,
                       "test_alone": ALONE, "test_others_a": OTHERS,
                       "test_others_b": OTHERS}.items():
        (tmp_path / f"{name}.py").write_text(text)
    spans = tmp_path / "spans.txt"
    env = {**os.environ, "SPANS": str(spans), "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO), str(tmp_path), os.environ.get("PYTHONPATH")]))}
    # WHEN it runs (a wrong lock order would leave it waiting: the timeout)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "3", "--dist",
                           "loadfile", "-p", "no:cacheprovider", "-p", "no:zarr", "-W",
                           "ignore::pytest.PytestUnknownMarkWarning", str(tmp_path)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # THEN every test ran; the `alone` tests and the fixture's alone block overlap nothing else
    rows = [line.split() for line in spans.read_text().splitlines()]
    got = {name: (float(t0), float(t1)) for name, t0, t1 in rows}
    assert len(got) == len(rows) == 3 + 3 + 3 + 2 * 6, sorted(got)
    for name in ("records-alone", "alone-0", "alone-1", "alone-2"):
        t0, t1 = got[name]
        overlapping = [other for other, (u0, u1) in got.items()
                       if other != name and u0 < t1 and t0 < u1]
        assert not overlapping, (name, overlapping)
    # the fixture's block runs between its shared parts
    assert got["records-before"][1] <= got["records-alone"][0]
    assert got["records-alone"][1] <= got["records-after"][0]
    # and the summary says how long each module held the machine alone: its block, its tests
    held = re.search(r"^Machine held alone: \d+ s \((.*)\)$", proc.stdout, re.M)
    assert held, proc.stdout[-3000:]
    per_module = dict(re.findall(r"(\S+) ([\d.]+) s", held.group(1)))
    assert per_module.keys() == {"test_records.py", "test_alone.py"}, held.group(0)
    block = got["records-alone"][1] - got["records-alone"][0]
    assert abs(float(per_module["test_records.py"]) - block) < 0.15, (held.group(0), block)
    # (three tests of 0.4 s, to the tenth)
    assert 1.15 <= float(per_module["test_alone.py"]) < 2.2, held.group(0)
