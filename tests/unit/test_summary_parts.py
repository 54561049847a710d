"""Parts of summary.json: from literal frames, where the bytes went and their shares, the
spill per worker, and the warning that names doubtful file names (how many are listed); from
the committed sample run with one thing taken away, the warnings and headline lines that say
so, and where the spill figures come from."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from correlate.attribution import doubtful, local_dir
from correlate.engine import correlate_frames
from correlate.schema import TABLES
from correlate.sources.frames import RunFrames, make_rejects
from correlate.sources.run_folder import load
from correlate.summary import (
    _destinations,
    _doubtful_paths,
    _incomplete_logs,
    _inconsistent_records,
    _io_totals,
    _shared_readers,
    _spill_per_worker,
    headline_problems,
    spill_source,
)


def test_destinations_add_up_with_shares_to_four_places():
    by_method = pl.DataFrame({"attribution": ["exact-thread"], "bytes": [1000.0]})
    # (reasons that sort before and after the spill's: only the spill's is spill)
    reasons = pl.DataFrame({"reason": [local_dir.SPILL, "outside any task",
                                       "worker without task windows"],
                            "bytes": [500.0, 1000.0, 500.0]})
    got = _destinations(3000.0, 1000.0, by_method, reasons)
    assert {k: v["bytes"] for k, v in got.items()} == {
        "tasks": 1000, "shuffles": 0, "spill": 500, "not_tasks": 0, "unexplained": 1500}
    assert got["tasks"]["share"] == 0.3333 and got["spill"]["share"] == 0.1667
    assert sum(v["bytes"] for v in got.values()) == 3000
    # no I/O at all: the shares are unknown, not 0
    empty = _destinations(0.0, 0.0, by_method.clear(), reasons.clear())
    assert {v["share"] for v in empty.values()} == {None}


def test_spill_per_worker_is_each_process_s_keys_bytes_and_times():
    spilled = pl.DataFrame({"host": ["b", "a", "a", "a"], "pid": [2, 1, 1, 1],
                            "key": ["x", "y", "y", "z"],
                            "op": ["write", "write", "read", "write"],
                            "bytes": [10.0, 100.0, 100.0, 50.0],
                            "io_time_s": [0.5, 0.25, 0.125, 0.0625]})
    assert _spill_per_worker(spilled) == [
        {"host": "a", "pid": 1, "keys": 2, "spilled_bytes": 150, "spill_write_s": 0.3125,
         "unspilled_bytes": 100, "unspill_read_s": 0.125},
        {"host": "b", "pid": 2, "keys": 1, "spilled_bytes": 10, "spill_write_s": 0.5,
         "unspilled_bytes": 0, "unspill_read_s": 0.0}]
    assert _spill_per_worker(None) == [] and _spill_per_worker(spilled.clear()) == []


def _doubtful(n: int) -> pl.DataFrame:
    return pl.DataFrame({"path": [f"f{i}" for i in range(n)],
                         "bytes": [float(100 * (i + 1)) for i in range(n)],
                         "reason": [doubtful.RELATIVE] * n},
                        schema={"path": pl.String, "bytes": pl.Float64, "reason": pl.String})


def test_the_doubtful_names_warning_lists_five_largest_and_counts_the_rest():
    (line,) = _doubtful_paths(_doubtful(8))
    assert line.startswith("8 file name(s)")
    assert line.endswith(": f7 (800 B); f6 (700 B); f5 (600 B); f4 (500 B); f3 (400 B); "
                         "and 3 more")
    (line,) = _doubtful_paths(_doubtful(5))
    assert line.endswith("; f0 (100 B)")  # all five named, none more
    assert _doubtful_paths(_doubtful(0)) == []


SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "run-v1"


@pytest.fixture(scope="module")
def sample() -> RunFrames:
    """The committed sample run (DXT with clock markers, every worker's clock sampled)."""
    return load(SAMPLE).collected()


def _warnings(frames: RunFrames) -> list[str]:
    return correlate_frames(frames).summary["warnings"]


def test_a_worker_without_clock_samples_is_named_once_with_it_none_is(sample):
    assert not any("without clock samples" in w for w in _warnings(sample))
    pid = sample.clock_samples["pid"].unique().sort()[0]
    fewer = replace(sample, clock_samples=sample.clock_samples.filter(pl.col("pid") != pid))
    assert [w[:42] for w in _warnings(fewer) if "without clock samples" in w] == [
        "1 worker process(es) without clock samples"]


def test_dxt_without_clock_markers_says_the_header_clock_is_used(sample):
    assert not any("no clock markers" in w for w in _warnings(sample))
    # no markers, and segments without thread ids (DXT v1): no way to estimate the offset
    unmarked = replace(sample, clock_markers=sample.clock_markers.clear(),
                       io_segments=sample.io_segments.with_columns(
                           thread_id=pl.lit(None, pl.UInt64)))
    workers = sample.executions.select("host", "pid").unique().height
    assert [w for w in _warnings(unmarked) if "no clock markers" in w][0].startswith(
        f"{workers} worker process(es) with DXT but no clock markers")


def test_spill_figures_come_from_dxt_else_from_the_counters_else_nowhere(sample):
    assert spill_source(sample) == "darshan (spill file segments)"
    counters_only = replace(sample, darshan_logs=sample.darshan_logs.with_columns(
        modules=pl.lit(["POSIX"], pl.List(pl.String)), segment_count=pl.lit(0, pl.Int64)),
        io_segments=sample.io_segments.clear())
    assert spill_source(counters_only) == "darshan (POSIX counters of each spill file, no DXT)"
    assert spill_source(replace(counters_only,
                                io_file_counters=sample.io_file_counters.clear())) is None


def test_the_headline_counts_rejected_records_only_when_there_are_some(sample):
    assert headline_problems(sample) == []
    rejected = replace(sample, rejects=make_rejects([("run-folder", "procs/x/p.arrow",
                                                      "unreadable part", 3)]))
    assert headline_problems(rejected) == [
        "3 record(s) could not be used and are left out of the totals (see Data quality)"]


def test_io_totals_add_the_dxt_segments_stdio_and_posix_counters():
    segment_totals = pl.DataFrame({"host": ["a"], "pid": [1], "attribution": ["exact-thread"],
                                   "bytes": [100.0], "segments": [4],
                                   "io_time_ns": [2_500_000_000]})
    tables = {name: TABLES[name].empty() for name in ("tasks", "task_files", "unattributed")}
    got = _io_totals(tables, segment_totals, {"bytes": 10.0, "ops": 2.0, "io_time_s": 0.5},
                     {"bytes": 20.0, "ops": 3.0, "io_time_s": 0.25})
    assert got["total"] == {"bytes": 130, "ops": 9, "io_time_s": 3.25}
    assert got["segments_by_method"] == {"exact-thread": 4}


def test_a_run_without_darshan_logs_says_first_that_io_is_unknown(sample):
    blind = replace(sample, darshan_logs=sample.darshan_logs.clear(),
                    io_segments=sample.io_segments.clear(),
                    io_file_counters=sample.io_file_counters.clear())
    assert headline_problems(blind)[0].startswith("I/O was not captured (no Darshan logs")
    assert headline_problems(blind)[0].endswith(
        "): read, written and I/O time per task are unknown, not zero")


def test_the_clean_sample_has_no_warning_and_no_spill(sample):
    summary = correlate_frames(sample).summary
    assert summary["warnings"] == [] and summary["headline"] == []
    # Darshan traced every file (DXT) and none is in a spill store: 0 keys spilled, not unknown
    assert not sample.io_segments["path"].str.contains("/storage/").any()
    assert summary["spill"]["keys_spilled"] == 0 and summary["spill"]["spilled_bytes"] == 0


def _logs(n: int) -> pl.DataFrame:
    return pl.DataFrame({"log": [f"/logs/l{i}.darshan" for i in range(n)],
                         "modules_failed": [["DXT_POSIX: truncated log"]] * n,
                         "partial": [False] * n, "dxt_untraced_ops": [0] * n},
                        schema={"log": pl.String, "modules_failed": pl.List(pl.String),
                                "partial": pl.Boolean, "dxt_untraced_ops": pl.Int64})


def test_incomplete_logs_name_three_and_count_the_rest():
    (three,) = _incomplete_logs(_logs(3))
    assert three.startswith("3 of 3 Darshan log(s) incomplete") and "in all" not in three
    (four,) = _incomplete_logs(_logs(4))
    assert four.endswith("l2.darshan (DXT_POSIX: truncated log); … (4 in all)")


def test_bytes_given_against_darshan_s_record_are_counted_per_method_in_one_line():
    files = pl.DataFrame({"key": [f"k{i:02}" for i in range(13)], "op": ["read"] * 13,
                          "attribution": ["stdio-reassigned"] * 10 + ["stdio-refiled"] * 2
                          + ["inconsistent-split"],
                          "bytes": [float(1000 - i) for i in range(13)],
                          "path": ["/d/f"] * 12 + ["/d/g"], "execution_id": list(range(13))})
    (line,) = _inconsistent_records(files)
    assert "12,922 B of 13 execution(s) on 2 file(s)" in line
    assert ("9,955 B to the evident owner (stdio-reassigned); 1,979 B to the evident owner, "
            "under the file it opened (stdio-refiled); 988 B by time (inconsistent-split)"
            in line)
    (line,) = _inconsistent_records(files.head(10))
    assert "9,955 B of 10 execution(s) on 1 file(s)" in line and "refiled" not in line
    assert _inconsistent_records(files.clear()) == []
    shared = files.with_columns(attribution=pl.lit("helper-shared"),
                                path=pl.format("/d/f{}", pl.col("key")))
    (line,) = _shared_readers(shared.head(8))
    assert line.endswith("/d/fk04: 996 B shared with 1 concurrent readers of the file; "
                         "and 3 more file(s)")
    (line,) = _shared_readers(shared.head(5))
    assert line.endswith("/d/fk04: 996 B shared with 1 concurrent readers of the file")
