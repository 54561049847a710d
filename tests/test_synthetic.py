"""The synthetic run generator: its run folder has the recorded sample's structure, and
``correlate`` finds exactly the totals it promises (per-execution bytes/ops, unattributed I/O by
reason, clocks, CPU, profile rows)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from correlate.cli import main as correlate_main
from correlate.schema import TABLES
from correlate.schema.run import CARRIED, DETAILS, PAIRS, SNAPSHOT_SUFFIX, STREAM_SUFFIX
from correlate.sources.run_streams import framing
from correlate.timeline.align import BOUNDED
from testing.darshan_counts import counter_bytes
from testing.synthetic import main as synthetic_main
from testing.synthetic import write_run

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "run-v1"
IO_COLS = ("read_bytes", "write_bytes", "read_ops", "write_ops")


@pytest.fixture(scope="module")
def correlated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("synthetic")
    run, out = tmp / "run", tmp / "out"
    exp = write_run(run, workers=2, threads=3, executions=300, segments=3000)
    assert correlate_main([str(run), "-o", str(out), "--no-reports"]) == 0
    return exp, run, out, json.loads((out / "summary.json").read_text())


def test_every_execution_has_exactly_its_bytes_and_ops(correlated):
    exp, _run, out, summary = correlated
    tasks = pl.read_parquet(out / "tasks.parquet")
    assert tasks.height == exp.executions == 300
    assert tasks["key"].n_unique() == 300 and summary["tasks"] == 300
    assert set(tasks["attribution"].cast(pl.String)) == {"exact-thread"}
    both = exp.per_execution.join(tasks, on="key", how="left", suffix="_got")
    assert both.height == 300
    for col in (*IO_COLS, "host", "pid", "thread_id", "prefix"):
        bad = both.filter(pl.col(col) != pl.col(f"{col}_got"))
        assert bad.is_empty(), bad.select("key", col, f"{col}_got")
    for col in ("io_time_s", "cpu_s"):
        assert (both[col] - both[f"{col}_got"]).abs().max() < 1e-9
    assert exp.executions_with_io == tasks.filter(pl.col("read_ops") + pl.col("write_ops") > 0
                                                  ).height
    per_prefix = tasks.group_by("prefix").agg(pl.len(), *[pl.col(c).sum() for c in IO_COLS])
    for row in per_prefix.iter_rows(named=True):
        want = exp.per_prefix[row["prefix"]]
        assert row["len"] == want["executions"]
        assert all(row[c] == want[c] for c in IO_COLS)


def test_io_totals_and_unattributed_remainder_are_exact(correlated):
    exp, _run, out, summary = correlated
    io = summary["io"]
    for part in ("total", "attributed", "unattributed"):
        assert io[part]["bytes"] == getattr(exp, part)["bytes"]
        assert io[part]["ops"] == getattr(exp, part)["ops"]
        assert io[part]["io_time_s"] == pytest.approx(getattr(exp, part)["io_time_s"], abs=1e-9)
    spill = exp.unattributed_by_reason["worker local directory (spill)"]["ops"]
    given = exp.attributed["ops"]
    assert io["segments_by_method"] == {"exact-thread": given, "spill": spill,
                                        "none": exp.segments - given - spill}
    assert {r["reason"]: (r["bytes"], r["ops"]) for r in io["unattributed_by_reason"]} == {
        k: (v["bytes"], v["ops"]) for k, v in exp.unattributed_by_reason.items()}
    assert set(exp.unattributed_by_reason) == {
        "collector clock marker", "outside any task execution",
        "worker local directory (spill)", "scheduler process"}
    un = pl.read_parquet(out / "unattributed.parquet").group_by("thread_kind").agg(
        pl.col("bytes").sum(), pl.col("ops").sum())
    assert {k: (b, o) for k, b, o in un.iter_rows()} == {
        k: (v["bytes"], v["ops"]) for k, v in exp.unattributed_by_thread_kind.items()}
    seg = pl.read_parquet(out / "segments.parquet")
    assert seg.height == exp.segments
    assert seg.filter(pl.col("execution_id").is_not_null()).height == exp.task_segments


def test_clocks_cpu_and_profile(correlated):
    exp, _run, out, summary = correlated
    got = {(c["host"], c["pid"], c["domain"]): c for c in summary["clocks"]}
    assert len(got) == len(exp.clocks) == 4
    for c in exp.clocks:
        g = got[(c["host"], c["pid"], c["domain"])]
        if c["domain"] == "darshan":
            assert g["offset_ns"] == c["offset_ns"]
            assert g["uncertainty_ns"] == 0 and "marker" in g["method"]
        else:  # off the scheduler's host: bounded by the task messages, the truth inside
            assert g["method"] == BOUNDED
            assert abs(g["offset_ns"] - c["true_offset_ns"]) <= g["uncertainty_ns"] < 5_000_000
    cpu = summary["cpu"]
    assert cpu["task_cpu_s"] == pytest.approx(exp.cpu["task_cpu_s"], abs=1e-6)
    assert cpu["task_wall_s"] == pytest.approx(exp.cpu["task_wall_s"], abs=1e-6)
    workers = {(w["host"], w["pid"]): w for w in cpu["per_worker"]}
    for w in exp.cpu["per_worker"]:
        g = workers[(w["host"], w["pid"])]
        assert g["process_cpu_s"] == w["process_cpu_s"]
        assert g["outside_tasks_cpu_s"] == pytest.approx(w["outside_tasks_cpu_s"], abs=1e-6)
    funcs = pl.read_parquet(out / "task_functions.parquet")
    assert funcs.height == exp.profile["task_rows"] == 5 * exp.executions
    assert funcs["ncall"].sum() == exp.profile["task_ncall"]
    assert summary["warnings"] == [] and summary["rejects"] == []
    events = pl.read_parquet(out / "events.parquet")
    assert events.height == exp.rows["scheduler_transitions"] + exp.rows["worker_transitions"]


def _tables(run: Path) -> dict[tuple[str, str], list[str]]:
    """(role, table) -> the columns of its first part (formats 1 and 2) or stream (format 3;
    its strings left out), as written."""
    out: dict[tuple[str, str], list[str]] = {}
    for f in sorted(run.glob("procs/*/*/*")):
        if f.name.endswith(".parquet"):
            names = pq.read_schema(f).names
        elif f.name.endswith(".arrow"):
            names = ipc.open_file(f).schema.names
        else:
            continue
        out.setdefault((f.parts[-3].split("-")[0], f.parts[-2]), names)
    for f in sorted(run.glob(f"procs/*/*{STREAM_SUFFIX}")) + sorted(
            run.glob(f"procs/*/*{SNAPSHOT_SUFFIX}")):
        if f.name.endswith(STREAM_SUFFIX):
            table, names = f.name.removesuffix(STREAM_SUFFIX), ipc.open_stream(f).schema.names
        else:
            table, names = f.name.removesuffix(SNAPSHOT_SUFFIX), ipc.open_file(f).schema.names
        if table != "strings":
            pairs = PAIRS.get(table, {})
            names = [c for n in names for c in pairs.get(n, (n,))]
            out.setdefault((f.parts[-2].split("-")[0], table), names)
    for (role, table), names in list(out.items()):
        if table in DETAILS and (role, DETAILS[table][0].name) in out:
            detail, by = DETAILS[table]  # format 3's details: the columns of their table
            more = [c for c in out.pop((role, detail.name), []) if c not in by]
            order = TABLES[table].names
            out[(role, table)] = sorted(names + more, key=order.index)
        if table in CARRIED:  # format 3: another table's columns on its rows
            other, columns = CARRIED[table]
            out[(role, table)] = [n for n in names if n not in columns.values()]
            out.setdefault((role, other.name), [c for c, on in columns.items() if on in names])
    return out


#: nullable columns the collectors write since the sample was recorded (readers fill them with
#: nulls for older runs)
ADDED_SINCE_SAMPLE = {("worker", "worker_transfers"): ["scheduler_delay_ns"]}
#: columns the collectors no longer write (run format 3: nothing read them)
REMOVED_SINCE_SAMPLE = {("scheduler", "scheduler_transitions"): ["type"],
                        ("worker", "worker_transitions"): ["stimulus_id"]}


def test_run_folder_is_structurally_the_recorded_sample(correlated):
    """The synthetic run writes the tables and columns the recorded sample holds (in the
    collectors' current part format: the sample's parts are Parquet, run format 1), plus
    the columns added since."""
    exp, run, _out, _summary = correlated
    want, got = _tables(SAMPLE), _tables(run)
    assert set(want) == set(got)
    assert {k: [c for c in v if c not in REMOVED_SINCE_SAMPLE.get(k, [])]
            + ADDED_SINCE_SAMPLE.get(k, []) for k, v in want.items()} == got
    assert not list(run.glob("procs/*/*/*.parquet"))
    for role in ("scheduler", "worker"):  # (the sample's closing record: closed.json)
        a = json.loads(next(SAMPLE.glob(f"procs/{role}-*/proc.json")).read_text())
        b = json.loads(next(run.glob(f"procs/{role}-*/proc.json")).read_text())
        closed = json.loads(next(SAMPLE.glob(f"procs/{role}-*/closed.json")).read_text())
        assert set(b) == set(a) | {"closed"}, role
        assert set(b["closed"]) == set(closed), role
    manifest = json.loads((run / "manifest.json").read_text())
    assert set(json.loads((SAMPLE / "manifest.json").read_text())) == set(manifest) - {
        "synthetic"}
    assert manifest["processes"] == sorted(p.name for p in (run / "procs").iterdir())
    assert len(list((run / "darshan").glob("*.darshan"))) == exp.workers + 2


def test_darshan_clock_offset_hosts_and_entry_point(tmp_path, capsys):
    run, out = tmp_path / "run", tmp_path / "out"
    assert synthetic_main([str(run), "--executions", "120", "--segments", "1500", "--workers",
                           "3", "--threads", "2", "--hosts", "2", "--seed", "7",
                           "--darshan-offset-ns", "2500000", "--flush-interval", "0.05"]) == 0
    exp = json.loads(capsys.readouterr().out)
    assert exp["executions"] == 120 and exp["segments"] == 1500 and exp["hosts"] == 2
    # flush every 50 ms: a record batch per flush in each process's one stream of the table
    streams = sorted(run.glob(f"procs/worker-*/task_executions{STREAM_SUFFIX}"))
    assert len(streams) == 3
    assert sum(len(framing(f.read_bytes()).batches) for f in streams) > 3
    assert correlate_main([str(run), "-o", str(out), "--no-reports"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    darshan = [c for c in summary["clocks"] if c["domain"] == "darshan"]
    assert len(darshan) == 3 and {c["offset_ns"] for c in darshan} == {2_500_000}
    assert {c["host"] for c in darshan} == {"node0", "node1"}
    io = summary["io"]
    assert io["attributed"]["bytes"] == exp["attributed"]["bytes"]
    assert io["unattributed"]["bytes"] == exp["unattributed"]["bytes"]
    tasks = pl.read_parquet(out / "tasks.parquet")
    assert set(tasks["attribution"].cast(pl.String)) == {"exact-thread"}
    assert tasks["read_bytes"].sum() == exp["attributed"]["read_bytes"]


def test_too_few_segments_is_refused(tmp_path):
    with pytest.raises(ValueError, match="segments"):
        write_run(tmp_path / "r", workers=4, threads=2, executions=10, segments=5)


def test_tables_written_as_they_are_made_equal_the_in_memory_result(correlated):
    """``correlate RUN`` writes each table as soon as it is final (``segments`` streamed from
    the per-process partitions); the files equal ``correlate_frames``' in-memory tables."""
    from correlate.engine import OUTPUT_TABLES, correlate_frames
    from correlate.sources.detect import load

    _exp, run, out, summary = correlated
    result = correlate_frames(load(run))
    for name in OUTPUT_TABLES:
        written = pl.read_parquet(out / f"{name}.parquet")
        assert written.height == result.tables[name].height, name
        # (the job runs no coroutine, and may have no finding above the threshold)
        assert written.height > 0 or name in ("slices", "findings"), name
        assert written.equals(result.tables[name]), name
    # (``input``, the run folder read, is what `correlate RUN` adds when it writes)
    assert summary["input"]["run_dir"] == str(run.resolve())
    assert json.loads(json.dumps(result.summary, default=str)) == {
        k: v for k, v in summary.items() if k not in ("output_format_version", "input")}


def test_fewer_segments_than_executions_leave_some_without_io(tmp_path):
    """A run with about two segments per execution: some executions have none (the generator
    used to fail on them); each still gets exactly its bytes."""
    run, out = tmp_path / "run", tmp_path / "out"
    exp = write_run(run, workers=4, threads=2, executions=400, segments=800, seed=2)
    assert correlate_main([str(run), "-o", str(out), "--no-reports"]) == 0
    tasks = pl.read_parquet(out / "tasks.parquet")
    assert tasks.height == 400 and 0 < exp.executions_with_io < 400
    both = exp.per_execution.join(tasks, on="key", how="left", suffix="_got")
    for col in IO_COLS:
        assert both.filter(pl.col(col) != pl.col(f"{col}_got")).is_empty(), col


def test_the_benchmarks_io_floor_reads_every_row_of_a_format_3_run_folder(correlated):
    """bench_scale's floor (what correlate must at least read and write) read nothing of a
    format-3 folder (its <table>.arrows streams), so its ratio meant nothing."""
    from benchmarks.bench_scale import io_floor
    from correlate.sources import run_streams

    _exp, run, out, _summary = correlated
    assert all(run_streams.is_format3({p.name for p in d.iterdir()})
               for d in (run / "procs").iterdir())
    stored = 0
    for stream in (run / "procs").glob("*/*.arrows"):
        frame = run_streams.read_stream(stream).frame
        stored += 0 if frame is None else frame.height
    floor = io_floor(run, out)
    assert stored > 300 and floor["rows_read"] >= stored
    assert floor["read"] > 0 and floor["decode"] > 0 and floor["write"] > 0


def test_per_process_read_and_written_bytes_are_what_libdarshan_util_counts(correlated):
    # GIVEN the run's genuine logs, read by Darshan's own library (not by our decoder)
    _exp, run, _out, summary = correlated
    truth = counter_bytes(run / "darshan", "POSIX").group_by("pid").agg(
        pl.col("read", "written").sum()).filter(pl.col("read") + pl.col("written") > 0)
    # THEN summary.json's per-process figures are those counts, read and written apart
    got = {r["pid"]: (r["read_bytes"], r["write_bytes"]) for r in summary["io"]["per_process"]}
    assert got == {pid: (r, w) for pid, r, w in truth.rows()}
    assert any(r != w for r, w in got.values())  # a swap of the two would show


@pytest.mark.parametrize("lost", ["strings", "task_executions"])
def test_executions_whose_text_was_lost_are_not_also_missing(tmp_path, lost):
    run, out = tmp_path / "run", tmp_path / "out"
    exp = write_run(run, workers=2, threads=2, executions=200, segments=400)
    worker = sorted(p for p in (run / "procs").iterdir() if p.name.startswith("worker"))[0]
    address = json.loads((worker / "proc.json").read_text())["address"]
    (worker / f"{lost}.arrows").unlink()
    assert correlate_main([str(run), "-o", str(out), "--no-reports"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    rows = pl.read_parquet(out / "tasks.parquet")
    missing = [w for w in summary["warnings"] if "are missing" in w]
    if lost == "strings":  # the rows are there, only their text is gone: said once, as that
        assert not missing, missing
        assert rows.height == exp.executions
        assert any(r["file"] == "task_executions" and "no text" in r["reason"]
                   for r in summary["rejects"])
    else:  # the rows themselves are gone: the scheduler's records count them
        assert len(missing) == 1 and address in missing[0]
        assert rows.height < exp.executions
        n = int(missing[0].split()[0])
        assert n == exp.executions - rows.height


def test_executions_of_keys_never_spilled_show_zero_spill(correlated):
    """DXT traced every file: the executions whose keys no spill file held have spill figures
    of measured zeros, not unknown (the tasks table puts them in without a row of them per
    execution before)."""
    _exp, _run, out, _summary = correlated
    spill = pl.read_parquet(out / "tasks.parquet").select(
        "spilled_bytes", "spill_write_s", "spill_writes", "unspilled_bytes", "unspill_read_s")
    assert spill.height == 300
    assert spill.null_count().sum_horizontal().item() == 0
