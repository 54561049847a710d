"""MiniApp (Recup ``Reports/``) adapter: hand-made task streams in both YAML variants, the
safe loader, and pinned values on the real fixture (skipped when ../shared is absent)."""

from __future__ import annotations

import textwrap

import polars as pl
import pytest
from conftest import fixture_path

from correlate.errors import InputError
from correlate.sources import detect, miniapp

PLAIN = """\
- key: ('array-1', 0)
  nbytes: 268
  startstops:
  - action: transfer
    source: inproc://10.0.0.1/42/2
    start: 100.0
    stop: 100.25
  - action: compute
    start: 100.5
    stop: 100.75
  status: OK
  thread: 1234
  type: !!binary |
    gAWVFQAAAAAAAACMBW51bXB5lIwHbmRhcnJheZSTlC4=
  worker: inproc://10.0.0.1/42/4
- key: finalize-abc
  startstops:
  - action: compute
    start: 101.0
  status: OK
  thread: 1235
  worker: inproc://10.0.0.1/42/4
- metadata: {}
"""

POLARIS = """\
!!python/tuple
- key: !!python/tuple ['array-2', 3, 1]
  startstops: !!python/tuple
  - action: compute
    start: 200.0
    stop: 200.5
  thread: 99
  worker: tcp://10.1.1.1:4000
"""


def test_plain_task_stream(tmp_path):
    (tmp_path / "task_stream.yaml").write_text(PLAIN)
    frames = miniapp.load(tmp_path)
    ex = frames.executions.row(0, named=True)
    assert frames.executions.height == 1
    assert (ex["key"], ex["thread_id"], ex["pid"], ex["host"]) == ("('array-1', 0)", 1234, 42,
                                                                   "10.0.0.1")
    assert (ex["local_start_ns"], ex["local_stop_ns"]) == (100_500_000_000, 100_750_000_000)
    assert frames.startstops.select("action", "source").rows() == [
        ("transfer", "inproc://10.0.0.1/42/2"), ("compute", None)]
    reasons = dict(frames.rejects.select("reason", "count").iter_rows())
    assert reasons == {"entry without a key": 1, "startstops entry without start/stop": 1}
    assert any("no transitions, task graph or transfer log" in w for w in frames.warnings)


def test_polaris_tuple_tags_need_no_unsafe_loader(tmp_path):
    (tmp_path / "task_stream.yaml").write_text(POLARIS)
    ex = miniapp.load(tmp_path).executions
    assert ex.select("key", "thread_id").rows() == [("('array-2', 3, 1)", 99)]


def test_object_tags_are_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "task_stream.yaml").write_text(textwrap.dedent(f"""\
        - key: !!python/object/apply:os.system ["touch {marker}"]
          startstops: []
        """))
    with pytest.raises(InputError, match="task_stream.yaml"):
        miniapp.load(tmp_path)
    assert not marker.exists()


def test_reports_subfolder_is_found(tmp_path):
    (tmp_path / "Reports").mkdir()
    (tmp_path / "Reports" / "task_stream.yaml").write_text(POLARIS)
    assert detect.detect(tmp_path) == "miniapp"
    assert detect.load(tmp_path).executions.height == 1


@pytest.mark.fixtures
def test_recup_miniapp_fixture():
    frames = miniapp.load(fixture_path("recup-miniapp-20240215"))
    ex = frames.executions
    assert ex.height == 8913  # task_stream entries = apply_function_simple calls in Yappi
    assert ex["key"].n_unique() == 5440
    assert ex["thread_id"].n_unique() == 12
    assert set(ex["pid"]) == {9185}
    key = pl.col("key").cast(pl.String)
    assert ex.filter(key.str.contains("_map_read_frame-")
                     & ~key.str.contains("block-info")).height == 453
    fs = frames.func_stats
    assert fs.height == 2263 and set(fs["pid"]) == {9185}
    assert fs["thread_id"].null_count() == fs.height  # not splittable per thread or task
    apply = fs.filter(pl.col("name") == "apply_function_simple")
    assert apply["ncall"].to_list() == [8913]
    assert set(fs["clock"].cast(pl.String)) == {"cpu"}
    assert frames.io_segments.is_empty() and frames.io_file_counters.height > 0
    assert any("cannot be split per task" in w for w in frames.warnings)
    assert any("no DXT" in w for w in frames.warnings)
    roles = dict(frames.processes.select("pid", pl.col("role").cast(pl.String)).iter_rows())
    assert roles == {9185: "worker", 9207: "other"}
