"""Run format 3's strings: every process's ``strings.arrows`` read a chunk of batches at a time
(small processes' together), every distinct text kept once.

A collector's map of strings is bounded and starts again empty past its bound, so a text used
all along (a scheduler's task key, met again at each of its transitions) is written once per
epoch: a big scheduler writes eight or nine texts per task. Kept as written, they would be most
of what the load holds; kept once, with an integer per id saying where its text is (``Lookup``),
they cost a task's key once (shared by the processes that name it) and four bytes per id.

Texts are told apart by a 64-bit hash, computed in a first read that keeps no text; the second
read keeps the first text of each hash. A second hash of another seed checks the first: where
two texts share the first hash and differ in the second, the texts are matched by value
instead (``_joined``, slower), so two texts are taken for one only if both hashes agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import polars as pl

#: bytes of batches read together (the strings of a big scheduler are gigabytes)
CHUNK_BYTES = 128 << 20
#: the seeds of the hash that tells texts apart, and of the one that checks it
SEEDS = (7, 1_000_003)
#: ``Lookup.codes`` of a text not yet cast
_NO_CODE = np.iinfo(np.uint32).max


class Lookup:
    """Every process's texts, each distinct text once (``texts``), and where each id's text
    is: process p's id i (0 ≤ i < ``lengths[p]``) has the text at ``at[sum(lengths[:p]) +
    i]`` of ``texts`` (null: no text was written for it)."""

    def __init__(self, texts: pl.Series, lengths: list[int], at: pl.Series) -> None:
        self.texts = texts.rechunk()  # (a gather from many chunks is several times slower)
        self.lengths = lengths
        self.at = at.rechunk()
        #: each text's Categorical code, once asked for (``_NO_CODE``: not yet), and an empty
        #: Categorical column that keeps the codes meaning those texts (polars forgets every
        #: category once no Categorical column is alive, and numbers new texts from 0 again)
        self.codes: np.ndarray | None = None
        self.anchor: pl.Series | None = None

    def categorical(self, at: pl.Series) -> pl.Series:
        """The texts at positions ``at`` (null: none) as a Categorical column: each distinct
        text cast once (its code kept for the next call) and each row given its code, never a
        text per row (a task's key is in each of its transitions)."""
        if self.codes is None:
            self.codes = np.full(self.texts.len(), _NO_CODE, np.uint32)
        known = at.is_not_null()
        where = at.fill_null(0).to_numpy()
        used = np.zeros(len(self.codes), bool)  # (marks, not a sort of the rows)
        used[where[known.to_numpy()]] = True
        new = np.flatnonzero(used & (self.codes == _NO_CODE))
        if len(new):
            cast = self.texts.gather(pl.Series(new)).cast(pl.Categorical)
            self.anchor = cast.clear()
            self.codes[new] = cast.to_physical().fill_null(_NO_CODE).to_numpy()
        codes = pl.Series(at.name, self.codes[where], pl.UInt32)
        codes = pl.select(pl.when(known & (codes != _NO_CODE)).then(codes)).to_series()
        return pl.select(pl.lit(codes).cat.to(pl.Categorical)).to_series().alias(at.name)


def lookup(read: Callable[[], Iterable[pl.DataFrame]], processes: int) -> Lookup:
    """The strings of ``processes`` processes (``read()``: chunks of ``_proc``, id, text, each
    process's rows in the order written; read twice)."""
    one, two = SEEDS
    hashed, counts, order = [], _Order(processes), True
    for chunk in read():
        chunk = chunk.filter(pl.col("id").is_not_null())
        order = order and counts.add(chunk)
        hashed.append(chunk.select(h=_hash(pl.col("text"), one),
                                   check=(_hash(pl.col("text"), two) % (1 << 32))
                                   .cast(pl.UInt32)))
    if not order:  # (a process's ids not 0, 1, 2… in order: each id found by a join)
        return _joined(read(), processes)
    if not hashed:
        return Lookup(pl.Series("text", [], pl.String), [0] * processes,
                      pl.Series("at", [], pl.UInt32))
    rows = pl.concat(hashed, rechunk=True)  # (a sort of many chunks is twice as slow)
    del hashed
    # each row's text as a number, 1, 2… by hash (a sort: a join of every row with the first
    # of each hash, or a test of each row against every hash before it, is a random probe of
    # a table of every distinct text per row, several times slower once that outgrows the
    # cache); 0 where no text was written
    uid = rows["h"].rank("dense").fill_null(0).to_numpy()
    index = np.arange(len(uid), dtype=np.uint32)
    first = np.full(int(uid.max(initial=0)) + 1, len(uid), np.uint32)
    np.minimum.at(first, uid, index)  # (each number's first row)
    check = rows["check"].fill_null(0).to_numpy()
    if (check != check[first[uid]]).any():
        return _joined(read(), processes)
    del rows, check
    is_first = (first[uid] == index) & (uid > 0)
    # the numbers in the order each text was first written (the order ``texts`` keeps)
    written = np.zeros(len(first), np.uint32)
    written[uid[is_first]] = np.arange(int(is_first.sum()), dtype=np.uint32)
    at = pl.Series("at", written[uid], pl.UInt32)
    at = pl.select(pl.when(pl.lit(pl.Series(uid > 0))).then(at)).to_series().alias("at")
    del first, index, written, uid
    keep = pl.Series(is_first)
    kept, start = [], 0
    for chunk in read():
        texts = chunk.filter(pl.col("id").is_not_null())["text"].cast(pl.String)
        kept.append(compact(texts.filter(keep.slice(start, texts.len()))))
        start += texts.len()
    return Lookup(pl.concat(kept), counts.lengths, at)


class _Order:
    """Whether the chunks read hold each process's ids 0, 1, 2… in order, the processes one
    after another (then an id's row is at its process's start plus the id), and how many
    each has."""

    def __init__(self, processes: int) -> None:
        self.lengths = [0] * processes
        self.last = -1

    def add(self, chunk: pl.DataFrame) -> bool:
        if chunk.is_empty():
            return True
        procs = chunk["_proc"]
        first = int(procs[0])
        if not procs.is_sorted() or first < self.last:
            return False
        if first != self.last and self.lengths[first]:  # (a process met again after another)
            return False
        start = self.lengths[first] if first == self.last else 0
        ok = chunk.select((pl.col("id") == pl.int_range(pl.len()).over("_proc") + pl.when(
            pl.col("_proc") == first).then(start).otherwise(0)).all()).item()
        for p, n in chunk.group_by("_proc").len().iter_rows():
            self.lengths[p] += n
        self.last = int(procs[-1])
        return bool(ok)


def compact(texts: pl.Series) -> pl.Series:
    """``texts`` in buffers of their own: a filter or gather of texts keeps views into its
    source's buffers (a chunk's texts, as read, would keep every chunk read)."""
    return pl.Series(texts.name, texts.to_arrow())


def _hash(text: pl.Expr, seed: int) -> pl.Expr:
    text = text.cast(pl.String)
    return pl.when(text.is_not_null()).then(text.hash(seed=seed))


def _joined(chunks: Iterable[pl.DataFrame], processes: int) -> Lookup:
    """``lookup`` by the texts' values, each id found by a join (slower: every chunk is
    joined on text with the texts before it): for ids not in order, or two texts under one
    hash. An id written twice keeps its first text."""
    seen = pl.DataFrame(schema={"text": pl.String, "uid": pl.UInt32})
    pairs = []
    for chunk in chunks:
        rows = chunk.select(pl.col("_proc").cast(pl.Int64), pl.col("id").cast(pl.Int64),
                            pl.col("text").cast(pl.String)).filter(pl.col("id").is_not_null())
        rows = rows.join(seen, on="text", how="left", maintain_order="left")
        new = (rows.filter(pl.col("uid").is_null() & pl.col("text").is_not_null())
               .select("text").unique(maintain_order=True)
               .with_row_index("uid", offset=seen.height))
        if new.height:
            rows = rows.join(new, on="text", how="left", maintain_order="left", suffix="_new"
                             ).with_columns(pl.coalesce("uid", "uid_new").alias("uid"))
            seen = pl.concat([seen, new.select(compact(new["text"]), "uid")])
        pairs.append(rows.select("_proc", "id", "uid"))
    ids = (pl.concat(pairs).unique(["_proc", "id"], keep="first") if pairs
           else pl.DataFrame(schema={"_proc": pl.Int64, "id": pl.Int64, "uid": pl.UInt32}))
    tops = dict(ids.group_by("_proc").agg(pl.col("id").max()).iter_rows())
    lengths = [max(int(tops.get(p, -1)) + 1, 0) for p in range(processes)]
    grid = pl.DataFrame({"_proc": pl.Series(range(processes), dtype=pl.Int64).repeat_by(
        pl.Series(lengths, dtype=pl.UInt32)).explode(), "id": pl.concat(
        [pl.int_range(n, eager=True, dtype=pl.Int64) for n in lengths])
        if processes else pl.Series([], dtype=pl.Int64)}).drop_nulls()
    return Lookup(seen["text"], lengths, grid.join(ids, on=["_proc", "id"], how="left",
                                                  maintain_order="left")["uid"])
