"""The Darshan configuration `collect` writes keeps a counter record for every file a process
touches, up to ``FILE_RECORDS``, in both POSIX and STDIO, and DXT segments up to
``--dxt-segments`` per process.

Darshan's non-DXT modules share one memory pool (4 MiB unless ``MODMEM`` says otherwise) and
file names another (1 MiB, ``NAMEMEM``). Asking POSIX for more records than the pool holds used
to leave STDIO with none at all (numpy's ``tofile``/``fromfile``, any C ``fwrite``: their bytes
vanished from the run) and POSIX itself capped near 6,000 files per process. The real-runtime
test runs a process past both old caps under `collect`; it skips without a darshan-runtime.
"""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest

from collectors import darshan_env
from correlate.sources import darshan_logs
from correlate.sources.dxt_layouts import COUNTERS, SEGMENT_V2

#: more files than the old default pools could name or count (about 5,960 POSIX records)
N_FILES = 7_000
N_ARRAYS = 40
ARRAY_BYTES = 8 * 100_000

JOB = """
import os, sys, numpy as np
root = sys.argv[1]
for i in range(N_FILES):
    fd = os.open(os.path.join(root, f"small-file-with-a-longish-name-{i:06d}.dat"),
                 os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"x" * (i % 7 + 1))
    os.close(fd)
for i in range(N_ARRAYS):
    p = os.path.join(root, f"array-{i}.bin")
    np.arange(ARRAY_BYTES // 8, dtype=np.float64).tofile(p)   # C stdio fwrite
    assert np.fromfile(p, dtype=np.uint8).size == ARRAY_BYTES   # C stdio fread
""".replace("N_FILES", str(N_FILES)).replace("N_ARRAYS", str(N_ARRAYS)).replace(
    "ARRAY_BYTES", str(ARRAY_BYTES))


def test_record_sizes_are_those_of_the_newest_module_versions():
    for module, size in darshan_env.RECORD_BYTES.items():
        newest = max(v for m, v in COUNTERS if m == module)
        layout = COUNTERS[(module, newest)]
        assert size == 16 + 8 * (layout.counters + layout.fcounters), module


def test_the_pools_hold_the_records_asked_for(tmp_path):
    darshan_env.environment("/nonexistent/libdarshan.so", tmp_path)
    conf = dict(line.split(" ", 1) for line in (tmp_path / "darshan.conf").read_text()
                .splitlines() if line and not line.startswith("#"))
    modmem, namemem = int(conf["MODMEM"]) * 2**20, int(conf["NAMEMEM"]) * 2**20
    records = {m: int(n) for n, m in (line.split()[1:] for line in (
        tmp_path / "darshan.conf").read_text().splitlines() if line.startswith("MAX_RECORDS"))}
    assert records["POSIX"] >= N_FILES and records["STDIO"] >= N_ARRAYS
    assert modmem >= sum(records[m] * darshan_env.RECORD_BYTES[m] for m in ("POSIX", "STDIO"))
    assert namemem >= (records["POSIX"] + records["STDIO"]) * 100


def _config(folder):
    text = (folder / "darshan.conf").read_text()
    return {m: int(n) for n, m in (line.split()[1:] for line in text.splitlines()
                                   if line.startswith("MAX_RECORDS"))}


def test_segment_size_is_that_of_the_newest_dxt_layout():
    assert darshan_env.SEGMENT_BYTES == SEGMENT_V2.itemsize


@pytest.mark.parametrize("segments", [1, 5_000, darshan_env.DXT_SEGMENTS, 50_000_000])
def test_dxt_memory_holds_the_segments_asked_for_and_not_many_more(tmp_path, segments):
    """DXT zeroes a buffer of its whole cap in every process at exit, so the cap is what was
    asked for plus a fixed room for per-file records, not a blanket maximum."""
    darshan_env.environment("/nonexistent/libdarshan.so", tmp_path, dxt_segments=segments)
    held = _config(tmp_path)["DXT_POSIX"] * 1024
    assert segments * darshan_env.SEGMENT_BYTES <= held
    assert held <= segments * darshan_env.SEGMENT_BYTES + 2 * 2**20


@pytest.mark.parametrize("bad", ["0", "-5", "many", "1.5"])
def test_a_bad_segment_count_is_one_line_naming_the_option(tmp_path, bad):
    proc = subprocess.run([sys.executable, "-m", "collectors.launcher", "-o", str(tmp_path / "r"),
                           "--dxt-segments", bad, "--", "true"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "--dxt-segments" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r").exists()


def _runtime() -> str:
    lib, _how = darshan_env.find_runtime("auto")
    if lib is None:
        pytest.skip("no darshan-runtime on this machine (DARSHAN_RUNTIME, darshan-config or a "
                    "common install path): the generated config is checked without it")
    return lib


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    lib = _runtime()
    tmp = tmp_path_factory.mktemp("darshan-config")
    data = tmp / "data"
    data.mkdir()
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(tmp / "run"), "--darshan",
           lib, "--profile", "off", "--", sys.executable, "-c", JOB, str(data)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    frames = darshan_logs.load(darshan_logs.expand_paths([tmp / "run" / "darshan"]))
    assert not frames.problems, frames.problems
    return frames.io_file_counters.filter(pl.col("path").str.starts_with(str(data)))


def test_every_file_keeps_its_posix_record(traced):
    small = traced.filter((pl.col("module") == "POSIX")
                          & pl.col("path").str.contains("small-file"))
    assert small.height == N_FILES
    assert small["write_bytes"].sum() == sum(i % 7 + 1 for i in range(N_FILES))


def test_stdio_bytes_are_all_recorded(traced):
    """Every byte numpy moved through C stdio is in a STDIO record of one of its files. Which
    file is Darshan's call: its STDIO module names a stream opened with ``fdopen`` (numpy
    ``dup``s Python's descriptor) from the POSIX module's descriptor table, and the runtime
    was seen to file one array's write under another array's name; so the bytes are checked
    per run, not per file."""
    arrays = traced.filter((pl.col("module") == "STDIO")
                           & pl.col("path").str.contains("array-"))
    assert arrays.height == N_ARRAYS
    assert arrays["write_bytes"].sum() == N_ARRAYS * ARRAY_BYTES
    assert arrays["read_bytes"].sum() == N_ARRAYS * ARRAY_BYTES
    assert arrays["write_ops"].sum() == arrays["read_ops"].sum() == N_ARRAYS


#: reads of one file, each a DXT segment
READS = 100_000
READ_JOB = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for _ in range(READS):
    os.pread(fd, 16, 0)
os.close(fd)
""".replace("READS", str(READS))


@pytest.mark.parametrize("segments", [READS // 10, 2 * READS])
def test_dxt_traces_up_to_the_segments_asked_for(tmp_path, segments):
    """Under the cap every read is a segment; over it, DXT stops tracing and the log says how
    many calls it missed, which `correlate` reports naming the option to raise. (The cap holds
    a little more than asked: a fixed room for per-file records.)"""
    lib = _runtime()
    data = tmp_path / "data.bin"
    data.write_bytes(b"y" * 64)
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(tmp_path / "run"), "--darshan",
           lib, "--dxt-segments", str(segments), "--profile", "off", "--",
           sys.executable, "-c", READ_JOB, str(data)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    frames = darshan_logs.load(darshan_logs.expand_paths([tmp_path / "run" / "darshan"]))
    reads = frames.io_segments.filter(pl.col("path") == str(data))
    if segments >= READS:
        assert reads.height == READS
        assert not frames.problems, frames.problems
    else:
        assert segments <= reads.height < READS
        untraced = frames.darshan_logs["dxt_untraced_ops"].sum()
        assert reads.height + untraced >= READS
        assert any("--dxt-segments" in why for _log, why in frames.problems), frames.problems
