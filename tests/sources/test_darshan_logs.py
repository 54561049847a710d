"""Darshan reader: genuine logs written through libdarshan-util, the real fixture logs, and
damaged input."""

from __future__ import annotations

import bz2
import struct
import subprocess
import sys
import zlib

import numpy as np
import polars as pl
import pytest
from conftest import fixture_path

from correlate.cli import main
from correlate.errors import InputError
from correlate.sources import darshan_logs
from correlate.sources import dxt_layouts as L
from correlate.sources.darshan_logs import read_log
from testing.darshan_writer import write_log

START_NS = 1_790_000_000_123_456_789


def known_segments(n_paths=3, per_path=50, threads=(11, 22, 33), seed=1):
    rng = np.random.default_rng(seed)
    n = n_paths * per_path
    start = np.sort(rng.uniform(0.0, 5.0, n))
    return pl.DataFrame({
        "path": [f"/data/file-{i % n_paths}.bin" for i in range(n)],
        "op": rng.choice(["read", "write"], n).tolist(),
        "offset": rng.integers(0, 1 << 40, n),
        "length": rng.integers(0, 1 << 20, n),
        "start_s": start,
        "end_s": start + rng.uniform(0, 0.01, n),
        "thread_id": pl.Series(rng.choice(np.array(threads, dtype=np.uint64), n),
                               dtype=pl.UInt64),
    })


def roundtrip(tmp_path, layout, seg):
    path = write_log(tmp_path / f"x_id{99}-{4242}_1.darshan", seg, host="nid001", pid=4242,
                     start_ns=START_NS, layout=layout)
    frames = darshan_logs.load([path])
    assert frames.problems == ()
    return frames


def expected_rows(seg, with_threads):
    exp = seg.with_row_index("i").sort("path", pl.col("op") != "write", "i")
    exp = exp.with_columns(segment_index=pl.int_range(pl.len()).over("path", "op"))
    exp = exp.select("path", "op", "offset", "length",
                     local_start_ns=START_NS + (pl.col("start_s") * 1e9).round().cast(pl.Int64),
                     local_stop_ns=START_NS + (pl.col("end_s") * 1e9).round().cast(pl.Int64),
                     thread_id=pl.col("thread_id") if with_threads
                     else pl.lit(None, pl.UInt64), segment_index="segment_index")
    return sorted(exp.rows())


@pytest.mark.parametrize("layout", ["v1-32", "v2-40", "modified-96"])
def test_every_segment_reads_back_exactly(tmp_path, layout):
    # GIVEN a genuine log with 150 known segments over 3 files and 3 threads
    seg = known_segments()
    # WHEN read back
    frames = roundtrip(tmp_path, layout, seg)
    got = frames.io_segments
    # THEN offsets, lengths, times (ns), threads and indices are exactly the written ones
    cols = ["path", "op", "offset", "length", "local_start_ns", "local_stop_ns", "thread_id",
            "segment_index"]
    assert sorted(got.select(pl.col(cols).exclude("op"), op=pl.col("op").cast(pl.String))
                  .select(cols).rows()) == expected_rows(seg, layout != "v1-32")
    assert set(got["host"]) == {"nid001"} and set(got["pid"]) == {4242}
    log = frames.darshan_logs.row(0, named=True)
    assert log["dxt_layout"] == layout and log["segment_count"] == 150
    assert log["start_ns"] == START_NS and log["modules_failed"] == []
    assert not log["partial"]


def test_posix_counters_agree_with_the_segments(tmp_path):
    seg = known_segments()
    frames = roundtrip(tmp_path, "v2-40", seg)
    exp = seg.group_by("path").agg(
        read_bytes=pl.col("length").filter(pl.col("op") == "read").sum(),
        write_ops=(pl.col("op") == "write").sum().cast(pl.Int64)).sort("path")
    got = frames.io_file_counters.sort("path").select("path", "read_bytes", "write_ops")
    assert got.rows() == exp.rows()


def test_log_without_segments_has_no_dxt(tmp_path):
    empty = known_segments().head(0)
    frames = roundtrip(tmp_path, "v2-40", empty)
    assert frames.io_segments.is_empty()
    assert frames.darshan_logs["dxt_layout"].to_list() == [None]


def test_a_damaged_module_is_reported_and_the_rest_is_used(tmp_path):
    path = write_log(tmp_path / "d.darshan", known_segments(), layout="v2-40")
    buf = bytearray(path.read_bytes())
    hdr = L.parse_header(bytes(buf))
    off, length = hdr.mod_map[L.MODULE_IDS["DXT_POSIX"]]
    buf[off + length // 2: off + length // 2 + 16] = b"\xff" * 16  # corrupt DXT only
    path.chmod(0o600)
    path.write_bytes(bytes(buf))
    frames = darshan_logs.load([path])
    log = frames.darshan_logs.row(0, named=True)
    assert log["modules_failed"] and log["modules_failed"][0].startswith("DXT_POSIX:")
    assert frames.io_file_counters.height == 3  # POSIX still read
    assert any("DXT_POSIX" in p for _, p in frames.problems)


@pytest.mark.parametrize("content, problem", [
    (b"", "too short"),
    (b"\x00" * 4000, "not a Darshan log"),
    (bytes(np.random.default_rng(3).integers(0, 256, 5000, dtype=np.uint8)), "not a Darshan"),
])
def test_non_darshan_files_give_one_clear_problem(tmp_path, content, problem):
    path = tmp_path / "bad.darshan"
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        read_log(path)
    assert str(path) in str(err.value) and problem in str(err.value)
    assert "\n" not in str(err.value)


def test_truncated_log_is_read_as_far_as_possible(tmp_path):
    path = write_log(tmp_path / "t.darshan", known_segments(), layout="v2-40")
    data = path.read_bytes()
    cut = tmp_path / "cut.darshan"
    cut.write_bytes(data[:len(data) - 200])
    frames = darshan_logs.load([cut])
    log = frames.darshan_logs.row(0, named=True)
    assert any("truncated" in m for m in log["modules_failed"])
    assert frames.io_file_counters.height == 3
    # the problem says where the DXT region should end and how long the file is
    off, length = L.parse_header(data).mod_map[L.MODULE_IDS["DXT_POSIX"]]
    assert (f"region extends past the end of the file ({off + length} > {len(data) - 200} "
            "bytes)") in "; ".join(log["modules_failed"])


def test_cli_exports_segments_and_summarises(tmp_path, capsys):
    path = write_log(tmp_path / "a.darshan", known_segments(), layout="v2-40")
    bad = tmp_path / "b.darshan"
    bad.write_bytes(b"junk")
    out = tmp_path / "seg.parquet"
    assert main(["darshan", str(path), str(bad), "-o", str(out)]) == 0
    printed, err = capsys.readouterr()
    assert "1 log(s), 150 DXT segments" in printed and "1 warning(s)" in printed  # stdout
    assert "b.darshan" in err and "1 log(s)" not in err  # the warning: stderr
    assert pl.read_parquet(out).height == 150


def test_cli_on_only_bad_input_is_one_line_without_traceback(tmp_path):
    bad = tmp_path / "junk.darshan"
    bad.write_bytes(b"x" * 3000)
    proc = subprocess.run([sys.executable, "-m", "correlate.cli", "darshan", str(bad), "-o",
                           str(tmp_path / "o.parquet")], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "junk.darshan" in proc.stderr and "not a Darshan log" in proc.stderr
    # said once, as the error: not a warning and then the same error
    assert proc.stderr.count("not a Darshan log") == 1 and "warning" not in proc.stderr


# ---- the real logs in ../shared/fixtures -------------------------------------------------------

def _sane(frames):
    seg = frames.io_segments.join(frames.darshan_logs.select("log", "start_ns", "end_ns"),
                                  on="log")
    assert seg.filter((pl.col("offset") < 0) | (pl.col("length") < 0)).is_empty()
    assert seg.filter(pl.col("local_stop_ns") < pl.col("local_start_ns")).is_empty()
    assert seg.filter((pl.col("local_start_ns") < pl.col("start_ns"))
                      | (pl.col("local_stop_ns") > pl.col("end_ns") + 2 * 10**9)).is_empty()
    assert seg.filter(pl.col("length") > 1 << 40).is_empty()


@pytest.mark.fixtures
def test_groundtruth_v2_logs_carry_the_known_bytes_and_threads():
    folder = fixture_path("dask-dxt-v2-groundtruth")
    frames = darshan_logs.load([folder / "darshan"])
    truth = pl.read_parquet(folder / "truth.parquet")
    _sane(frames)
    assert frames.problems == ()
    assert set(frames.darshan_logs["dxt_layout"].drop_nulls()) == {"v2-40"}
    task_io = frames.io_segments.filter(pl.col("path").str.contains("/files/io-"))
    assert task_io["length"].sum() == 34_111_488
    assert (truth["write_bytes"].sum() + truth["read_bytes"].sum()) == 34_111_488
    executors = set(truth.filter(pl.col("kind") == "io")["thread"].cast(pl.UInt64))
    assert set(task_io["thread_id"]) == executors and len(executors) == 8


@pytest.mark.parametrize("name", ["xpdamoda-pmda-r1", "xpdamoda-imageprocessing-r4"])
@pytest.mark.fixtures
def test_polaris_modified_layout_logs_decode_with_thread_ids(name):
    frames = darshan_logs.load([fixture_path(name)])
    _sane(frames)
    logs = frames.darshan_logs
    assert set(logs["dxt_layout"].drop_nulls()) == {"modified-96"}
    assert logs.filter(pl.col("modules_failed").list.len() > 0).is_empty()
    # LUSTRE and HEATMAP follow DXT in these logs: present, not failures
    assert logs.filter(pl.col("modules").list.contains("LUSTRE")).height > 0
    assert frames.io_segments["thread_id"].null_count() == 0


@pytest.mark.fixtures
def test_pmda_thread_is_the_one_the_fixture_notes_describe():
    frames = darshan_logs.load([fixture_path("xpdamoda-pmda-r1")])
    seg = frames.io_segments.filter(pl.col("thread_id") == 22515807322112)
    assert set(seg["pid"]) == {32541}
    assert seg.filter(pl.col("op") == "read").height == 521
    assert seg["path"].str.ends_with("NhaA_non_water.gro").any()


@pytest.mark.fixtures
def test_stock_logs_without_dxt_give_posix_and_stdio_counters():
    frames = darshan_logs.load([fixture_path("recup-miniapp-20240215")])
    assert frames.io_segments.is_empty()
    assert set(frames.io_file_counters["module"].cast(pl.String)) == {"POSIX", "STDIO"}
    assert frames.io_file_counters["read_bytes"].min() >= 0
    assert set(frames.darshan_logs["pid"]) == {9185, 9207}


def three_logs(tmp_path):
    """Genuine logs of two processes on one host; pid 100 wrote two logs (a and c)."""
    for name, pid, seed in (("a", 100, 1), ("b", 200, 2), ("c", 100, 3)):
        write_log(tmp_path / f"{name}_id{pid}-{pid}_1.darshan", known_segments(seed=seed),
                  host="n1", pid=pid, start_ns=START_NS)
    return tmp_path


def test_segments_left_in_the_logs_read_back_the_same(tmp_path):
    # GIVEN three logs read with their segments, and read leaving the segments in the logs
    eager = darshan_logs.load([three_logs(tmp_path)])
    lazy = darshan_logs.load([tmp_path], segments=False)
    # THEN every log row, counter and problem is the same, and so are the segments once read
    assert isinstance(lazy.io_segments, pl.LazyFrame)
    assert lazy.darshan_logs.equals(eager.darshan_logs)
    assert lazy.darshan_logs["segment_count"].to_list() == [150, 150, 150]
    assert lazy.darshan_logs["host"].to_list() == ["n1"] * 3
    assert lazy.io_file_counters.equals(eager.io_file_counters)
    assert lazy.problems == eager.problems == ()
    assert lazy.io_segments.collect().equals(eager.io_segments)


@pytest.mark.parametrize("case", ["kept", "too-many", "too-many-bytes", "region-in-chunks"])
def test_a_small_runs_segments_are_kept_from_the_first_read(tmp_path, monkeypatch, case):
    # GIVEN three logs of 150 segments each
    eager = darshan_logs.load([three_logs(tmp_path)])
    # WHEN they are read leaving segments in the logs unless the run holds at most `keep`
    keep = 449 if case == "too-many" else 450
    if case == "too-many-bytes":  # (the logs' bytes say more segments than keep allows)
        monkeypatch.setattr(darshan_logs, "KEEP_BYTES", 1)
    if case == "region-in-chunks":  # (a region that inflates in more than one chunk)
        monkeypatch.setattr(darshan_logs.S, "CHUNK", 997)
        monkeypatch.setattr(darshan_logs.S, "FEED", 257)
    got = darshan_logs.load([tmp_path], segments=False, keep=keep)
    # THEN within both bounds, with every region whole, they are decoded once and kept; else
    # they stay in the logs; either way every table reads as the eager read's
    assert isinstance(got.io_segments, pl.DataFrame) == (case == "kept")
    segments = got.io_segments
    assert (segments if case == "kept" else segments.collect()).equals(eager.io_segments)
    assert got.darshan_logs.equals(eager.darshan_logs)
    assert got.io_file_counters.equals(eager.io_file_counters)
    assert got.problems == eager.problems == ()


def test_each_process_partition_reads_its_own_logs_with_run_wide_segment_ids(tmp_path):
    from correlate.attribution.driver import attribute_all, split
    from correlate.engine import number_executions
    from correlate.schema import TABLES, conform
    from correlate.sinks import MemorySink

    # GIVEN the three logs and executions on both processes' threads, half a second each
    eager = darshan_logs.load([three_logs(tmp_path)])
    lazy = darshan_logs.load([tmp_path], segments=False)
    windows = [(pid, tid, START_NS + k * 500_000_000) for pid in (100, 200)
               for tid in (11, 22, 33) for k in range(10)]
    ex = number_executions(conform(pl.DataFrame({
        "key": [f"t-{pid}-{tid}-{s}" for pid, tid, s in windows],
        "host": ["n1"] * len(windows), "pid": [p for p, _t, _s in windows],
        "thread_id": pl.Series([t for _p, t, _s in windows], dtype=pl.UInt64),
        "execution_seq": list(range(len(windows))),
        "local_start_ns": [s for _p, _t, s in windows],
        "local_stop_ns": [s + 499_999_999 for _p, _t, s in windows]}), TABLES["executions"]))
    markers, opens = TABLES["clock_markers"].empty(), TABLES["file_opens"].empty()

    # THEN a partition per process (a budget of 0 rows) holds its logs: pid 100's two, numbered
    # from where each starts in the run
    parts = {p.processes: p for p in split(lazy.io_segments, lazy.darshan_logs, ex, markers,
                                           opens, rows=0)}
    assert list(parts) == [(("n1", 100),), (("n1", 200),)]
    logs = [str(tmp_path / f"{n}_id{p}-{p}_1.darshan") for n, p in (("a", 100), ("c", 100))]
    own = parts[("n1", 100),]
    assert own.logs == ((logs[0], 0), (logs[1], 300))
    assert own.raw_segments()["seg_id"].to_list() == [*range(0, 150), *range(300, 450)]
    # AND within the default budget both processes share one partition, in (host, pid) order
    (both,) = split(lazy.io_segments, lazy.darshan_logs, ex, markers, opens)
    assert both.processes == (("n1", 100), ("n1", 200))
    assert both.logs == (*own.logs, (str(tmp_path / "b_id200-200_1.darshan"), 150))
    assert both.executions.height == ex.height
    # (a log whose segments name several hosts is split by the segments' own host column)
    unsure = lazy.darshan_logs.with_columns(host=pl.when(pl.col("pid") == 200).then(pl.col("host")))
    read_first = {p.processes: p for p in split(lazy.io_segments, unsure, ex, markers, opens,
                                                rows=0)}
    assert read_first[("n1", 100),].logs == ()
    assert read_first[("n1", 100),].raw_segments().equals(own.raw_segments())

    # AND attribution from the logs equals attribution from segments read up front
    results = []
    for segments in (eager.io_segments, lazy.io_segments):
        sink = MemorySink()
        partial = attribute_all(segments, lazy.darshan_logs, ex, markers, opens,
                                TABLES["clocks"].empty(), TABLES["processes"].empty(), sink)
        results.append({**partial, "task_files": partial["task_files"].collect(),
                        "segments": sink.tables["segments"]})
    assert results[0]["segments"].height == 450
    assert results[0]["task_files"]["ops"].sum() > 0
    for name, df in results[0].items():  # the partial tables come in group-by order
        assert df.sort(df.columns).equals(results[1][name].sort(df.columns)), name


# ---- Darshan's own example corpus (every format 3.00 … 3.41), against libdarshan-util ----------

def _libdarshan_reading(path):
    """An independent reading of one log by PyDarshan's bundled libdarshan-util: modules with
    their partial flag, DXT segments straight from its record buffers, POSIX/STDIO counters (up-
    converted by the library to today's layout). PyDarshan's own DXT decoding is not used: it
    steps through segments 32 bytes at a time whatever the library holds, so the stride here is
    the library's own ``sizeof(segment_info)``."""
    from darshan.backend import cffi_backend as B

    log = B.log_open(str(path))
    try:
        mods = B.log_get_modules(log)
        names = B.log_get_name_records(log)
        stride = B.ffi.sizeof("struct segment_info")
        seg_dtype = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"),
                              ("end", "<f8"), ("pad", "V", stride - 32)])
        rows = []
        for module in ("DXT_POSIX", "DXT_MPIIO"):
            if module not in mods:
                continue
            while True:
                buf = B.ffi.new("void **")  # a fresh pointer: the library reuses a non-NULL one
                if B.libdutil.darshan_log_get_record(log["handle"], mods[module]["idx"], buf) < 1:
                    break
                rec = B.ffi.cast("struct dxt_file_record **", buf)[0]
                wc, rc = rec.write_count, rec.read_count
                head = B.ffi.sizeof("struct dxt_file_record")
                seg = np.frombuffer(B.ffi.buffer(B.ffi.cast("char *", buf[0]),
                                                 head + (wc + rc) * stride), seg_dtype,
                                    offset=head)
                host = B.ffi.string(rec.hostname).decode()
                rid, rank = rec.base_rec.id, rec.base_rec.rank
                for i, s in enumerate(seg):
                    rows.append((module, names.get(rid), rid, rank, host,
                                 "write" if i < wc else "read", i if i < wc else i - wc,
                                 int(s["offset"]), int(s["length"]), float(s["start"])))
                B.libdutil.darshan_free(buf[0])
        counters = []
        for module in ("POSIX", "STDIO"):
            if module in mods:
                keep = L.COUNTERS[module, max(v for m, v in L.COUNTERS if m == module)].fields
                while (r := B.log_get_record(log, module)) is not None:
                    counters.append((module, r["id"], r["rank"],
                                     *(int(r["counters"][i]) for i in keep.values())))
    finally:
        B.log_close(log)
    i64, text = pl.Int64, pl.String
    segments = pl.DataFrame(rows, orient="row", schema={
        "module": text, "path": text, "record_id": pl.UInt64, "rank": i64, "host": text,
        "op": text, "segment_index": i64, "offset": i64, "length": i64, "start_s": pl.Float64})
    counters = pl.DataFrame(counters, orient="row", schema={
        "module": text, "record_id": pl.UInt64, "rank": i64,
        **dict.fromkeys(L.COUNTERS["POSIX", 4].fields, i64)})
    return {m: v["partial_flag"] for m, v in mods.items()}, segments, counters


def _ours(frames):
    log = frames.darshan_logs.row(0, named=True)
    seg = frames.io_segments.select(
        pl.col("module").cast(pl.String), "path", "record_id", "rank", "host",
        pl.col("op").cast(pl.String), "segment_index",
        pl.col("offset").fill_null(-1),  # libdarshan-util says -1 where DXT_MPIIO 1 has none
        "length", start_s=(pl.col("local_start_ns") - log["start_ns"]) / 1e9)
    return log, seg


@pytest.mark.fixtures
def test_every_log_of_darshans_corpus_reads_as_libdarshan_util_reads_it():
    logs = sorted(fixture_path("darshan-logs").glob("*.darshan"))
    assert len(logs) == 78
    formats, with_dxt, partial = set(), [], []
    for path in logs:
        # GIVEN a log of any Darshan release, and libdarshan-util's reading of it
        modules, ref_seg, ref_counters = _libdarshan_reading(path)
        # WHEN we read it
        frames = darshan_logs.load([path])
        log, seg = _ours(frames)
        formats.add(log["log_format_version"])
        # THEN it is read whole, with the modules the library lists
        assert log["modules_failed"] == [], path.name
        assert set(log["modules"]) == set(modules), path.name
        # AND the partial modules are the ones the library flags, each said in a warning
        flagged = sorted(m for m, p in modules.items() if p)
        assert sorted(log["modules_partial"]) == flagged, path.name
        for m in flagged:
            assert any(f"module {m} is partial" in p for _, p in frames.problems), path.name
        partial += [path.name] * bool(flagged)
        # AND every DXT segment is the library's: per file, rank, host, op and index, the same
        # offset and length, the same start time to the nanosecond
        key = ["module", "record_id", "rank", "host", "op", "segment_index"]
        assert seg.height == ref_seg.height == log["segment_count"], path.name
        if ref_seg.height:
            with_dxt.append((path.name, seg.height, int(seg["length"].sum())))
            both = seg.sort(key).join(ref_seg, on=key, how="full", suffix="_ref")
            assert both.filter(pl.col("module").is_null() | pl.col("module_ref").is_null()
                               ).is_empty(), path.name
            for col in ("path", "offset", "length"):
                assert both[col].equals(both[f"{col}_ref"], check_names=False), (path.name, col)
            assert (both["start_s"] - both["start_s_ref"]).abs().max() < 1e-9, path.name
            assert frames.io_segments["thread_id"].null_count() == seg.height  # 32-byte layouts
        # AND the POSIX/STDIO counters the library up-converts are ours, whatever the version
        # (it drops POSIX 1 records that mixed in stdio calls; those are compared where it has them)
        ours = frames.io_file_counters.select(pl.col("module").cast(pl.String), "record_id",
                                              "rank", *ref_counters.columns[3:])
        got = ref_counters.join(ours, on=["module", "record_id", "rank"], how="left",
                                suffix="_ours")
        assert got.height == ref_counters.height, path.name
        for col in ref_counters.columns[3:]:
            assert got[col].equals(got[f"{col}_ours"], check_names=False), (path.name, col)
    assert formats == {"3.00", "3.10", "3.20", "3.21", "3.41"}
    assert len(with_dxt) == 12 and partial
    nonmpi = [x for x in with_dxt if x[0].startswith("nonmpi_dxt")]
    assert nonmpi == [("nonmpi_dxt_anonymized_nonmpi_dxt_anonymized.darshan", 17_652,
                       240_341_383)]


def _as_bzip2(src, dst):
    """The same log with every region recompressed with bzip2, as Darshan built with
    --with-bzip2... writes it (the corpus has no bzip2 log)."""
    buf = src.read_bytes()
    hdr = L.parse_header(buf)
    maps_at, slots = (24, 16) if hdr.size == L.HEADER_SIZE_3_00 else (32, L.MAX_MODS)
    fmt = f"{hdr.byteorder}QQ"
    maps = [struct.unpack_from(fmt, buf, maps_at + 16 * i) for i in range(1 + slots)]
    out = bytearray(buf[:hdr.size])
    out[16] = L.COMP_BZIP2
    job_end = min([off for off, length in maps if length] or [len(buf)])
    out += bz2.compress(darshan_logs._inflate(buf[hdr.size:job_end], L.COMP_ZLIB))
    for i, (off, length) in enumerate(maps):
        if length:
            data = bz2.compress(darshan_logs._inflate(buf[off:off + length], L.COMP_ZLIB))
            struct.pack_into(fmt, out, maps_at + 16 * i, len(out), len(data))
            out += data
    dst.write_bytes(bytes(out))
    return dst


@pytest.mark.parametrize("name", [
    "nonmpi_dxt_anonymized_nonmpi_dxt_anonymized.darshan",  # 3.21, little-endian
    "release_logs_mpi-io-test-ppc64-3.1.6.darshan",  # 3.10, big-endian, DXT_MPIIO 1
    "release_logs_mpi-io-test-x86_64-3.0.0.darshan",  # 3.00 name records
])
@pytest.mark.fixtures
def test_bzip2_logs_read_as_their_zlib_originals(tmp_path, name):
    src = fixture_path("darshan-logs") / name
    bz = _as_bzip2(src, tmp_path / name)
    zlib_frames, bz2_frames = darshan_logs.load([src]), darshan_logs.load([bz])
    assert bz2_frames.problems == zlib_frames.problems == ()
    for table in ("io_segments", "io_file_counters"):
        assert getattr(bz2_frames, table).drop("log").equals(
            getattr(zlib_frames, table).drop("log")), table
    assert bz2_frames.darshan_logs.drop("log").equals(zlib_frames.darshan_logs.drop("log"))


def test_bzip2_log_of_the_current_format(tmp_path):
    path = write_log(tmp_path / "a_id7-7_1.darshan", known_segments(), layout="v2-40")
    frames = darshan_logs.load([_as_bzip2(path, tmp_path / "b_id7-7_1.darshan")])
    assert frames.problems == () and frames.io_segments.height == 150
    assert frames.io_segments.drop("log").equals(darshan_logs.load([path]).io_segments.drop("log"))


@pytest.mark.parametrize("version, says", [
    ("3.50", ["Darshan log format 3.50 is newer", "upgrade dask-correlate"]),
    ("4.00", ["Darshan log format 4.00 is newer", "upgrade dask-correlate"]),
    ("3.30", ["unknown Darshan log format 3.30", "3.00, 3.10, 3.20, 3.21, 3.41"]),
])
def test_formats_it_does_not_know_are_named(tmp_path, version, says):
    path = write_log(tmp_path / "a.darshan", known_segments(), layout="v2-40")
    bad = tmp_path / f"v{version}.darshan"
    bad.write_bytes(version.encode().ljust(8, b"\0") + path.read_bytes()[8:])
    with pytest.raises(InputError) as err:
        read_log(bad)
    assert str(bad) in str(err.value) and all(s in str(err.value) for s in says)


@pytest.mark.fixtures
def test_truncated_logs_of_old_formats_say_what_is_missing(tmp_path):
    # GIVEN a big-endian 3.10 log cut at every few bytes of its header, job record and modules
    src = fixture_path("darshan-logs") / "release_logs_mpi-io-test-ppc64-3.1.6.darshan"
    data = src.read_bytes()
    for cut in range(0, len(data), 37):
        path = tmp_path / f"cut{cut}.darshan"
        path.write_bytes(data[:cut])
        # THEN each is one problem naming the file (and the format, once it can be read), or a
        # log whose damaged modules are named; never a message of Python's struct module
        frames = darshan_logs.load([path])
        said = [p for _f, p in frames.problems]
        assert said and not any("unpack" in p or "buffer" in p for p in said), (cut, said)
        assert all(f == str(path) for f, _p in frames.problems)
        if cut >= 16:
            assert frames.darshan_logs.height or "3.10" in said[0], (cut, said)
        if frames.darshan_logs.height:
            assert all(p.startswith("module ") for p in said), (cut, said)


def _swapped_dxt(region):
    """A DXT module buffer with every integer and double byte-swapped (the hostname kept)."""
    out, pos = bytearray(region), 0
    stride = L.SEGMENT_V2.itemsize
    while pos < len(region):
        rid, rank, shared, host, wc, rc = L.DXT_HEADER.unpack_from(region, pos)
        L.DXT_HEADERS[">"].pack_into(out, pos, rid, rank, shared, host, wc, rc)
        start, end = pos + L.DXT_HEADER.size, pos + L.DXT_HEADER.size + (wc + rc) * stride
        out[start:end] = np.frombuffer(region[start:end], "<u8").byteswap().tobytes()
        pos = end
    return bytes(out)


def _as_big_endian(src, dst):
    """A format 3.41 log (v2-40 DXT, POSIX) as a big-endian machine would have written it."""
    buf = src.read_bytes()
    hdr = L.parse_header(buf)
    out = bytearray(buf[:hdr.size])
    struct.pack_into(">qxxxxxxxxQ", out, 8, L.MAGIC, hdr.partial_flag)
    struct.pack_into(f">{L.MAX_MODS}I", out, 32 + 16 + 16 * L.MAX_MODS, *hdr.mod_ver)
    job_end = min(off for off, length in (hdr.name_map, *hdr.mod_map) if length)
    job = bytearray(darshan_logs._inflate(buf[hdr.size:job_end], L.COMP_ZLIB))
    job[:56] = np.frombuffer(job[:56], "<u8").byteswap().tobytes()
    out += zlib.compress(bytes(job))
    names = darshan_logs._inflate(buf[slice(hdr.name_map[0], sum(hdr.name_map))], L.COMP_ZLIB)
    swapped = b"".join(struct.pack(">Q", rid) + path.encode() + b"\0"
                       for rid, path in L.parse_names(names).items())
    regions = {-1: swapped}
    for mod, (off, length) in enumerate(hdr.mod_map):
        if length:
            raw = darshan_logs._inflate(buf[off:off + length], L.COMP_ZLIB)
            regions[mod] = (_swapped_dxt(raw) if L.MODULE_NAMES[mod].startswith("DXT_")
                            else np.frombuffer(raw, "<u8").byteswap().tobytes())
    for mod, data in regions.items():
        struct.pack_into(">QQ", out, 32 + 16 * (mod + 1), len(out), len(zlib.compress(data)))
        out += zlib.compress(data)
    dst.write_bytes(bytes(out))
    return dst


def test_big_endian_log_of_the_current_format_reads_as_its_original(tmp_path):
    # GIVEN a 3.41 log with thread ids (v2-40) and its byte-swapped twin
    path = write_log(tmp_path / "a_id7-7_1.darshan", known_segments(), host="nid9", pid=7,
                     start_ns=START_NS, layout="v2-40")
    swapped = _as_big_endian(path, tmp_path / "b_id7-7_1.darshan")
    assert L.parse_header(swapped.read_bytes()).byteorder == ">"
    # THEN every table reads the same: segments with their threads, counters, the log row
    le, be = darshan_logs.load([path]), darshan_logs.load([swapped])
    assert be.problems == () and be.io_segments.height == 150
    for table in ("io_segments", "io_file_counters", "darshan_logs"):
        assert getattr(be, table).drop("log").equals(getattr(le, table).drop("log")), table


@pytest.mark.parametrize("module", ["DXT_POSIX", "POSIX"])
def test_a_module_version_from_a_newer_darshan_is_named_and_the_rest_read(tmp_path, module):
    path = write_log(tmp_path / "a.darshan", known_segments(), layout="v2-40")
    buf = bytearray(path.read_bytes())
    struct.pack_into("<I", buf, 48 + 16 * L.MAX_MODS + 4 * L.MODULE_IDS[module], 9)
    path.chmod(0o600)
    path.write_bytes(bytes(buf))
    frames = darshan_logs.load([path])
    assert [p for _f, p in frames.problems] == [
        f"module {module}: module version 9 is not one this dask-correlate reads ({module} "
        f"versions 1 to {2 if module == 'DXT_POSIX' else 4}): upgrade dask-correlate"]
    assert (frames.io_segments.height, frames.io_file_counters.height) == (
        (0, 3) if module == "DXT_POSIX" else (150, 0))


def test_the_heatmap_module_gives_bytes_per_time_bin_on_the_log_clock(tmp_path):
    """Darshan 3.4+'s HEATMAP record (written through libdarshan-util): each bin's bytes
    written and read, its edges the log's start plus multiples of the bin width."""
    # (and an STDIO record of no bins: nothing of it, the POSIX one still read)
    path = write_log(tmp_path / "h_id5-5_1.darshan", known_segments(n_paths=1, per_path=5),
                     pid=5, start_ns=START_NS, heatmap={"STDIO": (0.25, [], []),
                                                        "POSIX": (0.25, [100, 0, 7], [0, 50, 3])})
    got = darshan_logs.read_heatmap(str(path)).sort("op", "bin_start_ns")
    assert got["module"].unique().to_list() == ["POSIX"] and set(got["pid"]) == {5}
    assert got.filter(pl.col("op") == "write")["bytes"].to_list() == [100.0, 0.0, 7.0]
    assert got.filter(pl.col("op") == "read")["bytes"].to_list() == [0.0, 50.0, 3.0]
    edges = [START_NS + k * 250_000_000 for k in range(4)]
    for op in ("read", "write"):
        mine = got.filter(pl.col("op") == op)
        assert mine["bin_start_ns"].to_list() == edges[:3]
        assert mine["bin_stop_ns"].to_list() == edges[1:]
    # a log without the module: no bins (the counters are then weighed by time alone)
    plain = write_log(tmp_path / "p_id6-6_1.darshan", known_segments(n_paths=1, per_path=5),
                      pid=6, start_ns=START_NS)
    assert darshan_logs.read_heatmap(str(plain)).is_empty()


def test_posix_counter_timestamps_are_absolute_on_the_log_clock(tmp_path):
    """The POSIX record's first/last read and write stamps (seconds since the job start in the
    log) read as ns since the epoch: the job start plus the stamp, per file."""
    seg = known_segments(n_paths=2, per_path=20, seed=7)
    path = write_log(tmp_path / "s_id3-3_1.darshan", seg, pid=3, start_ns=START_NS)
    got = darshan_logs.load([path]).io_file_counters.filter(
        pl.col("module").cast(pl.String) == "POSIX")
    want = seg.group_by("path").agg(
        first_write_ns=pl.col("start_s").filter(pl.col("op") == "write").min(),
        last_read_ns=pl.col("end_s").filter(pl.col("op") == "read").max())
    both = got.join(want, on="path", suffix="_want")
    assert both.height == 2
    for row in both.iter_rows(named=True):
        for k in ("first_write_ns", "last_read_ns"):
            assert row[k] == START_NS + round(row[f"{k}_want"] * 1e9), (row["path"], k)


def test_a_folder_is_searched_for_logs_and_only_logs(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "x.darshan").write_bytes(b"")
    (tmp_path / "a" / "b" / "y.darshan_partial").write_bytes(b"")
    (tmp_path / "a" / "notes.txt").write_text("not a log")
    (tmp_path / "a" / "dir.darshan").mkdir()  # a folder so named is not a log
    given = tmp_path / "given.txt"
    given.write_text("a file given by name is read as given")
    assert darshan_logs.expand_paths([tmp_path / "a", given]) == [
        tmp_path / "a" / "b" / "y.darshan_partial", tmp_path / "a" / "x.darshan", given]


def test_the_runtime_version_is_the_job_metadata_s_lib_ver(tmp_path):
    path = write_log(tmp_path / "v_id4-4_1.darshan", known_segments(n_paths=1, per_path=3),
                     pid=4, start_ns=START_NS, metadata="h=romio_no_indep_rw=true;lib_ver=3.4.7")
    assert darshan_logs.load([path]).darshan_logs["darshan_version"].to_list() == ["3.4.7"]


def test_a_log_is_incomplete_for_a_failed_module_a_partial_flag_or_untraced_calls():
    logs = pl.DataFrame({"log": ["failed", "partial", "untraced", "clean"],
                         "modules_failed": [["STDIO: truncated"], [], [], []],
                         "partial": [False, True, False, False],
                         "dxt_untraced_ops": [0, 0, 5, None]})
    got = darshan_logs.incomplete_logs(logs)
    assert got.rows() == [("failed", "STDIO: truncated", False, 0), ("partial", "", True, 0),
                          ("untraced", "", False, 5)]
