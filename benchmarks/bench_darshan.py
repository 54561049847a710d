"""Benchmark: DXT decoding speed and peak memory, our reader vs PyDarshan vs darshan-dxt-parser.

Writes a 1M-segment DXT v2 log (8 threads, 4096 files) and the same segments as a v1 log through
libdarshan-util, then runs each reader in its own subprocess (so peak RSS is its own) and prints
segments/s, peak RSS, and ratios. PyDarshan is measured on the v1 log, the only layout it reads
correctly. ``darshan-dxt-parser`` is used when found on PATH or in $DARSHAN_UTIL_BIN.
Then the whole command, ``correlate darshan LOG -o x.parquet``, against ``darshan-dxt-parser
LOG > /dev/null`` (fresh processes, interleaved; target ≥ 2×; said SKIPPED without the
parser), with where its time goes: interpreter, imports, inflating the DXT regions (the decode's
floor; target: the whole decode ≤ 1.5× it), the rest of the decode, writing the parquet.

    python benchmarks/bench_darshan.py [--segments 1000000] [--repeat 3] [--log REAL.darshan ...]
    python benchmarks/bench_darshan.py --scale [--big 10000000] [--repeat 5]

``--scale`` (issue 45) runs only the side-by-side table of the streaming decode: whole
processes, alternating, medians and peak RSS (each child's own, from wait4): ``correlate
darshan LOG -o x.parquet`` against ``darshan-dxt-parser LOG > /dev/null`` on a ``--big``-segment
v2 log of 1,000 records written through libdarshan-util, and on a log of 1M ``pwrite()`` calls
written by a real darshan-runtime (a small C program built with gcc and run under LD_PRELOAD in
a temporary folder, only when $DARSHAN_RUNTIME names the runtime; said SKIPPED otherwise); then
PyDarshan's DXT-to-DataFrame path against ours on a smaller v1 log (PyDarshan reads only v1).

``--log`` adds real logs (e.g. written by darshan-runtime under LD_PRELOAD): each is read by our
reader and by ``darshan-dxt-parser``, and segment counts and byte sums must agree.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]

#: peak RSS of this process: VmHWM is reset by exec (ru_maxrss is not, so it would report the
#: parent's peak)
HWM = """
def hwm_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
"""
OURS = HWM + """
import sys, time, json
from correlate.sources.darshan_logs import load
t = time.perf_counter(); f = load([sys.argv[1]]); dt = time.perf_counter() - t
seg = f.io_segments
peak = hwm_mb()
n, nbytes, table_mb = seg.height, int(seg["length"].sum()), seg.estimated_size() / 2**20
del f, seg
t = time.perf_counter(); load([sys.argv[1]]); warm = time.perf_counter() - t
print(json.dumps({"seconds": dt, "warm_seconds": warm, "segments": n, "bytes": nbytes,
                  "table_mb": table_mb, "rss_mb": peak}))
"""
#: where a fresh ``correlate darshan`` process's time goes, step by step (seconds): the DXT
#: regions inflated alone, the whole decode (``read_log``: inflate, split, frame), the parquet
#: written as the command writes it
STEPS = """
import sys, time, json
from pathlib import Path
t = time.perf_counter()
from correlate.sinks import COMPRESSION
from correlate.sources import darshan_logs as D, dxt_layouts as L
imports = time.perf_counter() - t
path = Path(sys.argv[1]); buf = path.read_bytes(); hdr = L.parse_header(buf)
t = time.perf_counter()
for name in ("DXT_POSIX", "DXT_MPIIO"):
    off, length = hdr.mod_map[L.MODULE_IDS[name]]
    if length:
        D._region(buf, off, length, hdr.comp_type)
inflate = time.perf_counter() - t
t = time.perf_counter(); seg = D.read_log(path).segments; decode = time.perf_counter() - t
t = time.perf_counter()
seg.write_parquet(sys.argv[2], compression=COMPRESSION, statistics=False)
write = time.perf_counter() - t
print(json.dumps({"imports": imports, "inflate": inflate, "decode": decode, "write": write}))
"""
BASELINE_RSS = HWM + """
import json
import polars, numpy, correlate.sources.darshan_logs  # same imports, no work
print(json.dumps({"rss_mb": hwm_mb()}))
"""
PYDARSHAN = HWM + """
import sys, time, json
import darshan
t = time.perf_counter()
r = darshan.DarshanReport(sys.argv[1], read_all=False)
r.mod_read_all_dxt_records("DXT_POSIX", dtype=sys.argv[2])
recs = r.data["records"]["DXT_POSIX"]  # per record: segments as dicts (default) or a DataFrame
n = sum(len(x["write_segments"]) + len(x["read_segments"]) for x in recs)
def nbytes(segs):
    if hasattr(segs, "columns"):
        return int(segs["length"].sum()) if len(segs) else 0
    return sum(s["length"] for s in segs)
b = sum(nbytes(x["write_segments"]) + nbytes(x["read_segments"]) for x in recs)
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "segments": n, "bytes": b, "rss_mb": hwm_mb()}))
"""


def make_segments(n: int, files: int = 64, seed: int = 0) -> pl.DataFrame:
    """A trace shaped like real DXT: ``files`` files, each read or written sequentially in a few
    request sizes by one of 8 threads, with increasing times."""
    rng = np.random.default_rng(seed)
    file = rng.integers(0, files, n)
    length = rng.choice(np.array([4096, 65536, 1 << 20, 0]), n, p=[0.5, 0.3, 0.15, 0.05])
    order = np.lexsort((np.arange(n), file))
    offset = np.empty(n, dtype=np.int64)
    cum = np.cumsum(length[order]) - length[order]
    first = np.searchsorted(file[order], np.arange(files))
    offset[order] = cum - np.repeat(cum[first], np.bincount(file, minlength=files))
    start = np.cumsum(rng.exponential(600 / n, n))
    paths = pl.Series([f"/scratch/data/part-{i}.bin" for i in range(files)])
    return pl.DataFrame({
        "path": paths.gather(pl.Series(file)),
        "op": pl.Series(["read", "write"]).gather(pl.Series((file % 2).astype(np.uint32))),
        "offset": offset, "length": length,
        "start_s": start, "end_s": start + rng.exponential(2e-5, n),
        "thread_id": pl.Series(file % 8 * 0x201000 + 0x7F0000000000, dtype=pl.UInt64),
    })


def run_py(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"benchmark subprocess failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def dxt_parser(log: Path) -> dict | None:
    exe = parser_exe()
    if exe is None:
        return None
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", exe, str(log)], capture_output=True,
                          text=True)
    dt = time.perf_counter() - t
    rows = [ln.split() for ln in proc.stdout.splitlines()
            if ln.strip().startswith(("X_POSIX", "X_MPIIO"))]
    return {"seconds": dt, "segments": len(rows), "bytes": sum(int(r[5]) for r in rows),
            "rss_mb": int(proc.stderr.strip().splitlines()[-1]) / 1024}


def parser_exe() -> str | None:
    exe = shutil.which("darshan-dxt-parser") or (
        os.path.join(os.environ["DARSHAN_UTIL_BIN"], "darshan-dxt-parser")
        if "DARSHAN_UTIL_BIN" in os.environ else None)
    return exe if exe and os.path.exists(exe) else None


def _seconds(cmd: list[str], stdout: int | None = subprocess.DEVNULL) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=stdout, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def whole_command(log: Path, repeat: int) -> None:
    """``correlate darshan LOG -o x.parquet`` against ``darshan-dxt-parser LOG > /dev/null``,
    whole processes, interleaved (this VM's speed moves between minutes), and where our
    process's time goes: interpreter start, imports, inflating the DXT regions, the rest of
    the decode, writing the parquet."""
    exe = parser_exe()
    if exe is None:
        print("\ncorrelate darshan vs darshan-dxt-parser: SKIPPED, darshan-dxt-parser is not on "
              "PATH (nor in $DARSHAN_UTIL_BIN)")
    with tempfile.TemporaryDirectory(prefix="bench-darshan-cmd-") as tmp:
        out = str(Path(tmp) / "x.parquet")
        ours, theirs, bare, imports, steps = [], [], [], [], []
        for _ in range(repeat):
            if exe is not None:
                theirs.append(_seconds([exe, str(log)]))
            ours.append(_seconds([sys.executable, "-m", "correlate.cli", "darshan", str(log),
                                  "-o", out]))
            bare.append(_seconds([sys.executable, "-c", "pass"]))
            imports.append(_seconds([sys.executable, "-c", "import correlate.cli, "
                                     "correlate.commands.darshan, correlate.sinks, "
                                     "correlate.sources.darshan_logs"]))
            steps.append(json.loads(subprocess.run(
                [sys.executable, "-c", STEPS, str(log), out], capture_output=True, text=True,
                check=True).stdout.splitlines()[-1]))
    med = statistics.median
    step = {k: med(s[k] for s in steps) for k in steps[0]}
    print(f"\ncorrelate darshan LOG -o x.parquet, whole process, median of {repeat}: "
          f"{med(ours):.3f} s (" + " ".join(f"{x:.2f}" for x in ours) + ")")
    if theirs:
        print(f"darshan-dxt-parser LOG > /dev/null, interleaved: {med(theirs):.3f} s ("
              + " ".join(f"{x:.2f}" for x in theirs) + f"): correlate ×{med(theirs) / med(ours):.2f}"
              f" faster (target ≥ 2×)")
    print(f"where correlate darshan's time goes (medians): interpreter {med(bare):.3f} s, "
          f"interpreter + imports {med(imports):.3f} s; in process: inflating the DXT regions "
          f"{step['inflate']:.3f} s, the whole decode {step['decode']:.3f} s (×"
          f"{step['decode'] / step['inflate']:.2f} the inflate, target ≤ 1.5), writing the "
          f"parquet {step['write']:.3f} s; floor without any decode work = interpreter + "
          f"imports + inflate + write = "
          f"{med(imports) + step['inflate'] + step['write']:.3f} s")


#: the real-runtime workload: N pwrite()s of 64 bytes over F files (argv: DIR N F)
PWRITE_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long n = atol(argv[2]), files = atol(argv[3]);
    char buf[64] = {0}, path[4096];
    for (long f = 0; f < files; f++) {
        snprintf(path, sizeof path, "%s/data-%ld.bin", argv[1], f);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) return 1;
        for (long i = f; i < n; i += files)
            if (pwrite(fd, buf, sizeof buf, (off_t)(i / files * sizeof buf)) != sizeof buf)
                return 2;
        close(fd);
    }
    return 0;
}
"""


def runtime_log(tmp: Path, segments: int, files: int = 10) -> Path | None:
    """A log written by the real darshan-runtime ($DARSHAN_RUNTIME) around ``segments``
    pwrite()s, or None (with the reason printed) when it cannot be made here."""
    lib = os.environ.get("DARSHAN_RUNTIME")
    if not lib or not os.path.exists(lib) or not shutil.which("gcc"):
        print(f"real runtime log: SKIPPED ({'gcc not found' if lib else '$DARSHAN_RUNTIME not set'})")
        return None
    from collectors import darshan_env

    (tmp / "pwrite.c").write_text(PWRITE_C)
    subprocess.run(["gcc", "-O2", "-o", str(tmp / "pwrite"), str(tmp / "pwrite.c")], check=True)
    data = tmp / "runtime-data"
    data.mkdir()
    # `collect`'s own environment and config; DXT grows each file's segment array by
    # doubling, so room for twice the segments
    env = {**os.environ, **darshan_env.environment(lib, tmp / "run", 2 * segments)}
    logs = Path(env["DARSHAN_LOGPATH"])
    logs.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(tmp / "pwrite"), str(data), str(segments), str(files)], env=env,
                   check=True)
    shutil.rmtree(data)
    found = sorted(logs.glob("*.darshan"))
    return found[0] if found else None


def _child(cmd: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS MB) of one whole child process, stdout to /dev/null."""
    # through /usr/bin/time: a child's ru_maxrss starts from its parent's (this process, which
    # built the logs), /usr/bin/time's own is small
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"{cmd[0]} failed: {proc.stderr}")
    return dt, int(proc.stderr.strip().splitlines()[-1]) / 1024


def side_by_side(name: str, cmds: dict[str, list[str]], repeat: int) -> dict[str, list]:
    """Each command ``repeat`` times, alternating, printed as medians with every run."""
    runs: dict[str, list] = {k: [] for k in cmds}
    for _ in range(repeat):
        for k, cmd in cmds.items():
            runs[k].append(_child(cmd))
    med = statistics.median
    print(f"\n{name} (medians of {repeat}, alternating; load average before/after below)")
    for k, r in runs.items():
        print(f"  {k:<34} {med(x[0] for x in r):7.3f} s  peak {max(x[1] for x in r):6.0f} MB"
              "   runs: " + " ".join(f"{x[0]:.2f}" for x in r))
    keys = list(cmds)
    if len(keys) == 2:
        a, b = (med(x[0] for x in runs[k]) for k in keys)
        print(f"  {keys[0]} ×{b / a:.2f} faster than {keys[1]}")
    return runs


def scale(args: argparse.Namespace) -> None:
    from testing.darshan_writer import write_log

    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    exe = parser_exe()
    with tempfile.TemporaryDirectory(prefix="bench-darshan-scale-") as tmp_name:
        tmp = Path(tmp_name)
        out = str(tmp / "x.parquet")
        ours = [sys.executable, "-m", "correlate.cli", "darshan"]
        big = write_log(tmp / "big-v2.darshan", make_segments(args.big, 1000), layout="v2-40",
                        posix=False)
        print(f"{args.big:,}-segment v2 log, 1,000 records: {big.stat().st_size / 2**20:.0f} MiB")
        logs = [(f"{args.big:,} segments, v2, 1,000 records (libdarshan-util)", big)]
        real = runtime_log(tmp, 1_000_000)
        if real is not None:
            print(f"real runtime log: {real.name}, {real.stat().st_size / 2**20:.1f} MiB")
            logs.append(("1M pwrite()s, real darshan-runtime log (10 records)", real))
        for name, log in logs:
            if exe is None:
                print(f"{name}: darshan-dxt-parser not found: SKIPPED")
                continue
            side_by_side(name, {"correlate darshan LOG -o x.parquet": [*ours, str(log), "-o", out],
                                "darshan-dxt-parser LOG > /dev/null": [exe, str(log)]},
                         args.repeat)
            (tmp / "x.parquet").unlink(missing_ok=True)
        big.unlink()
        v1 = write_log(tmp / "small-v1.darshan", make_segments(args.pydarshan, 1000),
                       layout="v1-32", posix=False)
        side_by_side(f"PyDarshan's DXT path (mod_read_all_dxt_records, pandas) on "
                     f"{args.pydarshan:,} segments, v1, 1,000 records",
                     {"correlate darshan LOG -o x.parquet": [*ours, str(v1), "-o", out],
                      "PyDarshan DXT to DataFrames": [sys.executable, "-c", PYDARSHAN, str(v1),
                                                      "pandas"]}, 3)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def median_of(runs: list[dict]) -> dict:
    best = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    return {**best, "rss_mb": max(r["rss_mb"] for r in runs)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--segments", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--files", type=int, default=4096,
                    help="files in the trace (PyDarshan's cost grows with records)")
    ap.add_argument("--log", type=Path, nargs="*", default=[],
                    help="real .darshan logs to read with ours and darshan-dxt-parser too")
    ap.add_argument("--scale", action="store_true",
                    help="only the streaming decode's side-by-side table (issue 45)")
    ap.add_argument("--big", type=int, default=10_000_000,
                    help="segments of the big log (--scale)")
    ap.add_argument("--pydarshan", type=int, default=200_000,
                    help="segments of the log PyDarshan reads (--scale)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))  # testing/ (support code, not installed)
    if args.scale:
        scale(args)
        return
    from testing.darshan_writer import write_log

    tmp = Path(tempfile.mkdtemp(prefix="bench-darshan-"))
    seg = make_segments(args.segments, args.files)
    t = time.perf_counter()
    v2 = write_log(tmp / "v2.darshan", seg, layout="v2-40", posix=False)
    v1 = write_log(tmp / "v1.darshan", seg, layout="v1-32", posix=False)
    print(f"wrote 2 logs of {args.segments:,} segments in {time.perf_counter() - t:.1f} s "
          f"({v2.stat().st_size / 2**20:.1f} MiB v2, {v1.stat().st_size / 2**20:.1f} MiB v1)")
    base = run_py(BASELINE_RSS)["rss_mb"]
    results = {
        "ours v2": median_of([run_py(OURS, str(v2)) for _ in range(args.repeat)]),
        "ours v1": median_of([run_py(OURS, str(v1)) for _ in range(args.repeat)]),
        "pydarshan v1": run_py(PYDARSHAN, str(v1), "numpy"),
        "pydarshan v1 pandas": run_py(PYDARSHAN, str(v1), "pandas"),
    }
    parser = dxt_parser(v2)
    if parser:
        results["darshan-dxt-parser v2"] = parser
    print(f"\n{'reader':<24}{'seconds':>9}{'M seg/s':>9}{'peak RSS MB':>13}{'segments':>11}"
          f"{'bytes match':>13}")
    truth = int(seg["length"].sum())
    for name, r in results.items():
        print(f"{name:<24}{r['seconds']:>9.3f}{r['segments'] / r['seconds'] / 1e6:>9.2f}"
              f"{r['rss_mb']:>13.0f}{r['segments']:>11,}{str(r['bytes'] == truth):>13}")
    if not parser:
        print("darshan-dxt-parser: not found (set DARSHAN_UTIL_BIN or put it on PATH)")
    ours, v2r = results["ours v1"], results["ours v2"]
    for kind in ("pydarshan v1", "pydarshan v1 pandas"):
        print(f"\nspeed-up vs {kind}: {results[kind]['seconds'] / ours['seconds']:.0f}×  "
              f"(target ≥ 30×)", end="")
    print()
    print(f"ours v2: {v2r['segments'] / v2r['seconds'] / 1e6:.2f} M segments/s end-to-end in a "
          f"fresh process, {v2r['segments'] / v2r['warm_seconds'] / 1e6:.2f} M/s warm "
          f"(target ≥ 5)")
    print(f"ours v2 memory above interpreter+imports: {v2r['rss_mb'] - base:.0f} MB for a "
          f"{v2r['table_mb']:.0f} MB decoded table = "
          f"{(v2r['rss_mb'] - base) / v2r['table_mb']:.2f}× (target ≤ 2×)")
    if parser:
        print(f"speed-up vs darshan-dxt-parser (our decode in process vs its whole process): "
              f"{parser['seconds'] / v2r['seconds']:.1f}×")
    whole_command(v2, max(args.repeat, 5))
    for log in args.log:
        mine = median_of([run_py(OURS, str(log)) for _ in range(args.repeat)])
        theirs = dxt_parser(log)
        line = (f"\n{log.name}: ours {mine['segments']:,} segments, {mine['bytes']:,} bytes in "
                f"{mine['seconds']:.3f} s ({mine['segments'] / mine['seconds'] / 1e6:.2f} M/s, "
                f"{mine['rss_mb']:.0f} MB peak)")
        if theirs:
            same = (mine["segments"], mine["bytes"]) == (theirs["segments"], theirs["bytes"])
            line += (f"; darshan-dxt-parser {theirs['segments']:,} segments, {theirs['bytes']:,} "
                     f"bytes in {theirs['seconds']:.3f} s; identical counts and bytes: {same}")
        print(line)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
