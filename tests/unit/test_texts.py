"""``per_text``: a function of each row's text is the same whether the column holds the texts
or their Categorical codes (computed once per distinct text), nulls included; ``as_codes``:
the named text columns as codes, the same texts."""

from __future__ import annotations

import polars as pl
import pytest

from correlate.frames.texts import as_codes, per_text

KEYS = pl.Series("key", ["('load-1', 0)", "b-2", None, "('load-1', 0)", "c", None, "b-2"])


@pytest.mark.parametrize("f", [lambda t: t.hash(seed=0), lambda t: t.str.len_bytes(),
                               lambda t: t.str.starts_with("(")],
                         ids=["hash", "length", "prefix"])
def test_codes_give_what_the_texts_give(f):
    want = f(KEYS)
    for column in (KEYS, KEYS.cast(pl.Categorical)):
        got = per_text(column, f)
        assert got.name == "key" and got.dtype == want.dtype
        assert got.to_list() == want.to_list()


def test_texts_met_after_others_keep_their_own_values():
    # (codes from an earlier column do not start at 0: the array is indexed by code)
    pl.Series(["x", "y", "z"] * 10).cast(pl.Categorical)
    later = pl.Series("key", ["z", "w", "x"]).cast(pl.Categorical)
    assert per_text(later, lambda t: t.str.len_bytes() + (t == "w").cast(pl.UInt32)
                    ).to_list() == [1, 2, 1]


def test_as_codes_makes_the_named_text_columns_codes_of_the_same_texts():
    frame = pl.DataFrame({"key": KEYS, "group": ["g", None, "h", "g", "g", "h", None],
                          "worker": ["w1"] * 7, "n": list(range(7))})
    held = as_codes(frame, ("key", "group", "n", "absent"))
    assert [held.schema[c] for c in ("key", "group", "worker", "n")] == [
        pl.Categorical, pl.Categorical, pl.String, pl.Int64]
    assert held.with_columns(pl.col("key", "group").cast(pl.String)).equals(frame)
