"""Damaged copies of the sample run folder: every damage class ends in a named rejection (the
run still correlates) or a one-line error naming the file, never in "internal error".

Classes: manifest.json / proc.json / closed.json (and proc.json's closing record) that are not
JSON objects, lack fields or hold fields of the wrong type, or nest too deep; parts (Arrow IPC, and the Parquet of run format 1)
with overwritten bytes or a column of the wrong type. Each class is applied to every file it fits in the run."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.ipc  # noqa: F401 (pa.ipc)
import pyarrow.parquet as pq
import pytest

from collectors.sink import arrow_part, columns_of
from correlate.cli import main
from correlate.schema import TABLES, Column
from testing.raw_parts import to_current_parts

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "run-v1"
NOT_OBJECTS = {"list": "[1, 2]", "string": '"run"', "number": "3", "null": "null",
               "deep": "[" * 100_000 + "]" * 100_000, "garbage": "{\"a\": "}


def _correlate(run: Path, out: Path, capsys) -> tuple[int, str]:
    code = main([str(run), "-o", str(out), "--no-reports"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _check(run: Path, tmp: Path, capsys, damaged: Path, *, detectable: bool = True) -> None:
    """``detectable``: False for damage that nothing in the file shows (``test_parts_with_
    overwritten_bytes``): it must not fail, and is named when it is found."""
    code, text = _correlate(run, tmp / "out", capsys)
    assert "internal error" not in text, text[-2000:]
    assert code in (0, 1), text[-2000:]
    if code == 1:  # an error: one line naming the damaged file
        errors = [line for line in text.splitlines() if line.startswith("correlate:")]
        assert len(errors) == 1 and str(damaged) in errors[0], text[-2000:]
    elif detectable:  # correlated: the damage is a rejection or warning that names the file
        summary = json.loads((tmp / "out" / "summary.json").read_text())
        named = [r["file"] for r in summary["rejects"]] + summary["warnings"]
        assert any(str(damaged) in (n or "") or damaged.parent.name in (n or "")
                   for n in named), summary["rejects"]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SAMPLE, tmp_path / "run"))


@pytest.mark.parametrize("kind", sorted(NOT_OBJECTS))
def test_a_manifest_that_is_not_an_object_is_one_line_naming_it(run, tmp_path, capsys, kind):
    (run / "manifest.json").write_text(NOT_OBJECTS[kind])
    _check(run, tmp_path, capsys, run / "manifest.json")


JSON_DAMAGE = {**NOT_OBJECTS, "empty object": "{}"}


@pytest.mark.parametrize("name", ["proc.json", "closed.json"])
@pytest.mark.parametrize("kind", sorted(JSON_DAMAGE))
def test_a_process_file_that_is_not_a_usable_object_is_rejected_or_named(
        run, tmp_path, capsys, name, kind):
    for proc in sorted((run / "procs").iterdir()):
        target = proc / name
        saved = target.read_text()
        target.write_text(JSON_DAMAGE[kind])
        _check(run, tmp_path, capsys, target)
        target.write_text(saved)


@pytest.mark.parametrize("kind", sorted(JSON_DAMAGE))
def test_a_closing_record_in_proc_json_that_is_not_usable_is_named(run, tmp_path, capsys, kind):
    """The collectors' layout: the closing record is proc.json's ``closed`` field."""
    for proc in sorted((run / "procs").iterdir()):
        target = proc / "proc.json"
        text = json.dumps(json.loads(target.read_text()))
        (proc / "closed.json").unlink()
        target.write_text(text[:-1] + ', "closed": ' + JSON_DAMAGE[kind] + "}")
        _check(run, tmp_path, capsys, target)
        target.write_text(text)


@pytest.mark.parametrize("field,value", [("host", None), ("pid", None), ("role", None),
                                         ("pid", {"a": 1}), ("pid", "12x"), ("host", 7),
                                         ("role", "astronaut"), ("main_thread_id", "x"),
                                         ("nthreads", [1])])
def test_proc_json_fields_of_the_wrong_type_or_missing(run, tmp_path, capsys, field, value):
    for proc in sorted((run / "procs").iterdir()):
        target = proc / "proc.json"
        saved = target.read_text()
        info = json.loads(saved)
        if value is None:
            info.pop(field, None)
        else:
            info[field] = value
        target.write_text(json.dumps(info))
        _check(run, tmp_path, capsys, target)
        target.write_text(saved)


def _parts(run: Path) -> list[Path]:
    return sorted(run.glob("procs/*/*/*.parquet"))


def _decoded(data: bytes, kind: str) -> pa.Table | None:
    """What an independent reader (pyarrow) decodes from a part's bytes (None: nothing)."""
    try:
        if kind == "parquet":
            return pq.read_table(pa.BufferReader(data))
        return pa.ipc.open_file(pa.BufferReader(data)).read_all()
    except (OSError, pa.ArrowException):
        return None


def _within_own_statistics(data: bytes, table: pa.Table) -> bool:
    """Whether every column of a Parquet part decodes within the min, max and null count its
    footer records, and the part has no page checksums: then nothing in the file shows the
    damage."""
    import pyarrow.compute as pc

    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    if meta.num_row_groups != 1:
        return False
    group = meta.row_group(0)
    for i in range(group.num_columns):
        stats = group.column(i).statistics
        values = table.column(group.column(i).path_in_schema)
        if stats is None:
            continue
        if stats.has_null_count and values.null_count != stats.null_count:
            return False
        if stats.has_min_max and values.null_count < len(values):
            found = pc.min_max(values)
            if found["min"].as_py() < stats.min or found["max"].as_py() > stats.max:
                return False
    try:
        pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
    except (OSError, pa.ArrowException):
        return False
    return True


@pytest.mark.parametrize("kind", ["parquet", "arrow"])
def test_parts_with_overwritten_bytes(run, tmp_path, capsys, kind):
    """48 bytes overwritten at three places of every part. Each case is judged by what an
    independent reader (pyarrow) decodes from the damaged bytes: nothing, or other rows than
    the part holds, must end in the one-line error or a rejection naming the part. Only two
    outcomes may pass unnamed: the same rows as before (the bytes hit were none a reader uses)
    and, in run format 1's Parquet, other values that all lie within the statistics the
    part's own footer records (no page checksums: nothing in the file shows it)."""
    if kind == "arrow":  # the collectors' current parts
        to_current_parts(run)
    rng = random.Random(30)
    for part in sorted(run.glob(f"procs/*/*/*.{kind}")):
        saved = part.read_bytes()
        before = _decoded(saved, kind)
        for where in (0.1, 0.5, 0.9):
            data = bytearray(saved)
            at = int(len(data) * where)
            data[at:at + 48] = bytes(rng.randrange(256) for _ in range(48))
            part.write_bytes(bytes(data))
            after = _decoded(bytes(data), kind)
            harmless = after is not None and after.equals(before)
            unseen = (not harmless and after is not None and kind == "parquet"
                      and _within_own_statistics(bytes(data), after))
            _check(run, tmp_path, capsys, part, detectable=not (harmless or unseen))
        part.write_bytes(saved)


def _retyped(table: pa.Table, column: str) -> pa.Table:
    """``column`` replaced by floats (or, for a float column, by strings)."""
    i = table.schema.get_field_index(column)
    kind = pa.string() if pa.types.is_floating(table.schema.field(i).type) else pa.float64()
    values = [None if k % 3 == 0 else (f"x{k}" if kind == pa.string() else k + 0.5)
              for k in range(table.num_rows)]
    return table.set_column(i, column, pa.array(values, type=kind))


def test_parquet_parts_with_a_column_of_the_wrong_type(run, tmp_path, capsys):
    for part in _parts(run):
        saved = part.read_bytes()
        table = pq.read_table(part)
        declared = TABLES[part.parent.name].names  # others (dropped since) are not read
        for column in (c for c in table.column_names if c in declared):
            pq.write_table(_retyped(table, column), part)
            _check(run, tmp_path, capsys, part)
        part.write_bytes(saved)


@pytest.fixture
def current_run(run: Path) -> Path:
    """The sample with its parts rewritten as the collectors write them now (Arrow IPC)."""
    to_current_parts(run)
    return run


def test_arrow_parts_with_text_in_a_numeric_column(current_run, tmp_path, capsys):
    for part in sorted(current_run.glob("procs/*/*/*.arrow")):
        saved = part.read_bytes()
        table = TABLES[part.parent.name]
        rows = pl.read_ipc(part).rows()
        for i, column in enumerate(table.columns):
            if column.dtype not in ("Int64", "UInt64", "Float64"):
                continue
            columns = [*table.columns[:i], Column(column.name, "String", ""),
                       *table.columns[i + 1:]]
            bad = [(*r[:i], f"x{k}", *r[i + 1:]) for k, r in enumerate(rows)]
            part.write_bytes(arrow_part(columns, columns_of(bad, len(columns))))
            _check(current_run, tmp_path, capsys, part)
        part.write_bytes(saved)
