"""``python -m testing.synthetic OUT ...``: write a synthetic run folder, print what correlate
must find as JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from testing.synthetic.job import DEFAULT_PREFIXES
from testing.synthetic.run import write_run


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testing.synthetic",
                                 description="write a synthetic run folder; print the expected "
                                             "totals as JSON",
                                 epilog="The Python API's Expected.per_execution (a row per "
                                        "execution) is made up to 2M executions; a process of "
                                        "more than 200k executions is written flush by flush "
                                        "in chunks (bounded memory).")
    ap.add_argument("out", type=Path)
    ap.add_argument("--executions", type=int, default=1000)
    ap.add_argument("--segments", type=int, default=None, help="default: 10 × executions")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hosts", type=int, default=1)
    ap.add_argument("--prefixes", default=",".join(DEFAULT_PREFIXES),
                    help="comma-separated task prefixes (a chain graph)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", choices=("yappi", "yappi-cpu", "off"), default="yappi")
    ap.add_argument("--flush-interval", type=float, default=5.0)
    ap.add_argument("--darshan-offset-ns", type=int, default=0)
    ap.add_argument("--expected", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    exp = write_run(args.out, workers=args.workers, threads=args.threads,
                    executions=args.executions,
                    segments=args.segments if args.segments is not None else 10 * args.executions,
                    prefixes=[p for p in args.prefixes.split(",") if p], hosts=args.hosts,
                    seed=args.seed, profile=args.profile, flush_interval_s=args.flush_interval,
                    darshan_offset_ns=args.darshan_offset_ns)
    text = json.dumps(exp.to_json(), indent=1)
    if args.expected:
        args.expected.write_text(text + "\n")
    print(text)
    print(f"generated in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return 0
