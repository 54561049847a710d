"""A run's transitions read in parts by key give what they give read whole: every table and
the summary, row for row, whether the load spilled them in parts or the timeline filters
them, and with ``events`` merged back from several ranges of time."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from correlate import sinks
from correlate.frames import spill
from correlate.sources import detect
from testing.synthetic import write_run
from tests.engine.key_parts import assert_same, correlated


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("key-parts") / "run"
    write_run(folder, workers=3, threads=2, hosts=2, executions=400, segments=800, seed=5,
              profile="off")
    return folder


def test_a_small_run_is_read_whole(run: Path) -> None:
    assert detect.load(run, lazy=True).transitions_in_parts == ()


@pytest.mark.parametrize("spilled", [True, False], ids=["spilled-in-parts", "filtered"])
def test_the_transitions_in_parts_give_every_table_as_whole(run: Path, monkeypatch,
                                                            spilled: bool) -> None:
    whole, none = correlated(run, monkeypatch)
    rows = whole["events"].height
    parts, spilled_parts = correlated(run, monkeypatch, rows_per_part=rows // 5,
                                      spilled=spilled)
    assert none == 0 and spilled_parts == (5 if spilled else 0)
    assert_same(whole, parts)


def test_parts_without_rows_give_every_table_as_whole(tmp_path, monkeypatch) -> None:
    """A run of a dozen tasks read in as many parts as there are buckets: most parts hold
    no key, the first among them."""
    run = tmp_path / "run"
    write_run(run, workers=2, threads=1, hosts=1, executions=12, segments=24, seed=2,
              profile="off")
    whole, _ = correlated(run, monkeypatch)
    parts, _ = correlated(run, monkeypatch, rows_per_part=1, spilled=False)
    assert spill.parts_for(whole["events"].height, 1) == spill.BUCKETS
    assert_same(whole, parts)


def test_every_key_is_in_one_part_of_every_table() -> None:
    keys = pl.DataFrame({"key": [f"('x-{i}', {i % 7})" for i in range(5_000)]})
    for n in (2, 3, 7):
        where = keys.with_columns(part=spill.bucket() % n)
        sizes = where.group_by("part").len()["len"]
        assert sizes.len() == n and sizes.min() > 5_000 / n * 0.8  # (spread)
        again = keys.with_columns(pl.col("key").cast(pl.Categorical)).with_columns(
            part=spill.bucket() % n)  # (a Categorical key by its text)
        assert where["part"].equals(again["part"])
        split = spill.spilled_parts(keys.with_row_index("i"), n)
        read = [p.collect() for p in split]
        assert sum(r.height for r in read) == keys.height
        for p, r in enumerate(read):  # each part's rows, in their order
            assert r["i"].is_sorted()
            assert (r.select(spill.in_part(p, n)).to_series()).all()


def test_parts_of_the_spilled_parts_are_read_from_the_part_holding_their_keys() -> None:
    """More parts than the source spilled (a multiple): each is read from the spilled part
    that holds its keys, and holds what the whole table's part holds, in its order."""
    from correlate.sources.frames import RunFrames

    rows = pl.DataFrame({"key": [f"('x-{i % 900}', 0)" for i in range(6_000)]}
                        ).with_row_index("i")
    frames = RunFrames(transitions=rows, transitions_in_parts=spill.spilled_parts(rows, 3))
    whole = RunFrames(transitions=rows)
    for n in (3, 6, 9):
        parts = [p.collect() for p in frames.transition_parts(n)]
        assert [p.equals(w.collect()) for p, w in zip(parts, whole.transition_parts(n),
                                                         strict=True)] == [True] * n
        assert sum(p.height for p in parts) == rows.height and min(p.height for p in parts) > 0


def test_a_part_spilled_as_codes_reads_back_as_it_was() -> None:
    """The timeline's second pass and ``Merged`` spill Categorical columns as their codes and
    take them back as the same Categorical columns (not looked up text by text again)."""
    df = pl.DataFrame({"key": [f"('y-{i}', {i})" for i in range(1_000)] * 3,
                       "host": ["h1", "h2", None] * 1_000, "t": range(3_000)}).with_columns(
        pl.col("key", "host").cast(pl.Categorical))
    codes, back = spill.coded(df)
    assert codes.schema == pl.Schema({"key": pl.UInt32, "host": pl.UInt32, "t": pl.Int64})
    assert codes.with_columns(back).equals(df)
    part = spill.spilled_coded(df)
    assert part.path.exists() and part.take().equals(df)
    assert not part.path.exists()  # (read once: the spill folder holds no copy after)
    assert spill.spilled_coded(df.select("t")).take().equals(df.select("t"))


def test_a_table_merged_from_parts_is_in_its_order(monkeypatch) -> None:
    monkeypatch.setattr(sinks, "RANGE_ROWS", 500)
    n = 3_000
    events = pl.DataFrame({
        "time_ns": [(i * 7919) % 1_000 for i in range(n)],  # (ties across parts)
        "side": ["scheduler" if i % 3 else "worker" for i in range(n)],
        "key": [f"k{i % 40}" for i in range(n)], "start": ["a"] * n,
        "finish": ["b" if i % 2 else "c" for i in range(n)],
        "stimulus_id": [str(i) for i in range(n)]})  # (rows tied on every sort key)
    sink = sinks.MemorySink()
    merged = sinks.Merged("events", sinks.cuts(events["time_ns"].gather_every(7), n))
    assert len(merged.ranges) == 6
    for p in range(3):  # (Categorical as the timeline makes them: spilled as codes)
        merged.add(events.filter(spill.in_part(p, 3)).with_columns(
            pl.col("key", "start", "finish").cast(pl.Categorical)))
    merged.put(sink)
    got = sink.tables["events"]
    expected = events.sort("time_ns", "side", "key", "start", "finish", maintain_order=True)
    assert got.select(expected.columns).equals(
        expected.with_columns(pl.col("side").cast(got.schema["side"])))


@pytest.mark.parametrize("carried_rows", [10**9, 50], ids=["carried", "merged-again"])
def test_rows_cut_at_a_provisional_time_merge_into_the_order_of_the_time_made(
        monkeypatch, carried_rows: int) -> None:
    """``events`` is cut into ranges at a provisional time (each process's clock as the
    first part's bounds set it) and put in the order of the time made once the clocks are
    known (each process's moved, both ways): rows that a later range's precede are carried,
    or, past ``CARRIED_ROWS``, merged again by the time made."""
    monkeypatch.setattr(sinks, "RANGE_ROWS", 400)
    monkeypatch.setattr(sinks, "CARRIED_ROWS", carried_rows)
    again, merged_again = [], sinks.Merged._again

    def counted(self, *args):
        again.append(1)
        return merged_again(self, *args)

    monkeypatch.setattr(sinks.Merged, "_again", counted)
    n, moved = 4_000, {1: 0, 2: -3_003, 3: 2_501, 4: -404}  # (no two rows at one time)
    rows = pl.DataFrame({
        "local_time_ns": [(i * 7_919) % n * 10 for i in range(n)],
        "pid": [1 + i % 4 for i in range(n)], "side": ["worker"] * n,
        "key": [f"k{i % 60}" for i in range(n)], "start": ["a"] * n, "finish": ["b"] * n,
        "stimulus_id": [str(i) for i in range(n)]})
    by_pid = pl.DataFrame({"pid": list(moved), "moved": list(moved.values())})

    def made(df: pl.DataFrame) -> pl.DataFrame:
        return df.join(by_pid, on="pid", how="left", maintain_order="left").with_columns(
            time_ns=pl.col("local_time_ns") + pl.col("moved")).drop("moved")

    def merged(bounds: tuple[int, int]) -> pl.DataFrame:
        out = sinks.Merged("events", sinks.cuts(rows["local_time_ns"], n))
        for p in range(3):
            part = rows.filter(spill.in_part(p, 3)).with_columns(
                pl.col("key").cast(pl.Categorical))
            out.add(part, at=part["local_time_ns"])
        assert len(out.ranges) == 10
        sink = sinks.MemorySink()
        out.put(sink, made, bounds)
        return sink.tables["events"]

    got = merged((min(moved.values()), max(moved.values())))
    expected = made(rows).sort("time_ns")
    assert got["time_ns"].equals(expected["time_ns"])
    assert got["stimulus_id"].equals(expected["stimulus_id"])
    assert len(again) == (carried_rows < n)
    if not again:  # (the clocks' moves matter: merged as if none moved, the order is lost)
        assert not merged((0, 0))["time_ns"].is_sorted()


def test_the_clocks_change_is_bounded_for_every_row() -> None:
    """``shift_changes`` bounds the change of any row's shift: its own process's offset, its
    host's median where it has none, else none."""
    from correlate.timeline import align

    def clocks(offsets: dict[tuple[str, int], int]) -> pl.DataFrame:
        return pl.DataFrame({"host": [h for h, _ in offsets], "pid": [p for _, p in offsets],
                             "domain": ["worker"] * len(offsets),
                             "offset_ns": list(offsets.values())})

    before = clocks({("a", 1): 100, ("a", 2): 300, ("b", 1): -50})
    after = clocks({("a", 1): 90, ("a", 2): 340, ("b", 1): -50, ("b", 2): -80})
    rows = pl.DataFrame({"host": ["a", "a", "a", "b", "b", "b", "c", None],
                         "pid": [1, 2, 9, 1, 2, 9, 1, 1]})
    change = align.worker_shift(rows, after) - align.worker_shift(rows, before)
    assert change.to_list() == [-10, 40, 15, -0, -30, -15, 0, 0]
    assert align.shift_changes(before, after) == (-30, 40)
    assert align.shift_changes(after, after) == (0, 0)
