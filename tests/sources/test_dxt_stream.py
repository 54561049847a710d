"""DXT regions read a chunk at a time (``dxt_stream``): genuine logs written through
libdarshan-util, read with chunks far smaller than their regions, must decode exactly as the
whole-region reading does, in every layout and byte order, damaged or not."""

from __future__ import annotations

import struct

import numpy as np
import polars as pl
import pytest
from test_darshan_logs import START_NS, _as_big_endian, known_segments

from correlate.cli import main
from correlate.sources import darshan_logs
from correlate.sources import dxt_layouts as L
from correlate.sources import dxt_stream as S
from testing.darshan_writer import write_log


def many_segments(seed=3):
    # records straddle chunk ends, of unequal sizes, with writes and reads
    return pl.concat([known_segments(n_paths=5, per_path=40, seed=seed),
                      known_segments(n_paths=2, per_path=333, seed=seed + 1)])


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 997 bytes at most, 257 compressed bytes fed at a time; counts walker feeds."""
    fed = []
    feed = S.Walker.feed

    def counting(self, chunk):
        fed.append(len(chunk))
        return feed(self, chunk)

    def set_small():
        monkeypatch.setattr(S, "CHUNK", 997)
        monkeypatch.setattr(S, "FEED", 257)
        monkeypatch.setattr(S.Walker, "feed", counting)
        return fed
    return set_small


@pytest.mark.parametrize("layout", ["v1-32", "v2-40", "modified-96"])
def test_a_region_read_in_small_chunks_decodes_as_read_whole(tmp_path, layout, small_chunks):
    path = write_log(tmp_path / f"x_id9-{layout[:2]}_1.darshan", many_segments(), host="nid001",
                     start_ns=START_NS, layout=layout)
    whole = darshan_logs.load([path])
    fed = small_chunks()
    chunked = darshan_logs.load([path])
    assert len(fed) > 10  # the region was walked a chunk at a time, not split whole
    assert chunked.problems == whole.problems == ()
    assert chunked.darshan_logs.equals(whole.darshan_logs)
    assert chunked.io_segments.equals(whole.io_segments)
    assert chunked.io_segments.height == 5 * 40 + 2 * 333
    # handed to a sink batch by batch: the same rows, in the same order
    got = []
    darshan_logs.read_log(path, sink=got.append)
    assert len(got) > 10
    assert pl.concat(got).equals(whole.io_segments)


def test_a_big_endian_region_read_in_small_chunks(tmp_path, small_chunks):
    path = write_log(tmp_path / "a_id7-7_1.darshan", many_segments(), host="nid9", pid=7,
                     start_ns=START_NS, layout="v2-40")
    swapped = _as_big_endian(path, tmp_path / "b_id7-7_1.darshan")
    whole = darshan_logs.load([path])
    small_chunks()
    be = darshan_logs.load([swapped])
    assert be.problems == ()
    assert be.io_segments.drop("log").equals(whole.io_segments.drop("log"))


def test_a_damaged_region_gives_no_segments_and_the_command_says_so(tmp_path, small_chunks,
                                                                   capsys):
    # GIVEN a log whose DXT region is corrupt two thirds of the way in
    path = write_log(tmp_path / "d.darshan", many_segments(), layout="v2-40")
    buf = bytearray(path.read_bytes())
    off, length = L.parse_header(bytes(buf)).mod_map[L.MODULE_IDS["DXT_POSIX"]]
    buf[off + 2 * length // 3: off + 2 * length // 3 + 16] = b"\xff" * 16
    path.chmod(0o600)
    path.write_bytes(bytes(buf))
    small_chunks()
    # THEN read eagerly: the module failed, none of its segments kept, the counters read
    frames = darshan_logs.load([path])
    assert frames.io_segments.height == 0 and frames.io_file_counters.height == 5
    assert frames.darshan_logs["modules_failed"][0][0].startswith("DXT_POSIX:")
    # AND handed to a sink, the failure comes after segments were handed: StreamBroken
    with pytest.raises(darshan_logs.StreamBroken):
        darshan_logs.read_log(path, sink=lambda df: None)
    # AND the command, which wrote some segments already, writes the table again the eager way
    out = tmp_path / "seg.parquet"
    assert main(["darshan", str(path), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "1 log(s) (1 incomplete" in printed and " 0 DXT segments" in printed
    assert pl.read_parquet(out).height == 0


def test_a_layout_refuted_at_the_end_is_tried_no_more(tmp_path, small_chunks, monkeypatch):
    # GIVEN a v2-40 log whose header says DXT_POSIX version 1 (so 32-byte segments are tried
    # first) and a first-chunk judgement that accepts them
    seg = known_segments(n_paths=1, per_path=400)
    path = write_log(tmp_path / "v_id1-1_1.darshan", seg, layout="v2-40")
    whole = darshan_logs.load([path])
    buf = bytearray(path.read_bytes())
    struct.pack_into("<I", buf, 48 + 16 * L.MAX_MODS + 4 * L.MODULE_IDS["DXT_POSIX"], 1)
    path.chmod(0o600)
    path.write_bytes(bytes(buf))
    assert darshan_logs.load([path]).io_segments.equals(whole.io_segments)  # read whole
    small_chunks()
    monkeypatch.setattr(S, "_sane", lambda pieces: True)
    # WHEN read a chunk at a time: v1-32 does not consume the region, v2-40 does
    frames = darshan_logs.load([path])
    assert frames.problems == ()
    assert frames.io_segments.equals(whole.io_segments)
    assert frames.darshan_logs["dxt_layout"].to_list() == ["v2-40"]
    # AND the command, having written v1-32 segments, starts again and writes the right ones
    out = tmp_path / "seg.parquet"
    assert main(["darshan", str(path), "-o", str(out)]) == 0
    assert pl.read_parquet(out).equals(whole.io_segments)


def test_the_command_streams_what_load_reads(tmp_path, small_chunks):
    logs = [write_log(tmp_path / f"l{i}_id{i}-{i}_1.darshan", many_segments(seed=i),
                      host=f"n{i}", pid=i, start_ns=START_NS, layout=layout)
            for i, layout in enumerate(["v2-40", "v1-32", "modified-96"])]
    expected = darshan_logs.load(logs).io_segments
    fed = small_chunks()
    out = tmp_path / "all.parquet"
    assert main(["darshan", *map(str, logs), "-o", str(out)]) == 0
    assert len(fed) > 30
    assert pl.read_parquet(out).equals(expected)


def test_truncated_compressed_stream_is_named():
    import zlib

    data = zlib.compress(bytes(range(256)) * 200)
    with pytest.raises(ValueError, match="truncated"):
        list(S.inflate_chunks(data[:len(data) // 2], L.COMP_ZLIB, 1000))
    got = b"".join(S.inflate_chunks(data + zlib.compress(b"tail"), L.COMP_ZLIB, 1000))
    assert got == bytes(range(256)) * 200 + b"tail"


def test_segments_left_in_the_logs_stream_as_load_reads_them(tmp_path, small_chunks):
    # GIVEN a good log and one whose DXT region is damaged, read a chunk at a time
    good = write_log(tmp_path / "g_id1-1_1.darshan", many_segments(), host="n1", pid=1,
                     start_ns=START_NS, layout="v2-40")
    bad = write_log(tmp_path / "b_id2-2_1.darshan", many_segments(seed=5), host="n1", pid=2,
                    start_ns=START_NS, layout="v2-40")
    buf = bytearray(bad.read_bytes())
    off, length = L.parse_header(bytes(buf)).mod_map[L.MODULE_IDS["DXT_POSIX"]]
    buf[off + length // 2: off + length // 2 + 16] = b"\xff" * 16
    bad.chmod(0o600)
    bad.write_bytes(bytes(buf))
    fed = small_chunks()
    eager = darshan_logs.load([good, bad])
    lazy = darshan_logs.load([good, bad], segments=False)
    # THEN the scan, batch by batch, gives what the eager reading gives (the damaged region
    # left out of both)
    fed.clear()
    assert lazy.io_segments.collect().equals(eager.io_segments)
    assert len(fed) > 10 and eager.io_segments.height == 5 * 40 + 2 * 333


def test_an_abandoned_reader_stops_the_inflating_thread():
    import threading

    def endless():
        while True:
            yield b"x" * 10

    before = threading.active_count()
    chunks = S.prefetched(endless(), depth=1)
    assert next(chunks) == b"x" * 10
    chunks.close()  # the reader stops early: the producer, blocked on a full queue, ends
    assert threading.active_count() == before

    def failing():
        yield b"a"
        raise ValueError("damaged")

    with pytest.raises(ValueError, match="damaged"):
        list(S.prefetched(failing()))
    assert threading.active_count() == before


def test_a_first_chunk_is_not_read_as_segments_that_end_before_they_start():
    # GIVEN the first chunk of a large region of 32-byte segments (Darshan before 3.5, here
    # in a region whose order tries 40-byte ones first), cut two 40-byte strides in: one
    # record of 1000 writes, the third of them at offset 0
    v1 = np.zeros(3, dtype=L.SEGMENT_V1)
    v1["offset"], v1["length"] = [4096, 8192, 0], [4096, 4096, 512]
    v1["start"], v1["end"] = [0.25, 0.5, 0.75], [0.375, 0.625, 0.875]
    first = L.DXT_HEADERS["<"].pack(7, 0, 0, b"nid001", 1000, 0) + v1.tobytes()[:80]
    # AS 40-byte segments the second would start at 0.625 and end at 0.0 (the 0 offset):
    # finite, not negative, not subnormal, only out of order
    as_v2 = np.frombuffer(first, L.SEGMENT_V2, 2, L.DXT_HEADERS["<"].size)
    assert (as_v2["start"][1], as_v2["end"][1]) == (0.625, 0.0)
    # WHEN the layout is chosen on that chunk, THEN it is the one the segments were written in
    assert S.choose_layout(first, ["v2-40", "modified-96", "v1-32"], "<", 1 << 30) == "v1-32"


def test_an_uncompressed_region_is_handed_out_in_chunks_of_its_bytes():
    data = bytes(range(256)) * 20
    chunks = list(S.inflate_chunks(data, L.COMP_NONE, 1000))
    assert [len(c) for c in chunks] == [1000] * 5 + [120]
    assert b"".join(chunks) == data


def test_a_bzip2_region_inflates_to_its_bytes():
    """Darshan's bzip2 logs (DARSHAN_BZIP2): streams back to back, fed a piece at a time."""
    import bz2

    data = bytes(range(256)) * 200
    got = b"".join(S.inflate_chunks(bz2.compress(data) + bz2.compress(b"tail"),
                                    L.COMP_BZIP2, 1000))
    assert got == data + b"tail"
    with pytest.raises(ValueError, match="truncated"):
        list(S.inflate_chunks(bz2.compress(data)[:100], L.COMP_BZIP2, 1000))


def test_a_whole_region_of_several_zlib_streams_keeps_every_segment(tmp_path):
    """A region inflated in one chunk but by several zlib streams back to back (as
    darshan-logutils writes a large buffer) is split whole: every stream's segments."""
    import zlib

    path = write_log(tmp_path / "x_id9-9_1.darshan", many_segments(), host="nid001",
                     start_ns=START_NS, layout="v2-40")
    data = path.read_bytes()
    header = L.parse_header(data)
    off, length = header.mod_map[L.MODULE_IDS["DXT_POSIX"]]
    raw = b"".join(S.inflate_chunks(data[off:off + length], header.comp_type))
    half = len(raw) // 2
    region = S.Region(zlib.compress(raw[:half]) + zlib.compress(raw[half:]), L.COMP_ZLIB,
                      "DXT_POSIX", header.mod_ver[L.MODULE_IDS["DXT_POSIX"]])
    (recs,) = list(region.batches())
    assert len(recs.segments) == 5 * 40 + 2 * 333
    assert recs.segments.tobytes() == L.split_dxt(raw, region.module_version).segments.tobytes()


def test_a_record_header_with_impossible_counts_refutes_the_layout():
    # 0 writes and a read count whose segments exceed what the region can inflate to, or a
    # negative count (of writes or of reads)
    for wc, rc in ((0, 1 << 40), (-1, 5), (5, -1)):
        first = L.DXT_HEADERS["<"].pack(7, 0, 0, b"nid001", wc, rc)
        with pytest.raises(S.LayoutMismatch, match=f"{wc} writes and {rc} reads"):
            S.Walker("v2-40", "<", 1 << 30).feed(first)


def test_a_region_cut_inside_its_segments_says_how_many_are_missing():
    v1 = np.zeros(1, dtype=L.SEGMENT_V1)
    w = S.Walker("v1-32", "<", 1 << 30)
    w.feed(L.DXT_HEADERS["<"].pack(7, 0, 0, b"nid001", 3, 3) + v1.tobytes())
    with pytest.raises(S.LayoutMismatch, match="0 bytes left, 5 segments missing"):
        w.finish()


def test_a_layout_whose_header_claims_too_much_is_passed_over_for_the_next():
    # 1000 writes of 32 bytes: read as 40-byte segments they would exceed the region's bound
    v1 = np.zeros(1000, dtype=L.SEGMENT_V1)
    v1["length"], v1["start"], v1["end"] = 8, np.arange(1000) * 0.5, np.arange(1000) * 0.5 + 0.25
    first = L.DXT_HEADERS["<"].pack(7, 0, 0, b"nid001", 1000, 0) + v1.tobytes()
    assert S.choose_layout(first, ["v2-40", "v1-32"], "<", 35_000) == "v1-32"


def test_zero_length_operations_and_times_of_zero_are_sane_segments():
    # a zero-length read at the log's first instant (start = end = 0.0) is a real segment
    v1 = np.zeros(2, dtype=L.SEGMENT_V1)
    v1["offset"], v1["length"] = [0, 4096], [0, 4096]
    v1["start"], v1["end"] = [0.0, 0.25], [0.0, 0.5]
    assert S._sane([v1])


def test_a_slow_reader_gets_every_chunk():
    """The consumer takes longer than the producer's wait on a full queue: nothing is lost."""
    import time

    got = []
    for c in S.prefetched(iter([b"a", b"b", b"c", b"d"]), depth=1):
        time.sleep(0.25)
        got.append(c)
    assert got == [b"a", b"b", b"c", b"d"]


def test_mpiio_version_1_regions_read_in_chunks_have_no_offsets(small_chunks):
    """DXT_MPIIO records of module version 1 hold no file offsets: a region walked a chunk at
    a time says so, as the whole-region reading does; POSIX and later MPI-IO ones have them."""
    v1 = np.zeros(100, dtype=L.SEGMENT_V1)
    v1["length"], v1["start"] = 8, np.arange(100) * 0.5
    v1["end"] = v1["start"] + 0.25
    raw = L.DXT_HEADERS["<"].pack(7, 0, 0, b"nid001", 100, 0) + v1.tobytes()
    small_chunks()
    for module, version, known in (("DXT_MPIIO", 1, False), ("DXT_MPIIO", 2, True),
                                   ("DXT_POSIX", 1, True)):
        region = S.Region(raw, L.COMP_NONE, module, version)
        batches = list(region.batches())
        assert len(batches) > 1 and region.layout == "v1-32"
        assert region.records is not None and region.records.offsets_known is known, module
