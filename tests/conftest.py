"""Shared test helpers: real fixtures from ../shared (skipped with a reason when absent), the
marker checks, and the recorded runs the whole session shares (docs/testing.md lists them)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
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


# ---- recorded runs shared by the session -------------------------------------------------------
# Starting a LocalCluster under `collect` is most of a cluster test's time, so a job that several
# modules only read is recorded once here. Treat the folder as read-only: copy it
# (shutil.copytree) before adding logs or damaging it. Tests that kill processes, inject faults
# or need a job of their own keep their own run. The first test that asks for one starts the
# cluster, so it carries the `cluster` marker like every other user.

JOBS = REPO / "tests" / "collectors"


@dataclass(frozen=True)
class RecordedRun:
    """A job of ``tests/collectors/jobs.py`` recorded under ``collect``."""

    run: Path
    #: what each task observed itself (``jobs.py`` writes it): one dict per task
    truth: list[dict[str, Any]]
    #: whether a real darshan-runtime traced it (else its logs were written from ``truth``)
    real_darshan: bool


def _collect(tmp: Path, job: str, job_arg: str, *flags: str,
             env: dict[str, str] | None = None) -> Path:
    run = tmp / "run"
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(run), *flags, "--",
           sys.executable, "jobs.py", job, job_arg]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=JOBS, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run


def _made_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Any]) -> Any:
    """``make(folder)`` (a JSON value) in a folder of its own, once per session: under xdist
    the first worker that asks makes it while the others wait on a lock, then each reads what
    it returned (``made.json``)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return make(factory.mktemp(name))
    folder = factory.getbasetemp().parent / name  # the run's folder, shared by its workers
    with open(f"{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        made = folder / "made.json"
        if not made.exists():  # (a folder without it: a worker whose make failed)
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            made.write_text(json.dumps(make(folder)))
        return json.loads(made.read_text())


def _recorded(made: dict[str, Any]) -> RecordedRun:
    return RecordedRun(Path(made["run"]), made["truth"], made["real_darshan"])


@pytest.fixture(scope="session")
def cluster_run(tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    """``jobs.py cluster`` (2 worker processes x 4 threads: CPU burners, sleepers, one block
    moved between the workers) under ``collect --profile sample --darshan off``."""
    def make(tmp: Path) -> dict[str, Any]:
        run = _collect(tmp, "cluster", str(tmp / "truth.json"), "--darshan", "off",
                       "--profile", "sample", "--flush-interval", "0.5")
        return {"run": str(run), "truth": json.loads((tmp / "truth.json").read_text()),
                "real_darshan": False}
    return _recorded(_made_once(tmp_path_factory, "shared-cluster", make))


@pytest.fixture(scope="session")
def io_run(tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    """``jobs.py io`` (16 tasks writing and reading their own files in known calls, CPU burners
    and sleepers, 2 worker processes x 4 threads) under ``collect --profile sample``, the files
    each task opened recorded, with Darshan logs: the real runtime's when one is found, else written through libdarshan-util
    from the calls the tasks recorded (``v2-40`` layout, DXT on)."""
    from collectors.darshan_env import find_runtime
    from testing.darshan_writer import write_logs_from_truth
    from tests.engine.collect_job import job_environment

    def make(tmp: Path) -> dict[str, Any]:
        (tmp / "data").mkdir()
        lib, _how = find_runtime("auto")
        # the workers record the files tasks open, as under a real runtime
        run = _collect(tmp, "io", f"{tmp / 'truth.json'},{tmp / 'data'}", "--darshan",
                       lib or "off", "--profile", "sample", "--flush-interval", "1",
                       env=job_environment(lib))
        truth = json.loads((tmp / "truth.json").read_text())
        if not lib:
            write_logs_from_truth(run, truth, "v2-40")
        return {"run": str(run), "truth": truth, "real_darshan": bool(lib)}
    return _recorded(_made_once(tmp_path_factory, "shared-io", make))


@pytest.fixture(scope="session")
def correlated_fixture(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``correlated_fixture(NAME)``: the output folder of ``correlate
    ../shared/fixtures/NAME -o OUT`` (tables, summary, reports), made once per session and
    read-only; skips like ``fixture_path`` when the fixture is absent (mark the test
    ``fixtures``)."""
    from correlate.cli import main

    done: dict[str, Path] = {}

    def make(name: str) -> Callable[[Path], str]:
        def made(tmp: Path) -> str:
            assert main([str(fixture_path(name)), "-o", str(tmp / "out")]) == 0
            return str(tmp / "out")
        return made

    def correlated(name: str) -> Path:
        if name not in done:
            fixture_path(name)  # skips (naming it) before any lock is taken
            done[name] = Path(_made_once(tmp_path_factory, f"correlated-{name}", make(name)))
        return done[name]
    return correlated


# ---- running under pytest-xdist (`-n 3 --dist loadfile`, the README's command) ------------------
# loadfile: a module's tests go to one worker, so a module's recorded run is made once; a session
# run (cluster_run, io_run, correlated_fixture) is made by the first worker that asks for it
# (_made_once).
# A test marked `alone` compares the machine's timings between runs it records itself (the
# findings' span saved): it runs while no other test does.
# Every xdist worker's tests pass through two file locks: a test takes the turnstile, then the
# room (shared; `alone`: exclusive) and lets the turnstile go (`alone`: keeps it until it ends),
# so a waiting `alone` test stops new tests entering and is never starved by them.
# A test, or a module fixture whose tests only read the runs it recorded, holds the machine
# alone only while it records (the `machine_alone` fixture: real-run compares, stall times, MPI
# ranks that poll) and shares it for the rest.
_LOCKS = pytest.StashKey[tuple[int, int]]()
#: whether the test running in this worker holds the room exclusively (an `alone` test)
_ALONE = pytest.StashKey[bool]()
#: seconds this worker's `machine_alone` blocks held the machine, not yet in a report
_BLOCKS_S = pytest.StashKey[float]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, None, None]:
    locks = item.config.stash.get(_LOCKS, None)
    if locks is None:
        yield
        return
    turnstile, room = locks
    alone = item.get_closest_marker("alone") is not None
    fcntl.flock(turnstile, fcntl.LOCK_EX)
    fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
    if not alone:
        fcntl.flock(turnstile, fcntl.LOCK_UN)
    item.config.stash[_ALONE] = alone
    try:
        yield
    finally:
        fcntl.flock(room, fcntl.LOCK_UN)
        if alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)


@contextmanager
def _alone_while(config: pytest.Config) -> Iterator[None]:
    """The machine alone for the block, from inside a test that holds the room shared."""
    locks = config.stash.get(_LOCKS, None)
    if locks is None or config.stash.get(_ALONE, True):  # no xdist, or alone already
        yield
        return
    turnstile, room = locks
    # the room first: an `alone` test waiting for the room holds the turnstile, so queuing at
    # the turnstile with the room held (shared) would leave both waiting for ever
    fcntl.flock(room, fcntl.LOCK_UN)
    fcntl.flock(turnstile, fcntl.LOCK_EX)
    fcntl.flock(room, fcntl.LOCK_EX)
    start = time.monotonic()
    try:
        yield
    finally:
        config.stash[_BLOCKS_S] = config.stash.get(_BLOCKS_S, 0.0) + time.monotonic() - start
        # back to the room shared, as the test entered; with the turnstile held nobody else is
        # waiting for the room, so the change (not atomic with flock) lets no one in between
        fcntl.flock(room, fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def machine_alone(pytestconfig: pytest.Config) -> Callable[[], AbstractContextManager[None]]:
    """``with machine_alone(): ...`` runs the block while no other test runs, as an `alone`
    test runs whole: for a test, or a module fixture, that records runs whose timings are
    compared and then only reads them (writes their logs, correlates them), so the reading and
    the tests share the machine. Outside xdist, or inside an `alone` test, it does
    nothing. A module that uses it is handed out first, like the `alone` ones."""
    return lambda: _alone_while(pytestconfig)


def _module_order(items: list[pytest.Item]) -> dict[str, int]:
    """Each module's place in the run: the `alone` modules and those that use `machine_alone`
    first (nothing else has started, so none waits for other tests to end), then the modules
    that start Dask clusters (the longest: one of them taken last would end the run alone),
    then the rest, each group in collection order."""
    order: dict[str, int] = {}
    for item in items:
        marks = {m.name for m in item.iter_markers()}
        alone = "alone" in marks or "machine_alone" in getattr(item, "fixturenames", ())
        rank = 0 if alone else 1 if "cluster" in marks else 2
        module = _module(item)
        order[module] = min(rank, order.get(module, rank))
    return order


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    order = _module_order(items)
    items.sort(key=lambda item: order[_module(item)])  # (stable)


_LOCK_FOLDER = pytest.StashKey[Path]()


def _lock_folder(testrunuid: str) -> Path:
    return Path(tempfile.gettempdir()) / f"correlate-test-locks-{testrunuid}"


def _open_locks(config: pytest.Config) -> None:
    """The lock files, in a folder every xdist worker of this run shares (named by the run's
    ``testrunuid``); none outside xdist workers."""
    worker: dict[str, Any] | None = getattr(config, "workerinput", None)
    if worker is None:
        # the controller names the run, so that it can remove the folder once its workers end
        if getattr(config.option, "numprocesses", None) and hasattr(config.option, "testrunuid"):
            config.option.testrunuid = config.option.testrunuid or uuid.uuid4().hex
            config.stash[_LOCK_FOLDER] = _lock_folder(config.option.testrunuid)
        return
    folder = _lock_folder(worker["testrunuid"])
    folder.mkdir(exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT
    config.stash[_LOCKS] = (os.open(folder / "turnstile", flags, 0o600),
                            os.open(folder / "room", flags, 0o600))


# ---- markers checked against what each test did ------------------------------------------------
# `cluster` must be on every test that starts Dask servers (so `-m "not cluster"` starts none) and
# `fixtures` on every test that needs ../shared; hand-written markers drift, so a test whose
# marker is missing fails with the reason instead of passing.

_STARTS = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    folder = Path(tempfile.mkdtemp(prefix="dask-starts-"))
    config.stash[_STARTS] = folder
    config.pluginmanager.register(_ServersStarted(), "dask-servers-started")
    config.pluginmanager.register(_HeldAlone(), "held-alone")
    _open_locks(config)
    # xdist hands out the modules in the order of pytest_collection_modifyitems, not sorted by
    # their number of tests (which would put the many quick unit tests first)
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    os.environ[dask_starts.ENV] = str(folder)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(dask_starts.SITE), os.environ.get("PYTHONPATH")]))
    dask_starts.watch()


def pytest_unconfigure(config: pytest.Config) -> None:
    for key in (_STARTS, _LOCK_FOLDER):
        folder = config.stash.get(key, None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _wrong_marker(item: pytest.Item, report: pytest.TestReport) -> str | None:
    starts = dask_starts.take(item.config.stash[_STARTS])
    if starts:  # counted by pytest_runtest_logreport, in the process that prints the summary
        report.user_properties = [*report.user_properties, ("dask_starts", dict(Counter(starts)))]
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
    held = _held_alone(item, report)
    if held:
        report.user_properties = [*report.user_properties, ("alone_s", held)]
    problem = _wrong_marker(item, report)
    if problem is not None:
        report.outcome = "failed"
        report.longrepr = problem


def _held_alone(item: pytest.Item, report: pytest.TestReport) -> float:
    """Seconds this phase of the test held the machine alone (under xdist): the whole phase of
    an `alone` test, the `machine_alone` blocks run in it otherwise."""
    config = item.config
    if config.stash.get(_LOCKS, None) is None:
        return 0.0
    if config.stash.get(_ALONE, False):
        return report.duration
    held = config.stash.get(_BLOCKS_S, 0.0)
    config.stash[_BLOCKS_S] = 0.0
    return held


class _HeldAlone:
    """How long each module held the machine alone (its `alone` tests, its `machine_alone`
    blocks), printed at the end: while one does, the other workers wait, so these seconds add
    to the run's time one for one."""

    def __init__(self) -> None:
        self.held: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, seconds in report.user_properties:
            if name == "alone_s":
                self.held[report.nodeid.split("::", 1)[0]] += seconds

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.held:
            terminalreporter.write_line(
                f"Machine held alone: {sum(self.held.values()):.0f} s (" + ", ".join(
                    f"{module} {s:.1f} s" for module, s in self.held.most_common()) + ")")


class _ServersStarted:
    """How many Dask servers the tests started, by kind, printed at the end: most of the suite's
    time is their start-up, so a new test that starts a cluster where a shared run would do
    shows here. Summed from the reports, which under xdist reach the controller from every
    worker."""

    def __init__(self) -> None:
        self.started: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, starts in report.user_properties:
            if name == "dask_starts":
                self.started.update(starts)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.started:
            terminalreporter.write_line("Dask servers started by the tests: " + ", ".join(
                f"{n} {kind}" for kind, n in sorted(self.started.items())))
