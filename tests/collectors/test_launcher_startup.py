"""`collect` starts the job without importing Dask when no Dask setting can name a preload, and
gives the same preload variables as Dask's own config would; any place that could name one
(a variable, a config file in any folder Dask reads) takes the path through ``dask.config``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collectors import job_env


@pytest.fixture
def no_dask_settings(tmp_path, monkeypatch):
    """Every place Dask reads settings from, empty (folders under tmp_path)."""
    for k in list(os.environ):
        if k.upper().startswith("DASK_"):
            monkeypatch.delenv(k)
    home, root, prefix = (tmp_path / n for n in ("home", "etc-dask", "prefix"))
    for d in (home, root, prefix):
        d.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DASK_ROOT_CONFIG", str(root))
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.setattr(job_env.site, "PREFIXES", [str(prefix)])
    return tmp_path


def test_without_settings_the_variables_are_those_dask_gives(no_dask_settings, monkeypatch):
    assert not job_env.dask_may_set_preloads()
    fast = job_env.preload_variables()
    monkeypatch.setattr(job_env, "dask_may_set_preloads", lambda: True)
    slow = job_env.preload_variables()
    assert fast == slow == {
        "DASK_DISTRIBUTED__SCHEDULER__PRELOAD": "['collectors.preload']",
        "DASK_DISTRIBUTED__WORKER__PRELOAD": "['collectors.preload']"}


@pytest.mark.parametrize("where", ["home", "root", "prefix", "DASK_CONFIG dir",
                                   "DASK_CONFIG file"])
def test_a_config_file_naming_a_preload_is_read_through_dask(no_dask_settings, monkeypatch,
                                                             where):
    text = "distributed:\n  worker:\n    preload: [theirs]\n"
    folder = {"home": no_dask_settings / "home" / ".config" / "dask",
              "root": no_dask_settings / "etc-dask",
              "prefix": no_dask_settings / "prefix" / "etc" / "dask"}.get(
        where, no_dask_settings / "conf")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "other.yaml").write_text("distributed:\n  comm:\n    timeouts: {}\n")
    assert not job_env.dask_may_set_preloads()
    (folder / "distributed.yaml").write_text(text)
    if where.startswith("DASK_CONFIG"):
        monkeypatch.setenv("DASK_CONFIG", str(folder / "distributed.yaml"
                                                  if where.endswith("file") else folder))
    assert job_env.dask_may_set_preloads()


def test_a_distributed_variable_is_read_through_dask(no_dask_settings, monkeypatch):
    monkeypatch.setenv("DASK_DISTRIBUTED__WORKER", "{'preload': ['theirs']}")
    assert job_env.dask_may_set_preloads()


def test_collect_never_imports_dask(no_dask_settings, tmp_path):
    """The job's environment is ready, and the job started, with no `dask` module loaded, and
    none is loaded afterwards either (the manifest leaves Dask's settings to the scheduler's
    proc.json): importing Dask was most of `collect`'s own CPU."""
    probe = ("import subprocess, sys\n"
             "from collectors import launcher\n"
             "seen = []\n"
             "class Popen(subprocess.Popen):\n"
             "    def __init__(self, *a, **k):\n"
             "        seen.append('dask' in sys.modules)\n"
             "        super().__init__(*a, **k)\n"
             "subprocess.Popen = Popen\n"
             f"code = launcher.main(['-o', {str(tmp_path / 'run')!r}, '--darshan', 'off', '--',"
             " 'true'])\n"
             "print(code, [seen[0], 'dask' in sys.modules])\n")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("DASK_")}
    env.update(HOME=str(tmp_path / "home"), DASK_ROOT_CONFIG=str(tmp_path / "etc-dask"))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=env, cwd=Path(__file__).parents[2], timeout=60)
    code, seen = out.stdout.split(" ", 1)
    assert code == "0" and seen.strip() == "[False, False]", out.stderr[-2000:]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["dask_config"] is None and "dask_config" in manifest["unknown"]


def test_the_places_checked_cover_those_dask_reads(tmp_path):
    """Dask reads its YAML from ``dask.config.paths`` (fixed when it is imported, so compared in
    a fresh process): a Dask that reads a new place fails here, not silently in a user's job."""
    probe = ("import dask.config\n"
             "from collectors import job_env\n"
             "print(sorted(set(dask.config.paths) - set(job_env.dask_config_places())))\n")
    env = dict(os.environ, DASK_CONFIG=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                         cwd=Path(__file__).parents[2], timeout=60)
    assert out.stdout.strip() == "[]", out.stderr[-2000:]


def test_manifest_versions_are_those_importlib_metadata_reads():
    """The manifest reads versions from dist-info folder names (importing importlib.metadata
    cost `collect` more than the rest of its manifest); they must be what it would read."""
    from importlib import metadata

    from collectors import manifest

    names = ("dask-correlate", "dask", "distributed", "yappi", "darshan", "numpy", "pyarrow",
             "polars", "PyYAML", "typing_extensions", "no-such-distribution-x")
    expected = {}
    for name in names:
        try:
            expected[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            expected[name] = None
    assert manifest.versions(names) == expected
    assert expected["no-such-distribution-x"] is None and expected["dask"] is not None
