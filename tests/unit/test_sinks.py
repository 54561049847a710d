"""Output sinks: a table handed over in parts is written whole, in the parts' order, and both
sinks give the same table."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from correlate.schema import TABLES, conform
from correlate.sinks import MemorySink, ParquetSink


def _parts() -> list[pl.DataFrame]:
    return [conform(pl.DataFrame({"execution_id": [3 * i + j for j in range(3)],
                                  "key": [f"k{i}-{j}" for j in range(3)],
                                  "path": ["/a", "/b", "/c"], "op": ["read"] * 3,
                                  "attribution": ["exact-thread"] * 3,
                                  "bytes": [1.0, 2.0, 3.0], "ops": [1.0] * 3,
                                  "io_time_s": [0.5] * 3}), TABLES["task_files"])
            for i in (2, 0, 1)]


def test_parts_are_written_as_one_table_in_order(tmp_path: Path) -> None:
    produced: list[int] = []

    def parts():
        for i, part in enumerate(_parts()):
            produced.append(i)
            yield part

    sink = ParquetSink(tmp_path)
    sink.write_parts("task_files", parts())
    memory = MemorySink()
    memory.write_parts("task_files", iter(_parts()))
    written = pl.read_parquet(tmp_path / "task_files.parquet")
    assert produced == [0, 1, 2]
    assert written["execution_id"].to_list() == [6, 7, 8, 0, 1, 2, 3, 4, 5]
    assert written.equals(memory.tables["task_files"])
    assert sink.paths == [tmp_path / "task_files.parquet"]


def test_no_parts_is_an_empty_table_with_the_schema(tmp_path: Path) -> None:
    sink = ParquetSink(tmp_path)
    sink.write_parts("task_files", iter([]))
    written = pl.read_parquet(tmp_path / "task_files.parquet")
    assert written.height == 0
    assert written.schema == TABLES["task_files"].polars_schema()


def test_a_reader_never_sees_a_half_written_table(tmp_path: Path) -> None:
    import threading

    df = pl.DataFrame({"execution_id": range(300_000), "key": [f"k{i}" for i in range(300_000)]})
    sink = ParquetSink(tmp_path)
    sink.write("t", df)
    stop, reads, errors = threading.Event(), [0], []

    def read() -> None:
        while not stop.is_set():
            try:
                assert pl.read_parquet(tmp_path / "t.parquet").height == df.height
                reads[0] += 1
            except Exception as err:  # noqa: BLE001 - counted
                errors.append(err)

    reader = threading.Thread(target=read)
    reader.start()
    for _ in range(15):
        sink.write("t", df)
    stop.set()
    reader.join()
    assert reads[0] > 0 and errors == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]


def test_a_table_whose_parts_fail_leaves_the_previous_one_and_no_temp_file(tmp_path: Path
                                                                           ) -> None:
    sink = ParquetSink(tmp_path)
    sink.write_parts("task_files", iter(_parts()))

    def failing():
        yield _parts()[0]
        raise RuntimeError("the engine failed")

    with pytest.raises(RuntimeError, match="the engine failed"):
        sink.write_parts("task_files", failing())
    assert pl.read_parquet(tmp_path / "task_files.parquet").height == 9
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task_files.parquet"]


def test_a_table_that_cannot_be_put_in_place_raises_and_is_not_listed(tmp_path: Path) -> None:
    # GIVEN an output folder where the table's name is taken by a directory
    sink = ParquetSink(tmp_path)
    (tmp_path / "task_files.parquet").mkdir()
    # WHEN the table is written, THEN the error reaches the caller (cli.py's one catch site):
    # the sink neither swallows it nor lists a table it did not write, and leaves no temp file
    with pytest.raises(IsADirectoryError):
        sink.write("task_files", pl.concat(_parts()))
    assert sink.paths == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task_files.parquet"]


def test_a_written_table_scans_back_from_the_output_folder(tmp_path: Path) -> None:
    # GIVEN an output folder two levels below one that exists (`correlate RUN -o new/out`)
    out = tmp_path / "new" / "out"
    sink = ParquetSink(out)
    sink.write_parts("task_files", iter(_parts()))
    # THEN the table is read back lazily, selected and filtered, from its own file
    got = sink.scan("task_files").filter(pl.col("bytes") > 1).select("key").collect()
    assert got["key"].to_list() == ["k2-1", "k2-2", "k0-1", "k0-2", "k1-1", "k1-2"]
    assert sink.paths == [out / "task_files.parquet"]


def test_a_kept_table_is_written_in_parts_as_put_writes_it_and_kept_with_codes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``put_kept``: the file holds what ``put`` writes (texts, output order), written a
    part at a time; the table kept is ``put``'s with the named columns as Categorical codes,
    in output order and one chunk, whether they came as codes or as texts; ``read_back``
    reads the file back as that table."""
    from correlate import sinks
    from correlate.frames.texts import as_codes

    monkeypatch.setattr(sinks, "PART_ROWS", 2)
    n = 7
    made = pl.concat([pl.DataFrame({  # two chunks, out of order
        "execution_id": [n - 1 - i for i in rows], "key": [f"k{i % 3}" for i in rows],
        "prefix": [f"p{i % 2}" for i in rows], "status": ["ok"] * len(rows),
        "cpu_s": [0.5 * i for i in rows]}) for rows in (range(4), range(4, n))], rechunk=False)
    made = made.with_columns(pl.col("key", "prefix").cast(pl.Categorical))
    codes = ("key", "prefix", "status", "group")
    sink = ParquetSink(tmp_path)
    kept = sinks.put_kept(sink, "tasks", made, codes)
    memory = MemorySink()
    expected = sinks.put(memory, "tasks", made)
    written = pl.read_parquet(tmp_path / "tasks.parquet")
    assert written.equals(memory.tables["tasks"])
    assert written["execution_id"].to_list() == list(range(n))
    assert kept.equals(as_codes(expected, codes))
    assert kept.schema == as_codes(expected, codes).schema
    assert all(kept.schema[c] == pl.Categorical for c in ("key", "prefix", "status"))
    assert kept.n_chunks("all") == [1] * kept.width
    # read back from the file (its parts' chunks): the table kept, one chunk per column
    back = sinks.read_back(sink, "tasks", codes)
    assert back.equals(kept) and back.schema == kept.schema
    assert back.n_chunks("all") == [1] * back.width


def test_parts_written_elsewhere_become_a_folder_of_parts_read_as_one_table(tmp_path: Path
                                                                             ) -> None:
    # GIVEN an output folder holding an earlier run's table as one file
    sink = ParquetSink(tmp_path)
    sink.write_parts("task_files", iter(_parts()[:1]))
    # WHEN parts are written by the part writer (as a cluster's workers do) and handed over in
    # an order of their own
    writer = sink.part_writer("task_files")
    assert writer is not None and MemorySink().part_writer("task_files") is None
    written = [writer(part) for part in _parts()]
    sink.write_written("task_files", iter(written[::-1]))
    # THEN the table is a folder of one file per part, in the order handed over, read as one
    # table by polars and pyarrow, and nothing else is left beside it
    folder = tmp_path / "task_files.parquet"
    assert sorted(p.name for p in folder.iterdir()) == [f"part-0000{i}.parquet" for i in range(3)]
    back = pl.read_parquet(folder)
    assert back.equals(pl.concat(_parts()[::-1]))
    assert [w.height for w in written] == [3, 3, 3]
    import pyarrow.parquet as pq

    assert pq.read_table(folder).num_rows == 9
    assert sink.scan("task_files").select(pl.len()).collect().item() == 9
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task_files.parquet"]
    # AND written again, it replaces the folder; with no parts it is an empty table
    sink.write_written("task_files", iter([sink.part_writer("task_files")(_parts()[0])]))
    assert pl.read_parquet(folder).equals(_parts()[0])
    sink.part_writer("task_files")
    sink.write_written("task_files", iter([]))
    empty = pl.read_parquet(folder)
    assert empty.height == 0 and empty.schema == TABLES["task_files"].polars_schema()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task_files.parquet"]


def test_a_part_this_process_cannot_see_is_one_clear_error(tmp_path: Path) -> None:
    """A worker that wrote its part where this process does not see it (an output folder not
    on a file system the cluster shares): the error names the part, and the earlier table
    stays."""
    from correlate.errors import CorrelateError
    from correlate.sinks import Written

    sink = ParquetSink(tmp_path)
    sink.write_parts("task_files", iter(_parts()))
    writer = sink.part_writer("task_files")
    assert writer is not None
    lost = Written(str(tmp_path / "elsewhere" / "p.parquet"), 3)
    with pytest.raises(CorrelateError, match="file system the cluster's workers share") as err:
        sink.write_written("task_files", iter([writer(_parts()[0]), lost]))
    assert err.value.path == lost.path
    assert pl.read_parquet(tmp_path / "task_files.parquet").height == 9
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task_files.parquet"]


def _gone_pid() -> str:
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_parts_a_killed_run_left_on_this_host_are_removed_others_kept(tmp_path: Path) -> None:
    """A run killed while its partitions wrote leaves their folder (hidden, beside the
    tables): the next run's writer removes those of this host whose process is gone, and
    leaves a live process's and another host's."""
    import os
    import socket

    gone, host = _gone_pid(), socket.gethostname()
    names = [f".segments.parquet.{host}-{gone}-parts", f".segments.parquet.{host}-1-parts",
             f".segments.parquet.other-host-{gone}-parts"]
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.parquet").write_bytes(b"part")
    writer = ParquetSink(tmp_path).part_writer("segments")
    assert writer is not None
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([*names[1:], f".segments.parquet.{host}-{os.getpid()}-parts"])


@pytest.mark.parametrize("left", ["{host}-{pid}.tmp", "{host}-{pid}.old", "{host}-{pid}-parts"])
def test_what_a_killed_run_left_of_a_table_is_removed_when_it_is_written_again(
        tmp_path: Path, left: str) -> None:
    """A table half written (``.tmp``) or an earlier one moved aside (``.old``) by a run killed
    then: removed by the next run's write of that table, whether whole or in parts; another
    table's, a live process's and another host's are left."""
    import socket

    gone, host = _gone_pid(), socket.gethostname()
    mine = tmp_path / f".task_files.parquet.{left.format(host=host, pid=gone)}"
    kept = [tmp_path / f".task_files.parquet.{left.format(host=host, pid=1)}",
            tmp_path / f".tasks.parquet.{left.format(host=host, pid=gone)}",
            tmp_path / f".task_files.parquet.{left.format(host='other-host', pid=gone)}"]
    for path in (mine, *kept):
        if path.name.endswith("-parts"):
            path.mkdir()
            (path / "x.parquet").write_bytes(b"part")
        else:
            path.write_bytes(b"half a table")
    ParquetSink(tmp_path).write("task_files", pl.concat(_parts()))
    assert not mine.exists() and all(p.exists() for p in kept)
    assert pl.read_parquet(tmp_path / "task_files.parquet").height == 9
