"""The collectors' options: one set of defaults, checked where the user passes them (the
``collect`` flags, ``collectors.record``), a clear error there; the preload gets the same options
back from the environment; and ``executions_not_timed`` counts executions Dask ran without the
plugin timing them (a process pool), not transitions."""

from __future__ import annotations

import math
import operator
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

import polars as pl
import pytest

import collectors
from collectors import launcher
from collectors.options import DEFAULTS, DXT_SEGMENTS, Options, OptionsError
from testing.raw_parts import closing_records, read_raw

BAD = [
    ({"profile": "typo"}, "profile 'typo' is not one of off, sample, yappi"),
    ({"profile": "Sample"}, "profile 'Sample'"),
    ({"flush_interval": 0}, "flush interval 0 is not a number of seconds above 0"),
    ({"flush_interval": -1.0}, "flush interval -1.0"),
    ({"flush_interval": math.nan}, "flush interval nan"),
    ({"flush_interval": math.inf}, "flush interval inf"),
    ({"flush_interval": "5"}, "flush interval '5'"),
    ({"flush_interval": True}, "flush interval True"),
]


@pytest.mark.parametrize("kwargs,message", BAD)
def test_bad_options_raise_one_clear_error(kwargs, message):
    with pytest.raises(OptionsError, match="^" + message.replace("(", r"\(")):
        Options(**kwargs)


def test_defaults_are_the_ones_every_entry_point_uses():
    from collectors import env_command

    assert DEFAULTS == Options() == Options("sample", 5.0, False, "auto", True, DXT_SEGMENTS)
    args = launcher.build_parser().parse_args(["-o", "x", "--", "true"])
    assert Options.from_args(args) == DEFAULTS
    assert Options.from_args(env_command.build_parser().parse_args(["-o", "x"])) == DEFAULTS
    # a Dask process started without `collect`'s variables knows nothing of Darshan's choice
    assert Options.from_environment({}) == Options(darshan="off", dxt=None, dxt_segments=None)
    assert Options.from_environment({"LD_PRELOAD": "/opt/lib/libdarshan.so"}).darshan == (
        "environment")


@pytest.mark.parametrize("preload,found", [
    ("/opt/lib/libdarshan.so", "/opt/lib/libdarshan.so"),
    ("/usr/lib/libjemalloc.so:/opt/lib/libdarshan.so.0", "/opt/lib/libdarshan.so.0"),
    ("/usr/lib/libjemalloc.so /opt/lib/libdarshan.so", "/opt/lib/libdarshan.so"),
    ("/opt/darshan-3.4/lib/libjemalloc.so", None),  # a folder named after Darshan only
    ("", None)])
def test_one_rule_tells_a_darshan_preload_for_the_options_and_the_manifest(
        monkeypatch, preload, found):
    from collectors import manifest, options

    env = {"LD_PRELOAD": preload}
    assert options.darshan_in_preload(env) == found
    assert Options.from_environment(env).darshan == ("environment" if found else "off")
    monkeypatch.setenv("LD_PRELOAD", preload)
    assert manifest.darshan_in_preload() == found


def test_collect_and_collect_env_take_the_same_option_flags():
    from collectors import env_command

    def flags(parser):
        return {s for a in parser._actions for s in a.option_strings} - {"-h", "--help"}

    assert flags(launcher.build_parser()) == flags(env_command.build_parser())
    assert {"--profile", "--flush-interval", "--darshan", "--dxt", "--dxt-segments"} <= flags(
        launcher.build_parser())


def test_the_environment_carries_the_options_to_the_preload():
    opts = Options("yappi", 0.25, dxt=False, dxt_segments=1000, stall_after=2)
    env = {**opts.environment(), "DASK_CORRELATE_MARKERS": "1"}
    assert Options.from_environment(env) == Options("yappi", 0.25, markers=True, dxt=False,
                                                    dxt_segments=1000, stall_after=2)
    assert opts.manifest() == {"profile": "yappi", "flush_interval_s": 0.25, "darshan": "auto",
                               "dxt": "off", "dxt_segments": 1000, "stall_after_s": 2.0}
    assert Options(dxt=None).manifest()["dxt"] is None  # not known: null, never "on"
    with pytest.raises(OptionsError, match="flush interval 'soon'"):
        Options.from_environment({"DASK_CORRELATE_FLUSH_INTERVAL": "soon"})


@pytest.mark.parametrize("flag,value,message", [
    ("--flush-interval", "0", "flush interval 0.0 is not a number of seconds above 0"),
    ("--flush-interval", "often", "flush interval 'often' is not a number"),
    ("--stall-after", "-3", "stall time -3.0 is not a number of seconds above 0"),
    ("--stall-after", "never", "stall time 'never' is not a number"),
    ("--profile", "typo", "invalid choice: 'typo'"),
])
def test_collect_refuses_bad_flags_in_one_line_before_starting(tmp_path, flag, value, message):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "collectors.launcher", "-o", str(out), flag,
                           value, "--", sys.executable, "-c", "print('ran')"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert "ran" not in proc.stdout and not out.exists()


@pytest.fixture(scope="module")
def client():
    import dask
    from distributed import Client, LocalCluster

    # non-daemonic workers, so that one can start a process pool
    with dask.config.set({"distributed.worker.daemon": False}), LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        yield c


def _add_process_pool(dask_worker):
    dask_worker.executors["processes"] = ProcessPoolExecutor(1)


@pytest.mark.cluster
def test_record_refuses_a_typo_before_touching_the_cluster(client, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(OptionsError, match="profile 'typo' is not one of"):
        with collectors.record(client, out, profile="typo"):
            pass
    assert not out.exists()
    plugins = client.run(lambda dask_worker: list(dask_worker.plugins))
    assert len(plugins) == 2
    assert not any("dask-correlate" in name for names in plugins.values() for name in names)


@pytest.mark.cluster
def test_executions_not_timed_counts_executions_run_outside_the_thread_pool(client, tmp_path):
    import dask

    client.run(_add_process_pool)
    run = tmp_path / "run"
    # no flush before the end: the count must not depend on what was flushed by then
    with collectors.record(client, run, profile="off", flush_interval=60):
        threaded = client.gather(client.map(operator.neg, range(40), pure=False))
        with dask.annotate(executor="processes"):
            pooled = client.gather(client.map(operator.pos, range(7), pure=False))
    assert threaded == [-i for i in range(40)] and pooled == list(range(7))
    closed = list(closing_records(run, "worker-*").values())
    assert len(closed) == 2
    assert sum(c["executions_not_timed"] for c in closed) == 7
    assert all(c["hook_errors"] == {} for c in closed)
    timed = read_raw(run, "task_executions", "worker-*")
    assert timed.height == 40 and timed["key"].cast(pl.String).str.contains("neg").all()
