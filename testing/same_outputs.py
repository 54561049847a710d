"""Whether two ``correlate`` output folders hold the same results, row for row: every parquet
table (polars ``DataFrame.equals``: same columns, dtypes, values and order), ``summary.json``
(the same JSON) and ``task_lifecycles.jsonl`` (the same lines). A check for changes that must
not change any output (a faster path to the same tables).

    python -m testing.same_outputs EXPECTED_DIR ACTUAL_DIR [EXPECTED_DIR ACTUAL_DIR ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl


def differences(expected: Path, actual: Path) -> list[str]:
    """What differs between two output folders (nothing: the same results)."""
    found = []
    names = sorted({p.name for p in expected.iterdir()} | {p.name for p in actual.iterdir()})
    for name in names:
        a, b = expected / name, actual / name
        if not (a.exists() and b.exists()):  # (a parquet table may be a folder of parts)
            if name.endswith((".parquet", ".json", ".jsonl")):
                found.append(f"{name}: only in {expected if a.exists() else actual}")
            continue
        if name.endswith(".parquet"):
            x, y = pl.read_parquet(a), pl.read_parquet(b)
            if not x.equals(y):
                found.append(f"{name}: {x.shape} against {y.shape}, not equal row for row")
        elif name.endswith(".json"):
            if json.loads(a.read_text()) != json.loads(b.read_text()):
                found.append(f"{name}: different")
        elif name.endswith(".jsonl"):
            if a.read_bytes() != b.read_bytes():
                found.append(f"{name}: different lines")
    return found


def main(argv: list[str]) -> int:
    if not argv or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    failed = 0
    for expected, actual in zip(argv[::2], argv[1::2], strict=True):
        found = differences(Path(expected), Path(actual))
        print(f"{actual}: " + ("identical to " + expected if not found
                               else "; ".join(found)))
        failed += bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
