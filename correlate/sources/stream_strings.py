"""Run format 3's strings: each process's ``strings.arrows`` read a chunk of batches at a time,
every distinct text kept once.

A collector's map of strings is bounded and starts again empty past its bound, so a text used
all along (a scheduler's task key, met again at each of its transitions) is written once per
epoch: a big scheduler writes eight or nine texts per task. Kept as written, they would be most
of what the load holds; kept once, with an integer per id saying where its text is (``Lookup``),
they cost a task's key once and four bytes per id. The texts are matched by value (a join on
text, not on a hash of it), so no two texts are ever taken for one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import polars as pl

from correlate.frames.scalars import integer

#: bytes of batches read together (the strings of a big scheduler are gigabytes)
CHUNK_BYTES = 128 << 20


@dataclass(frozen=True)
class Lookup:
    """Every process's distinct texts laid end to end (``texts``), and where each id's text
    is: process p's id i (0 ≤ i < ``lengths[p]``) has the text at ``at[sum(lengths[:p]) +
    i]`` of ``texts`` (null: no text was written for it)."""

    texts: pl.Series
    lengths: list[int]
    at: pl.Series

    @staticmethod
    def of(each: list[tuple[pl.Series, pl.Series]]) -> Lookup:
        """From each process's (distinct texts, their positions by id) (``distinct``)."""
        offsets, total = [], 0
        for texts, _at in each:
            offsets.append(total)
            total += texts.len()
        return Lookup(
            # (one chunk: a gather from many chunks is several times slower)
            pl.concat([t for t, _a in each], rechunk=True) if each
            else pl.Series("text", [], pl.String),
            [a.len() for _t, a in each],
            pl.concat([(a + o) for (_t, a), o in zip(each, offsets, strict=True)], rechunk=True)
            if each else pl.Series("at", [], pl.UInt32))


NONE = (pl.Series("text", [], pl.String), pl.Series("at", [], pl.UInt32))


def distinct(read: Callable[[], Iterable[pl.DataFrame]]) -> tuple[pl.Series, pl.Series]:
    """One process's strings (``read()``: chunks of id, text, in the order written, read
    twice): its distinct texts, and for each id from 0 to the largest the position of its text
    among them (null: no text was written for that id; an id written twice keeps its first
    text). Texts are told apart by a hash, read first without keeping the texts; then the
    first of each is kept. Two texts under one hash are found by a second hash (of another
    seed) that differs, and then matched by value instead (``_joined``)."""
    one, two = SEEDS
    ids, hashed, n, dense = [], [], 0, True
    for chunk in read():
        chunk = chunk.filter(pl.col("id").is_not_null())
        dense = dense and bool(chunk.select((pl.col("id") == pl.int_range(n, n + pl.len()))
                                            .all()).item())
        n += chunk.height
        # (a new column: the chunk's own would keep all its bytes, its texts too)
        ids.append(chunk["id"].cast(pl.Int64))
        hashed.append(chunk.select(h=_hash(pl.col("text"), one),
                                   check=(_hash(pl.col("text"), two) % (1 << 32))
                                   .cast(pl.UInt32)))
    if not n:
        return NONE
    if dense:  # (ids 0, 1, 2… in order: each row's position is its id)
        ids = []
    rows = pl.concat(hashed, rechunk=False)  # (no copy: the chunks as they are)
    del hashed
    is_first = rows["h"].is_first_distinct()
    firsts = rows.filter(is_first)
    uid = rows.select("h").join(firsts.select("h").with_row_index("uid"), on="h", how="left",
                                maintain_order="left")["uid"]  # (in the order first written)
    if (rows["check"] != firsts["check"].gather(uid)).any():
        return _joined(read())
    del rows, firsts
    kept, at = [], 0
    for chunk in read():
        texts = chunk.filter(pl.col("id").is_not_null())["text"].cast(pl.String)
        kept.append(_compact(texts.filter(is_first.slice(at, texts.len()))))
        at += texts.len()
    texts = pl.concat(kept)  # (one chunk: ``Lookup.of``)
    return (texts, uid) if dense else _by_id(texts, pl.DataFrame({"id": pl.concat(ids),
                                                                   "uid": uid}))


#: the seeds of the hash that tells texts apart, and of the one that checks it
SEEDS = (7, 1_000_003)


def _compact(texts: pl.Series) -> pl.Series:
    """``texts`` in buffers of their own: a filter of a chunk's texts keeps views into the
    chunk's buffers (all of its texts, as read), and would keep every chunk read."""
    return pl.Series(texts.name, texts.to_arrow())


def _hash(text: pl.Expr, seed: int) -> pl.Expr:
    text = text.cast(pl.String)
    return pl.when(text.is_not_null()).then(text.hash(seed=seed))


def _by_id(texts: pl.Series, ids: pl.DataFrame) -> tuple[pl.Series, pl.Series]:
    """``texts``, and the position of each id's text (``ids``: id, uid in the order written,
    not each id once, or not in order) for every id from 0 to the largest."""
    full = pl.DataFrame({"id": pl.int_range(0, (integer(ids["id"].max()) or 0) + 1,
                                            eager=True, dtype=pl.Int64)})
    return texts, full.join(ids.unique("id", keep="first").with_columns(
        pl.col("id").cast(pl.Int64)), on="id", how="left").sort("id")["uid"]


def _joined(chunks: Iterable[pl.DataFrame]) -> tuple[pl.Series, pl.Series]:
    """``distinct`` by the texts' values: each chunk joined on text with the texts before it
    (slower, as every chunk hashes every text kept)."""
    seen = pl.DataFrame(schema={"text": pl.String, "uid": pl.UInt32})
    pairs = []
    for chunk in chunks:
        rows = chunk.select(pl.col("id").cast(pl.Int64), pl.col("text").cast(pl.String)
                            ).filter(pl.col("id").is_not_null())
        rows = rows.join(seen, on="text", how="left", maintain_order="left")
        new = (rows.filter(pl.col("uid").is_null() & pl.col("text").is_not_null())
               .select("text").unique(maintain_order=True)
               .with_row_index("uid", offset=seen.height))
        if new.height:
            rows = rows.join(new, on="text", how="left", maintain_order="left", suffix="_new"
                             ).with_columns(pl.coalesce("uid", "uid_new").alias("uid"))
            seen = pl.concat([seen, new.select(_compact(new["text"]), "uid")])
        pairs.append(rows.select("id", "uid"))
    if not sum(p.height for p in pairs):
        return NONE
    return _by_id(seen["text"], pl.concat(pairs))
