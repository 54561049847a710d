"""``key_splits`` names every key exactly as ``dask.utils.key_split`` does, on keys of every
shape Dask makes and on random ones built from the characters its rules turn on."""

from __future__ import annotations

import random

import polars as pl
from dask.utils import key_split

from correlate.frames.prefixes import key_split_groups, key_splits

SHAPES = [
    "x", "x-1", "x-1-2-3", "('x-2', 1)", "('x', 1)", "hello-world-1", "x-abcdefab",
    "x-database-1", "x-abcdefa-1", "_(x)", "ae05086432ca935f6eba409a8ecd4896",
    "ae05086432ca935f6eba409a8ecd4896-0", "<module.submodule.myclass object at 0xdaf372",
    "<module.sub.klass-object-1", "('load-chunk-7613fd66e380f9057145ea8021143178', 46239)",
    "('array-original-6aa3d7', 0, 0)", "finalize-hlgfinalizecompute-2b3c", "x--1", "-x-1",
    "--", "", "-", "x-", "('', 1)", "café-crème-1", "x-é1", "x-١", "数据-处理-7",
    "x-ǅ-1", "a\nb-c-1", "x-abc def-1", "'quoted'-name-3", "x-ABCDEFAB-1",
]


def test_every_shape_is_named_as_key_split_names_it():
    got = key_splits(pl.Series(SHAPES, dtype=pl.String)).to_list()
    assert got == [key_split(k) for k in SHAPES]


def test_random_keys_are_named_as_key_split_names_them():
    rng = random.Random(7)
    alphabet = "abcdefxyzABQ-0129'(), _<>.é١数\n"
    keys = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
            for _ in range(20_000)]
    got = key_splits(pl.Series(keys, dtype=pl.String)).to_list()
    wrong = [(k, g) for k, g in zip(keys, got, strict=True) if g != key_split(k)]
    assert not wrong, wrong[:5]


def test_null_keys_stay_null_and_order_is_kept():
    keys = pl.Series(["b-1", None, "a-2", "b-1"], dtype=pl.String)
    assert key_splits(keys).to_list() == ["b", None, "a", "b"]


def test_every_shape_is_grouped_as_key_split_group_groups_it():
    from distributed.utils import key_split_group

    shapes = [k for k in SHAPES if k] + [
        "('x, y', 1)", "(\"q'z\", 2)", "(1, 2)", "('a-b-1', 2, 3)", "<  spaced.klass at 0x1>",
        "AE05086432CA935F6EBA409A8ECD4896", "ae05086432ca935f6eba409a8ecd48961"]
    keys = pl.Series(shapes, dtype=pl.String)
    want = [key_split_group(k) for k in shapes]
    assert key_split_groups(keys).to_list() == want
    assert key_split_groups(keys, key_splits(keys)).to_list() == want


def test_executions_without_names_logged_get_dasks_group_not_their_prefix():
    # GIVEN executions whose tasks were forgotten before the scheduler's flush (no names
    # logged) but one, whose names the scheduler logged
    from correlate.engine import number_executions
    from correlate.schema import TABLES, conform

    keys = ["('array-6aa3', 0, 1)", "inc-0c5e6ef5", "('x-2', 3)"]
    ex = conform(pl.DataFrame({
        "key": keys, "host": ["h"] * 3, "pid": [1] * 3, "execution_seq": [1, 2, 3],
        "local_start_ns": [10, 20, 30], "local_stop_ns": [11, 21, 31],
        "prefix": [None, None, "x"], "group": [None, None, "x-2"]}), TABLES["executions"])
    # THEN each is named as the scheduler names its task: the group a tuple key's name
    got = number_executions(ex).sort("local_start_ns")
    assert got.select("prefix", "group").rows() == [
        ("array", "array-6aa3"), ("inc", "inc"), ("x", "x-2")]
    # (as codes, filled ones too: a big run's executions hold no text per row of them)
    assert (got.schema["prefix"], got.schema["group"]) == (pl.Categorical, pl.Categorical)
