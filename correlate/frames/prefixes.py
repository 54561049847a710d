"""Task prefixes from Dask keys, exactly as ``dask.utils.key_split`` names them, for a whole
column at once.

``key_split`` reads a key's ``-``-separated words up to the first one that is not all letters
(or is 8 letters from a-f) and names the task from the words before it. So each key can be cut
at a ``-`` before a word holding an ASCII non-letter (a digit, quote, comma, …) and end in
``-0`` instead without changing its prefix: ``('load-<token>', 7)`` becomes ``('load-0``. The
keys of a run come down to a few such stems, and ``key_split`` itself runs on those instead
of on every key. Non-ASCII characters never cut a key, so a
letter that Python and the regex engine class differently cannot change a result.
"""

from __future__ import annotations

import polars as pl

#: from the first "-" before a word holding an ASCII non-letter other than "-", to the end
_AFTER_STEM = r"(?s)-[^-]*[\x00-\x2C\x2E-\x40\x5B-\x60\x7B-\x7F].*"


def key_splits(keys: pl.Series) -> pl.Series:
    """``key_split`` of each key of ``keys`` (null for a null key), in the same order."""
    from dask.utils import key_split  # imports dask: only runs without names need it

    stems = keys.cast(pl.String).str.replace(_AFTER_STEM, "-0")  # (the engine's: Categorical)
    distinct = stems.drop_nulls().unique()
    return stems.replace_strict(distinct, [key_split(s) for s in distinct.to_list()],
                                default=None, return_dtype=pl.String).alias("split")


def key_split_groups(keys: pl.Series, prefixes: pl.Series | None = None) -> pl.Series:
    """The Dask task group of each key, as ``distributed.utils.key_split_group`` (which names
    every task's group on the scheduler) names it from the key's text: a tuple key's first
    element, stripped of brackets and quotes (``('field-3', 0)`` → ``field-3``); ``data`` for
    32 hex digits; the class of an object's repr; else the prefix (``prefixes``, when the
    caller has them: ``key_splits(keys)``)."""
    key = pl.col("key")
    rest = key_splits(keys) if prefixes is None else prefixes
    return pl.DataFrame({"key": keys.cast(pl.String), "rest": rest}).select(
        pl.when(key.str.starts_with("("))
        .then(key.str.splitn(",", 2).struct.field("field_0").str.strip_chars("()\"'"))
        .when(key.str.contains(r"^[a-f0-9]{32}$"))
        .then(pl.lit("data"))
        .when(key.str.starts_with("<"))
        .then(key.str.strip_chars("<>").str.extract(r"^\s*(\S+)", 1)
              .str.split(".").list.last())
        .otherwise(pl.col("rest")).alias("group")).to_series()
