"""The Darshan configuration `collect` writes keeps a counter record for every file a process
touches, up to ``FILE_RECORDS``, in both POSIX and STDIO.

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
from correlate.sources.dxt_layouts import COUNTERS

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


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    lib, _how = darshan_env.find_runtime("auto")
    if lib is None:
        pytest.skip("no darshan-runtime on this machine (DARSHAN_RUNTIME, darshan-config or a "
                    "common install path): the generated config is checked without it")
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
