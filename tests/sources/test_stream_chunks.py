"""Run format 3's big tables are decoded a chunk of batches at a time, with each process's
strings read a chunk at a time and every distinct text kept once (``stream_strings``): the
load gives the same frames and rejects as decoding every table whole."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from correlate.frames import spill
from correlate.schema.run import STREAM_SUFFIX
from correlate.sources import run_folder, stream_strings
from correlate.sources.run_streams import framing
from correlate.sources.stream_strings import lookup
from testing.synthetic import parts as synthetic_parts
from testing.synthetic import write_run


def _strings(proc: int, ids: list[int | None], texts: list[str | None]) -> pl.DataFrame:
    return pl.DataFrame({"_proc": [proc] * len(ids), "id": ids, "text": texts},
                        schema={"_proc": pl.Int32, "id": pl.Int32, "text": pl.String})


def _by_id(strings: stream_strings.Lookup) -> list[list[str | None]]:
    """Each process's texts by id, as the lookup gives them."""
    out, at = [], 0
    for n in strings.lengths:
        out.append(strings.texts.gather(strings.at.slice(at, n)).to_list())
        at += n
    return out


def test_each_distinct_text_is_kept_once_and_every_id_finds_its_own(monkeypatch) -> None:
    def joined(*_args: object) -> None:
        raise AssertionError("ids in order, texts under their own hashes: found without a join")

    monkeypatch.setattr(stream_strings, "_joined", joined)
    chunks = [_strings(0, [0, 1, 2], ["a", "b", "c"]),  # (the map starts again: a, b again)
              pl.concat([_strings(0, [3, 4, 5], ["a", "d", "b"]),
                         _strings(2, [0, 1], ["b", "z"])]),  # (b in another process too)
              _strings(2, [2], ["a"])]
    strings = lookup(lambda: chunks, 3)
    assert strings.texts.n_unique() == strings.texts.len() == 5
    assert _by_id(strings) == [["a", "b", "c", "a", "d", "b"], [], ["b", "z", "a"]]
    assert lookup(lambda: [], 2).lengths == [0, 0]


@pytest.mark.parametrize("chunks,expected", [
    ([_strings(0, [0, 1, 3], ["a", "b", "d"])],  # (2 never written: a batch lost)
     [["a", "b", None, "d"], []]),
    ([_strings(0, [0, 1], ["a", "b"]), _strings(1, [0], ["c"]),
      _strings(0, [2, 2], ["x", "y"])],  # (met again after another; 2 twice: its first text)
     [["a", "b", "x"], ["c"]]),
    ([_strings(0, [0, 1, None, 2], ["a", None, "q", "c"])], [["a", None, "c"], []])],
    ids=["gap", "again", "nulls"])
def test_ids_out_of_order_are_found_by_a_join(chunks: list[pl.DataFrame],
                                              expected: list[list[str | None]]) -> None:
    strings = lookup(lambda: chunks, 2)
    assert _by_id(strings) == expected
    texts = strings.texts.drop_nulls()
    assert texts.n_unique() == texts.len()


def test_texts_that_share_a_hash_are_still_told_apart(monkeypatch) -> None:
    """Every text of one length hashed alike (a collision for each pair): matched by value
    instead."""
    hashed = stream_strings._hash
    monkeypatch.setattr(stream_strings, "_hash", lambda text, seed: text.str.len_bytes().cast(
        pl.UInt64) if seed == stream_strings.SEEDS[0] else hashed(text, seed))
    chunks = [_strings(0, [0, 1, 2], ["ab", "cd", "ab"]), _strings(1, [0, 1], ["ef", "cd"])]
    strings = lookup(lambda: chunks, 2)
    assert strings.texts.n_unique() == strings.texts.len() == 3
    assert _by_id(strings) == [["ab", "cd", "ab"], ["ef", "cd"]]


def test_hashes_that_share_their_high_bits_keep_each_text_once(monkeypatch) -> None:
    """Texts hashed to small numbers (their length: every hash's high bits alike) whose rows
    interleave: each text still kept once, each id finding its own."""
    monkeypatch.setattr(stream_strings, "_hash", lambda text, seed: text.str.len_bytes().cast(
        pl.UInt64))
    chunks = [_strings(0, [0, 1, 2, 3], ["a", "bb", "c", "bb"]),
              _strings(1, [0, 1, 2], ["ddd", "a", None])]
    strings = lookup(lambda: chunks, 2)
    assert strings.texts.to_list() == ["a", "bb", "ddd"]
    assert _by_id(strings) == [["a", "bb", "a", "bb"], ["ddd", "a", None]]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run whose collectors' maps of strings started again many times (a small bound), keys
    written again as the collectors did before they held them (as they still do past the
    bound on held keys), with many batches per stream (a short flush interval)."""
    folder = tmp_path_factory.mktemp("chunks") / "run"
    with pytest.MonkeyPatch.context() as m:
        m.setattr(synthetic_parts, "STRINGS_LIMIT", 97)
        m.setattr(synthetic_parts, "HELD_LIMIT", 0)
        m.setattr(synthetic_parts, "STREAM_EXECUTIONS", 0)  # (written as the collectors do)
        m.setattr(synthetic_parts, "CHUNK_ROWS", 50)
        write_run(folder, workers=3, threads=2, executions=600, segments=1200, seed=8,
                  flush_interval_s=0.05)
    return folder


def _loaded(run: Path, monkeypatch: pytest.MonkeyPatch, chunk_rows: int | None = None,
            part_rows: int | None = None) -> dict[str, object]:
    with monkeypatch.context() as m:
        if chunk_rows is not None:
            m.setattr(run_folder, "CHUNK_ROWS", chunk_rows)
        if part_rows is not None:
            m.setattr(spill, "KEYED_ROWS_PER_PART", part_rows)
        frames = run_folder.load(run)
    out: dict[str, object] = {}
    for name in frames.__dataclass_fields__:
        value = getattr(frames, name)
        if isinstance(value, pl.LazyFrame):
            value = value.collect()
        if name == "transitions_in_parts":
            value = [p.collect() for p in value]
        if name == "func_stats_by_process":  # (what a stage reads: each process's rows)
            out["spilled_by_process"] = bool(value)
            value = list(frames.func_stats_per_process())
        out[name] = value
    return out


def _assert_same(whole: dict[str, object], chunked: dict[str, object]) -> None:
    for name, value in whole.items():
        other = chunked[name]
        if name in ("lazy_parts", "spilled_by_process"):
            continue
        if isinstance(value, pl.DataFrame):
            assert isinstance(other, pl.DataFrame) and value.equals(other), name
        elif name == "transitions_in_parts":
            assert len(value) == len(other) and all(  # type: ignore[arg-type]
                a.equals(b) for a, b in zip(value, other, strict=True)), name  # type: ignore[call-overload]
        elif name == "func_stats_by_process":
            assert [p for p, _ in value] == [p for p, _ in other], name  # type: ignore[attr-defined]
            assert all(a.equals(b) for (_, a), (_, b) in zip(  # type: ignore[call-overload]
                value, other, strict=True)), name
        else:
            assert value == other, name


def test_the_strings_were_written_again_and_the_streams_in_many_batches(run: Path) -> None:
    scheduler = next(run.glob("procs/scheduler-*"))
    texts = pl.read_ipc_stream(scheduler / f"strings{STREAM_SUFFIX}")["text"]
    assert texts.n_unique() < texts.len() * 0.7  # (what the chunks' join has to find again)
    data = (scheduler / f"scheduler_transitions{STREAM_SUFFIX}").read_bytes()
    assert len(framing(data).batches) > 5


@pytest.mark.parametrize("chunk_rows", [40, 150, 1000])
def test_a_table_decoded_in_chunks_is_the_table_decoded_whole(run, monkeypatch,
                                                              chunk_rows) -> None:
    whole = _loaded(run, monkeypatch)
    chunked = _loaded(run, monkeypatch, chunk_rows=chunk_rows)
    assert whole["transitions"].height > 5 * 1000  # type: ignore[attr-defined]
    assert whole["func_stats"].height > 1000  # type: ignore[attr-defined] # (snapshots)
    # (a process's profile rows read alone, from its own spill files, when decoded in chunks)
    assert not whole["spilled_by_process"] and chunked["spilled_by_process"]
    assert len(whole["func_stats_by_process"]) == 3  # type: ignore[arg-type] # (the workers)
    _assert_same(whole, chunked)


def test_chunks_spilled_in_parts_by_key_are_the_parts_spilled_whole(run, monkeypatch) -> None:
    rows = _loaded(run, monkeypatch)["transitions"].height  # type: ignore[attr-defined]
    whole = _loaded(run, monkeypatch, part_rows=rows // 4)
    chunked = _loaded(run, monkeypatch, chunk_rows=200, part_rows=rows // 4)
    assert len(whole["transitions_in_parts"]) == 4  # type: ignore[arg-type]
    _assert_same(whole, chunked)


def test_damage_is_counted_alike_in_chunks(run, tmp_path, monkeypatch) -> None:
    """A torn scheduler stream, details of no transition, a batch that does not read and a
    mistyped worker stream: the same rejects, in the same order, whole or in chunks."""
    damaged = Path(shutil.copytree(run, tmp_path / "run"))
    scheduler = next(damaged.glob("procs/scheduler-*"))
    path = scheduler / f"scheduler_transitions{STREAM_SUFFIX}"
    data = bytearray(path.read_bytes())
    batches = framing(bytes(data)).batches
    start, end, _rows = batches[len(batches) // 2]
    data[start + (end - start) // 2:end] = b"\x00" * (end - start - (end - start) // 2)
    path.write_bytes(bytes(data[:batches[-1][1] - 7]))  # (a torn tail too)
    details = scheduler / f"scheduler_transition_details{STREAM_SUFFIX}"
    table = pl.read_ipc_stream(details)
    table.with_columns(pl.col("local_time_ns") + 1).head(5).vstack(table).write_ipc_stream(
        details)  # (5 details of no transition)
    worker = next(damaged.glob("procs/worker-*"))
    wt = worker / f"worker_transitions{STREAM_SUFFIX}"
    pl.read_ipc_stream(wt).with_columns(pl.col("key").cast(pl.String)).write_ipc_stream(wt)
    whole = _loaded(damaged, monkeypatch)
    chunked = _loaded(damaged, monkeypatch, chunk_rows=120)
    reasons = whole["rejects"]["reason"].to_list()  # type: ignore[index]
    assert any(r.startswith("torn tail") for r in reasons)
    assert any(r.startswith("details of scheduler_transitions") for r in reasons)
    assert any("expected string ids" in r for r in reasons)
    _assert_same(whole, chunked)


def test_a_batch_bigger_than_a_chunk_is_decoded_in_slices(run, monkeypatch) -> None:
    """A scheduler's first flush after a big graph is submitted can hold more transitions
    than a chunk: it is decoded a chunk's rows at a time too, to the same frames."""
    scheduler = next(run.glob("procs/scheduler-*"))
    batches = framing((scheduler / f"scheduler_transitions{STREAM_SUFFIX}").read_bytes()).batches
    chunk_rows = max(rows for *_, rows in batches) // 3
    decoded, heights = run_folder.run_streams.decoded_table, []

    def recorded(frame, name, *args):
        heights.append((name, frame.height))
        return decoded(frame, name, *args)

    whole = _loaded(run, monkeypatch)
    monkeypatch.setattr(run_folder.run_streams, "decoded_table", recorded)
    chunked = _loaded(run, monkeypatch, chunk_rows=chunk_rows)
    transitions = [h for name, h in heights if name == "scheduler_transitions"]
    assert len(transitions) > len(batches) and max(transitions) <= chunk_rows
    _assert_same(whole, chunked)
