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


def _check_together(run: Path, tmp: Path, capsys,
                    cases: list[tuple[Path, bytes, bool]]) -> None:
    """Each case (a file, its damaged bytes, whether the damage is detectable) judged as
    ``_check`` judges it alone, with one ``correlate`` for many: all damaged at once; a one-line
    error names one of them, which is then restored and the rest correlated again; in a run
    that correlates, a detectable case whose file no rejection or warning names is checked alone
    (another file's damage, a whole process rejected, may have hidden it)."""
    saved = {path: path.read_bytes() for path, _, _ in cases}
    pending = list(cases)
    for path, data, _ in pending:
        path.write_bytes(data)
    while True:
        code, text = _correlate(run, tmp / "out", capsys)
        assert "internal error" not in text, text[-2000:]
        assert code in (0, 1), text[-2000:]
        if code == 0:
            break
        errors = [line for line in text.splitlines() if line.startswith("correlate:")]
        assert len(errors) == 1, text[-2000:]
        hit = max((c for c in pending if str(c[0]) in errors[0]),
                  key=lambda c: len(str(c[0])), default=None)
        assert hit is not None, errors[0]
        hit[0].write_bytes(saved[hit[0]])
        pending.remove(hit)
    summary = json.loads((tmp / "out" / "summary.json").read_text())
    named = [r["file"] or "" for r in summary["rejects"]] + summary["warnings"]
    alone = [c for c in pending if c[2] and not any(str(c[0]) in n for n in named)]
    for path, data in saved.items():
        path.write_bytes(data)
    for path, data, detectable in alone:
        path.write_bytes(data)
        _check(run, tmp, capsys, path, detectable=detectable)
        path.write_bytes(saved[path])


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
    _check_together(run, tmp_path, capsys, [(proc / name, JSON_DAMAGE[kind].encode(), True)
                                            for proc in sorted((run / "procs").iterdir())])


@pytest.mark.parametrize("kind", sorted(JSON_DAMAGE))
def test_a_closing_record_in_proc_json_that_is_not_usable_is_named(run, tmp_path, capsys, kind):
    """The collectors' layout: the closing record is proc.json's ``closed`` field."""
    cases = []
    for proc in sorted((run / "procs").iterdir()):
        text = json.dumps(json.loads((proc / "proc.json").read_text()))
        (proc / "closed.json").unlink()
        (proc / "proc.json").write_text(text)
        cases.append((proc / "proc.json",
                      (text[:-1] + ', "closed": ' + JSON_DAMAGE[kind] + "}").encode(), True))
    _check_together(run, tmp_path, capsys, cases)


@pytest.mark.parametrize("field,value", [("host", None), ("pid", None), ("role", None),
                                         ("pid", {"a": 1}), ("pid", "12x"), ("host", 7),
                                         ("role", "astronaut"), ("main_thread_id", "x"),
                                         ("nthreads", [1])])
def test_proc_json_fields_of_the_wrong_type_or_missing(run, tmp_path, capsys, field, value):
    cases = []
    for proc in sorted((run / "procs").iterdir()):
        info = json.loads((proc / "proc.json").read_text())
        if value is None:
            info.pop(field, None)
        else:
            info[field] = value
        cases.append((proc / "proc.json", json.dumps(info).encode(), True))
    _check_together(run, tmp_path, capsys, cases)


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
    rounds: dict[float, list[tuple[Path, bytes, bool]]] = {}
    for part in sorted(run.glob(f"procs/*/*/*.{kind}")):
        saved = part.read_bytes()
        before = _decoded(saved, kind)
        for where in (0.1, 0.5, 0.9):
            data = bytearray(saved)
            at = int(len(data) * where)
            data[at:at + 48] = bytes(rng.randrange(256) for _ in range(48))
            after = _decoded(bytes(data), kind)
            harmless = after is not None and after.equals(before)
            unseen = (not harmless and after is not None and kind == "parquet"
                      and _within_own_statistics(bytes(data), after))
            rounds.setdefault(where, []).append((part, bytes(data), not (harmless or unseen)))
    for cases in rounds.values():
        _check_together(run, tmp_path, capsys, cases)


def _retyped(table: pa.Table, column: str) -> pa.Table:
    """``column`` replaced by floats (or, for a float column, by strings)."""
    i = table.schema.get_field_index(column)
    kind = pa.string() if pa.types.is_floating(table.schema.field(i).type) else pa.float64()
    values = [None if k % 3 == 0 else (f"x{k}" if kind == pa.string() else k + 0.5)
              for k in range(table.num_rows)]
    return table.set_column(i, column, pa.array(values, type=kind))


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def test_parquet_parts_with_a_column_of_the_wrong_type(run, tmp_path, capsys):
    """Round k retypes the k-th column (of those still read) of every part at once."""
    rounds: dict[int, list[tuple[Path, bytes, bool]]] = {}
    for part in _parts(run):
        table = pq.read_table(part)
        declared = TABLES[part.parent.name].names  # others (dropped since) are not read
        for k, column in enumerate(c for c in table.column_names if c in declared):
            rounds.setdefault(k, []).append((part, _parquet_bytes(_retyped(table, column)), True))
    for cases in rounds.values():
        _check_together(run, tmp_path, capsys, cases)


@pytest.fixture
def current_run(run: Path) -> Path:
    """The sample with its parts rewritten as the collectors write them now (Arrow IPC)."""
    to_current_parts(run)
    return run


def test_arrow_parts_with_text_in_a_numeric_column(current_run, tmp_path, capsys):
    """Round k puts text in the k-th numeric column of every part at once."""
    rounds: dict[int, list[tuple[Path, bytes, bool]]] = {}
    for part in sorted(current_run.glob("procs/*/*/*.arrow")):
        table = TABLES[part.parent.name]
        rows = pl.read_ipc(part).rows()
        numeric = [i for i, c in enumerate(table.columns)
                   if c.dtype in ("Int64", "UInt64", "Float64")]
        for k, i in enumerate(numeric):
            columns = [*table.columns[:i], Column(table.columns[i].name, "String", ""),
                       *table.columns[i + 1:]]
            bad = [(*r[:i], f"x{n}", *r[i + 1:]) for n, r in enumerate(rows)]
            data = arrow_part(columns, columns_of(bad, len(columns)))
            rounds.setdefault(k, []).append((part, data, True))
    for cases in rounds.values():
        _check_together(current_run, tmp_path, capsys, cases)
