"""Distributed's own tests with the collectors preloaded, against the same tests without them.

    python benchmarks/dask_suite.py [--mirror GIT_DIR] [--select FILE_OR_NODE ...] [-k EXPR]
                                    [--confirm N]

The installed ``distributed`` wheel ships no tests (nor does its sdist, from 2026.8 on), so the
tests of the installed version are taken from, in this order: the sdist of the exact installed
version (``pip download distributed==V --no-binary :all:``, if it has them), else a git mirror
of distributed, ``--mirror GIT_DIR`` (a bare repository or a checkout's ``.git``): the tag ``V``
if it exists, else the commit of the mirror whose non-test sources differ from the installed package in the fewest files (the
files that differ are printed). The tests run against a copy of the installed package in a temp
dir, the selected tests' folders put into it (utils_test finds its certificates beside itself),
under a pytest configuration taken from that version's ``pyproject.toml`` (its warning filters
and markers; pytest-timeout's keys dropped, ``flaky`` registered, as those plugins may be absent).

The selection runs twice, a file at a time (plain and with the collectors back to back): plain,
and with the collectors preloaded as ``collect env`` sets them
up for a batch script (every ``export`` it prints, ``DASK_DISTRIBUTED__SCHEDULER__PRELOAD`` and
``…WORKER__PRELOAD`` among them, into a run folder in the temp dir). A test that passed plainly
but not with the collectors is run again ``--confirm`` times in both ways: if it then passes with
the collectors it is reported as flaky, otherwise the script fails (exit 1) naming it.
Prints a side-by-side table of outcomes and the wall time of each run and their ratio.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

#: plugins, preload, nanny, and the parts of test_worker/test_scheduler about a server's life
DEFAULT_SELECT = (
    "distributed/diagnostics/tests/test_worker_plugin.py",
    "distributed/diagnostics/tests/test_scheduler_plugin.py",
    "distributed/diagnostics/tests/test_nanny_plugin.py",
    "distributed/tests/test_preload.py",
    "distributed/tests/test_nanny.py",
    "distributed/tests/test_worker.py",
    "distributed/tests/test_scheduler.py",
)
#: -k for the two big files (the rest run whole): start, close, restart, retire, plugins
DEFAULT_K = ("not (test_worker.py or test_scheduler.py) or plugin or preload or close "
             "or restart or retire or remove or lifetime or heartbeat or stop")
BIN = Path(sys.executable).parent


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- where the tests come from
def installed() -> tuple[str, Path]:
    import distributed

    return importlib.metadata.version("distributed"), Path(distributed.__file__).parent


def from_sdist(version: str, dest: Path) -> Path | None:
    """The sdist's root if it carries distributed/tests, else None (no network, or none)."""
    dl = dest / "sdist"
    r = subprocess.run([sys.executable, "-m", "pip", "download", f"distributed=={version}",
                        "--no-binary", ":all:", "--no-deps", "-q", "-d", str(dl)],
                       capture_output=True, text=True, timeout=600)
    tars = sorted(dl.glob("distributed-*.tar.gz")) if r.returncode == 0 else []
    if not tars:
        log(f"sdist: not downloaded ({r.stderr.strip().splitlines()[-1:] or r.returncode})")
        return None
    with tarfile.open(tars[0]) as tar:
        tar.extractall(dl, filter="data")
    root = dl / f"distributed-{version}"
    if not (root / "distributed" / "tests").is_dir():
        log(f"sdist: distributed {version}'s sdist has no tests; its pytest configuration is "
            "used with the mirror's tests")
        return None
    return root


def git(mirror: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={mirror}", *args], check=True,
                          capture_output=True, text=True).stdout


def closest_commit(mirror: Path, version: str, package: Path) -> tuple[str, list[str]]:
    """The mirror's tag ``version``, else the commit whose distributed/*.py (tests aside)
    differ least from the installed package; with the files that differ."""
    paths = sorted(p for p in package.rglob("*.py")
                   if "tests" not in p.relative_to(package).parts and p.name != "_version.py")
    mine = {f"distributed/{p.relative_to(package)}": h for p, h in zip(paths, subprocess.run(
        ["git", "hash-object", "--stdin-paths"], input="\n".join(map(str, paths)),
        check=True, capture_output=True, text=True).stdout.split(), strict=True)}

    def differing(ref: str) -> list[str]:
        theirs = {}
        for line in git(mirror, "ls-tree", "-r", ref, "distributed").splitlines():
            meta, path = line.split("\t", 1)
            if path.endswith(".py") and "/tests/" not in path and not path.endswith("_version.py"):
                theirs[path] = meta.split()[2]
        return sorted(p for p in mine.keys() | theirs.keys() if mine.get(p) != theirs.get(p))

    if version in git(mirror, "tag", "--list", version).split():
        return version, differing(version)
    head = next(r for r in ("main", "HEAD") if subprocess.run(
        ["git", f"--git-dir={mirror}", "rev-parse", "-q", "--verify", r],
        capture_output=True).returncode == 0)
    candidates = git(mirror, "rev-list", "--first-parent", "--max-count=150", head).split()
    best = min(candidates, key=lambda c: (len(differing(c)), candidates.index(c)))
    return best, differing(best)


def fetch_tests(version: str, package: Path, dest: Path, select: list[str],
                mirror: Path | None) -> tuple[str, Path]:
    """Put the selected test files, distributed's root conftest.py and its pytest
    configuration under dest; return where they came from and the pyproject used."""
    shutil.copytree(package, dest / "distributed", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    sdist = from_sdist(version, dest)
    folders = sorted({str(Path(s.split("::")[0]).parent) for s in select})
    if sdist is not None:
        for f in folders:
            shutil.copytree(sdist / f, dest / f, dirs_exist_ok=True)
        shutil.copy2(sdist / "conftest.py", dest / "conftest.py")
        return f"sdist distributed-{version}", sdist / "pyproject.toml"
    if mirror is None or not mirror.is_dir():
        raise SystemExit(f"dask_suite: no tests for distributed {version}: the sdist has none "
                         + ("and no --mirror given" if mirror is None
                            else f"and no git directory at {mirror}"))
    ref, diff = closest_commit(mirror, version, package)
    archive = subprocess.run(["git", f"--git-dir={mirror}", "archive", ref, *folders,
                              "conftest.py", "pyproject.toml"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "x", "-C", str(dest)], input=archive, check=True)
    exact = "exact tag" if ref == version else f"{len(diff)} non-test file(s) differ: " + \
        ", ".join(diff)
    pyproject = (dest / "sdist" / f"distributed-{version}" / "pyproject.toml")
    return (f"mirror {mirror} at {ref[:12]} ({exact})",
            pyproject if pyproject.exists() else dest / "pyproject.toml")


def write_ini(pyproject: Path, dest: Path) -> None:
    """Distributed's pytest settings (warnings are errors, strict markers), minus what needs
    plugins that may be absent here (pytest-timeout, pytest-rerunfailures, coloured output)."""
    cfg = tomllib.loads(pyproject.read_text())["tool"]["pytest"]["ini_options"]
    markers = [*cfg.get("markers", []), "flaky: pytest-rerunfailures (not rerun here)"]
    lines = ["[pytest]", "addopts = -p no:asyncio -p no:legacypath -p no:cacheprovider "
             "--strict-markers -rfE",
             "filterwarnings ="]
    lines += [f"    {w}" for w in cfg.get("filterwarnings", [])]
    lines += ["markers ="] + [f"    {m}" for m in markers]
    (dest / "pytest.ini").write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- running
def collectors_env(run_dir: Path, darshan: str) -> dict[str, str]:
    """Every variable `collect env -o run_dir` exports, as a batch script would eval them."""
    out = subprocess.run([str(BIN / "collect"), "env", "-o", str(run_dir), "--darshan", darshan],
                         check=True, capture_output=True, text=True).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export "):].partition("=")
            env[name] = shlex.split(value)[0] if value else ""
    assert "DASK_DISTRIBUTED__WORKER__PRELOAD" in env, out
    return env


def run_pytest(dest: Path, targets: list[str], k: str | None, extra_env: dict[str, str],
               name: str, timeout: float) -> tuple[dict[str, str], float]:
    """Outcome per test id (passed, failed, error, skipped, or 'not run' on a timeout) and the
    run's wall time."""
    xml = dest / f"{name}.xml"
    xml.unlink(missing_ok=True)  # (the log keeps every run's output)
    env = {**os.environ, **extra_env,  # the copy of the installed package first
           "PYTHONPATH": os.pathsep.join(filter(None, [str(dest), os.environ.get("PYTHONPATH")]))}
    for var in ("DASK_CORRELATE_RUN_DIR",) if not extra_env else ():
        env.pop(var, None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-c", str(dest / "pytest.ini"),
           "--rootdir", str(dest), f"--junitxml={xml}", "-o", "junit_family=xunit1", *targets]
    if k:
        cmd += ["-k", k]
    t0 = time.monotonic()
    with open(dest / f"{name}.log", "a") as out:
        try:
            subprocess.run(cmd, cwd=dest, env=env, stdout=out, stderr=subprocess.STDOUT,
                           timeout=timeout)
        except subprocess.TimeoutExpired:
            log(f"{name}: pytest did not end within {timeout:.0f} s (see {dest / name}.log)")
    wall = time.monotonic() - t0
    return (parse_junit(xml) if xml.exists() else {}), wall


def parse_junit(xml: Path) -> dict[str, str]:
    """Outcome per pytest node id (xunit1's file attribute gives the module's path)."""
    outcomes = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        path = case.get("file") or ""
        dotted = path.removesuffix(".py").replace("/", ".")
        inner = (case.get("classname") or "").removeprefix(dotted).strip(".")
        test = "::".join(x for x in (path, inner, case.get("name")) if x)
        kinds = {child.tag for child in case}
        outcomes[test] = ("failed" if "failure" in kinds else "error" if "error" in kinds
                          else "skipped/xfail" if "skipped" in kinds else "passed")
    return outcomes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--select", nargs="+", default=list(DEFAULT_SELECT),
                   help="test files or node ids, relative to distributed's repository root")
    p.add_argument("-k", default=DEFAULT_K, help="pytest -k expression ('' for none)")
    p.add_argument("--confirm", type=int, default=2,
                   help="reruns of each test that passed plainly and failed with the collectors")
    p.add_argument("--darshan", default="off", help="`collect env --darshan` (default off)")
    p.add_argument("--mirror", type=Path, default=None, metavar="GIT_DIR",
                   help="a git mirror of distributed (bare, or a checkout's .git) to take the "
                        "tests from when the sdist has none (default: the sdist's tests only)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per pytest run")
    p.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = p.parse_args(argv)

    version, package = installed()
    dest = args.keep or Path(tempfile.mkdtemp(prefix="dask-suite-"))
    dest.mkdir(parents=True, exist_ok=True)
    try:
        source, pyproject = fetch_tests(version, package, dest, args.select, args.mirror)
        write_ini(pyproject, dest)
        # compiled once here, so that the first run does not pay for it
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest / "distributed")],
                       check=False, capture_output=True)
        log(f"distributed {version} installed at {package}; tests from {source}")
        env = collectors_env(dest / "run", args.darshan)
        k = args.k or None
        # one file at a time, plain and with the collectors back to back (which goes first
        # alternates), so that a change in the machine's load weighs on both alike
        plain, withc, t_plain, t_with = {}, {}, 0.0, 0.0
        for i, target in enumerate(args.select):
            for mode in ("plain", "collectors")[::1 if i % 2 == 0 else -1]:
                got, wall = run_pytest(dest, [target], k, env if mode == "collectors" else {},
                                       mode, args.timeout)
                if mode == "plain":
                    plain.update(got)
                    t_plain += wall
                else:
                    withc.update(got)
                    t_with += wall
                log(f"{target}: {mode}: {len(got)} tests in {wall:.0f} s")

        suspects = sorted(t for t, o in plain.items()
                          if o == "passed" and withc.get(t, "not run") != "passed")
        confirmed, flaky = [], []
        for t in suspects:
            again = []
            for _ in range(args.confirm):
                a, _w = run_pytest(dest, [t], None, {}, "confirm-plain", 600)
                b, _w = run_pytest(dest, [t], None, env, "confirm-collectors", 600)
                again.append((a.get(t, "not run"), b.get(t, "not run")))
            (flaky if any(b == "passed" for _a, b in again) else confirmed).append((t, again))

        report(version, source, plain, withc, t_plain, t_with, confirmed, flaky, dest, env)
        return 1 if confirmed else 0
    finally:
        if not args.keep:
            shutil.rmtree(dest, ignore_errors=True)


def report(version, source, plain, withc, t_plain, t_with, confirmed, flaky, dest, env) -> None:
    tests = sorted(plain.keys() | withc.keys())
    pairs = Counter((plain.get(t, "not run"), withc.get(t, "not run")) for t in tests)
    procs = list((dest / "run" / "procs").glob("*")) if (dest / "run" / "procs").is_dir() else []
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from collectors.sink import closing_record

    closed = sum(closing_record(d) is not None for d in procs)
    print(f"# distributed {version}'s own tests with the collectors preloaded")
    print(f"tests: {source}")
    print(f"collectors: {', '.join(f'{k}={v}' for k, v in env.items() if 'PRELOAD' in k)}")
    print(f"run folder: {len(procs)} process folders written, {closed} closed cleanly")
    print()
    print("| plain | with the collectors | tests |\n|---|---|---:|")
    for (a, b), n in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"| {a} | {b} | {n} |")
    print(f"| **wall time** | | {t_plain:.0f} s plain, {t_with:.0f} s with the collectors "
          f"(x{t_with / t_plain:.2f}) |")
    changed = [t for t in tests if plain.get(t) != withc.get(t)]
    for t in changed:
        print(f"changed: {t}: {plain.get(t, 'not run')} plain, "
              f"{withc.get(t, 'not run')} with the collectors")
    for t, again in flaky:
        print(f"flaky: {t}: passed with the collectors on a rerun ({again})")
    for t, again in confirmed:
        print(f"FAILED BY THE COLLECTORS: {t}: passes plainly, fails with them "
              f"(reruns plain/collectors: {again}); see {dest}/collectors.log")
    if confirmed:
        print(f"{len(confirmed)} test(s) of distributed fail only with the collectors",
              file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
