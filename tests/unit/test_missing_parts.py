"""The executions a run lacks per worker (``missing.missing_per_worker``) are counted a part of
the keys at a time: the same counts as counted whole, keys without text included."""

from __future__ import annotations

import random

import polars as pl
import pytest

from correlate.sources import missing


def _job(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Finished tasks per worker and key (some twice), and executions recorded for most of
    them, a few with their key's text lost."""
    rng = random.Random(seed)
    finished, executions = [], []
    for i in range(3000):
        worker, key = f"tcp://w{i % 7}", f"('x-{i}', {i % 13})"
        n = 2 if i % 11 == 0 else 1
        finished.append((worker, key, n))
        got = n - (1 if rng.random() < 0.08 else 0) + (1 if rng.random() < 0.02 else 0)
        executions += [(worker, None if rng.random() < 0.01 else key)] * got
    return (pl.DataFrame(finished, schema={"worker": pl.String, "key": pl.String,
                                           "n": pl.UInt32}, orient="row"),
            pl.DataFrame(executions, schema={"worker": pl.String, "key": pl.String},
                         orient="row"))


@pytest.mark.parametrize("rows_per_part", [1, 500, 2900])
def test_counted_in_parts_as_whole(monkeypatch, rows_per_part: int) -> None:
    finished, executions = _job(3)
    whole = missing.missing_per_worker(finished, executions)
    assert sum(whole.values()) > 100  # (gaps to find)
    monkeypatch.setattr(missing, "ROWS_PER_PART", rows_per_part)
    assert missing.missing_per_worker(finished, executions) == whole


@pytest.mark.parametrize("rows_per_part", [1, 2])  # 3 parts, 2 parts
def test_a_finished_task_without_text_is_counted_in_parts(monkeypatch, rows_per_part: int
                                                         ) -> None:
    """Its rows are counted once, in the first part (a null key's hash names a part too)."""
    finished = pl.DataFrame({"worker": ["a", "a", "b"], "key": [None, "k", "k2"],
                             "n": [3, 1, 1]}, schema_overrides={"n": pl.UInt32})
    executions = pl.DataFrame({"worker": ["a"], "key": ["k"]})
    whole = missing.missing_per_worker(finished, executions)
    assert whole == {"a": 3, "b": 1}
    monkeypatch.setattr(missing, "ROWS_PER_PART", rows_per_part)
    assert missing.missing_per_worker(finished, executions) == whole
