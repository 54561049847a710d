"""Run format 3's strings: every process's ``strings.arrows`` read a chunk of batches at a time
(small processes' together), every distinct text kept once.

A collector's map of strings is bounded and starts again past its bound, so a text used all
along is written once per fill of the map: the scheduler's task keys, met again at each of
their transitions, now only in runs written before the scheduler held them (there a big
scheduler wrote five to nine texts per task); still its other texts, and any process's. Kept as
written, they would be most of what the load holds; kept once, with an integer per id saying
where its text is (``Lookup``), they cost a task's key once (shared by the processes that name
it) and four bytes per id.

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
#: rows of the strings a numpy operation takes at a time where a whole column's temporary
#: would be gigabytes
_BLOCK = 1 << 22


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
    rows = [pl.concat(hashed, rechunk=True)]
    del hashed  # (the chunks' hashes copied into one frame: not held beside it)
    numbered = _numbered(rows)
    if numbered is None:  # (two texts under one hash: told apart by value)
        return _joined(read(), processes)
    at, keep = numbered
    kept, start = [], 0
    for chunk in read():
        texts = chunk.filter(pl.col("id").is_not_null())["text"].cast(pl.String)
        kept.append(compact(texts.filter(keep.slice(start, texts.len()))))
        start += texts.len()
    return Lookup(pl.concat(kept), counts.lengths, at)


def _numbered(handed: list[pl.DataFrame]) -> tuple[pl.Series, pl.Series] | None:
    """Each row's text as a number, 0, 1… in the order the texts were first written (null:
    no text), and whether each row is its text's first; None where two texts share the hash
    ``h`` but not the ``check``. The rows (h, check) are handed over in a list, and let go
    once put in order of their hash (a big run's are gigabytes).

    The rows are put in order of their hash by one sort of 64-bit integers, each the hash's
    high bits with the row's index in the low ones (several times faster than ranking the
    hashes, or than sorting the rows by them: a sort with a payload, or a hash table probed
    per row, is a random access per row into tables larger than the cache); the few groups
    of high bits that hold more than one hash are put in order again (``_untangle``)."""
    rows = handed.pop()
    n = rows.height
    bits = max(1, (n - 1).bit_length())
    low = np.uint64((1 << bits) - 1)
    valid = rows.get_column("h").is_not_null()
    order = _by_high_bits(rows.get_column("h"), valid, low)
    by_hash = pl.DataFrame({"h": _untangle(order, rows.get_column("h"), low),
                            "check": rows.get_column("check").gather(pl.Series(order))})
    del rows
    same = pl.col("h") == pl.col("h").shift(1)
    if by_hash.select((same & (pl.col("check") != pl.col("check").shift(1))).any()).item():
        return None
    new = by_hash.select(~same.fill_null(False)).to_series()
    del by_hash
    firsts = pl.Series(order).filter(new)
    is_first = pl.repeat(False, n, eager=True).scatter(firsts, True)
    # each text's number: how many texts were first written before its first row
    written = (is_first.cum_sum().cast(pl.UInt32) - 1).gather(firsts)
    numbers = np.zeros(n, np.uint32)
    numbers[order] = written.gather(new.cum_sum().cast(pl.UInt32) - 1).to_numpy()
    return (pl.select(pl.when(pl.lit(valid)).then(pl.lit(pl.Series(numbers)))).to_series()
            .alias("at"), is_first)


def _by_high_bits(hashes: pl.Series, valid: pl.Series, low: np.uint64) -> np.ndarray:
    """The rows with a hash (``valid``) in order of their hash's bits above ``low``, then of
    index: one sort of the two packed in a 64-bit integer (the index in the bits of
    ``low``)."""
    n = hashes.len()
    filled = hashes.fill_null(0).to_numpy()
    key = np.empty(n, np.uint64)
    for start in range(0, n, _BLOCK):  # (a block at a time: no temporary as long as the rows)
        block = slice(start, start + _BLOCK)
        np.bitwise_or(filled[block] & ~low, np.arange(start, min(start + _BLOCK, n),
                                                      dtype=np.uint64), out=key[block])
    del filled
    if not valid.all():
        key = key[valid.to_numpy()]
    keys = pl.Series(key).sort().to_numpy()
    del key
    order = np.empty(len(keys), np.uint32)
    for start in range(0, len(keys), _BLOCK):
        order[start:start + _BLOCK] = keys[start:start + _BLOCK] & low
    return order


def _untangle(order: np.ndarray, hashes: pl.Series, low: np.uint64) -> pl.Series:
    """The hashes at ``order`` (rows in order of their hash's high bits, then of index),
    with ``order`` changed in place so that in each group of high bits holding more than
    one hash the rows are in order of hash, then index (few: their rows were in index
    order, the hashes interleaved)."""
    at = hashes.gather(pl.Series(order))  # (a numpy array of indices: several times slower)
    by_high = at.to_numpy()  # (in order of high bits: a group's ends found by search)
    changes = [np.empty(0, np.int64)]  # where a hash follows another of the same high bits
    for start in range(0, len(by_high), _BLOCK):
        block = by_high[max(start - 1, 0):start + _BLOCK]
        step = block[1:] ^ block[:-1]
        changes.append(np.flatnonzero((step != 0) & (step <= low)) + max(start - 1, 0))
    groups = np.unique(by_high[np.concatenate(changes)] & ~low)
    if not len(groups):
        return at
    starts = np.searchsorted(by_high, groups, side="left")
    ends = np.searchsorted(by_high, groups | low, side="right")
    tangled = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends, strict=True)])
    rows, their = order[tangled], by_high[tangled]
    untangled = np.lexsort((rows, their))
    order[tangled] = rows[untangled]
    del by_high
    return at.scatter(tangled, their[untangled])


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
        # each row's place in its process's run of rows (the processes one after another)
        at = np.asarray(procs.to_numpy())
        starts = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
        lengths = np.diff(np.r_[starts, len(at)])
        expected = np.arange(len(at)) - np.repeat(starts, lengths)
        expected[:lengths[0]] += start
        ok = np.array_equal(chunk["id"].to_numpy(), expected)
        for p, n in zip(at[starts].tolist(), lengths.tolist(), strict=True):
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
