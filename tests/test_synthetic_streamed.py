"""The synthetic generator's streamed write (``PartWriter(chunk_rows=...)``, used for a process
whose tables cover more than ``STREAM_EXECUTIONS`` executions) gives the same tables, flush by
flush, as the write that builds every batch first: here at a small size with tiny chunks and a
tiny strings bound, so every path of the streamed write is taken."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from correlate.schema import TABLES
from correlate.schema.run import STREAM_SUFFIX, STRINGS
from correlate.sources.run_streams import framing, read_stream
from testing.raw_parts import read_table
from testing.synthetic import parts, write_run
from testing.synthetic.job import Job
from testing.synthetic.scheduler_tables import _transition_rows


def _tables(run: Path) -> dict[tuple[str, str], list]:
    out = {}
    for proc in sorted((run / "procs").iterdir()):
        for name, table in TABLES.items():
            if name == STRINGS.name:  # (their order and repeats differ: the point)
                continue
            frames = [f for _p, f in read_table(proc, table)]
            if frames:
                out[(proc.name, name)] = frames
    return out


def _batches(run: Path, name: str | None = None) -> dict[str, list[int]]:
    """Rows per record batch of every stream (``name``: only that table's)."""
    return {str(f.relative_to(run)): [rows for _a, _b, rows in framing(f.read_bytes()).batches]
            for f in sorted(run.glob(f"procs/*/{name or '*'}{STREAM_SUFFIX}"))
            if name or f.name != f"{STRINGS.name}{STREAM_SUFFIX}"}


def test_streamed_tables_equal_the_unstreamed(tmp_path, monkeypatch):
    kw = dict(workers=3, threads=2, executions=900, segments=2000, seed=4,
              flush_interval_s=0.05)
    run = tmp_path / "run"  # (its path is in the markers' paths: both written there)
    write_run(run, **kw)
    whole = run.rename(tmp_path / "whole")
    monkeypatch.setattr(parts, "STREAM_EXECUTIONS", 0)
    monkeypatch.setattr(parts, "CHUNK_ROWS", 97)
    monkeypatch.setattr(parts, "STRINGS_LIMIT", 300)
    write_run(run, **kw)
    a, b = _tables(whole), _tables(run)
    assert a.keys() == b.keys() and len(a) > 20
    for k in a:
        assert len(a[k]) == len(b[k]), k
        for x, y in zip(a[k], b[k], strict=True):
            assert x.equals(y), k
    # one batch per flush in both; the streamed strings come in batches, texts again past
    # the bound
    assert _batches(whole) == _batches(run)
    for counts in _batches(run, STRINGS.name).values():
        assert len(counts) > 1
    sched = _batches(run, STRINGS.name)[next(k for k in _batches(run, STRINGS.name)
                                              if "scheduler-" in k)]
    assert sum(sched) > sum(next(v for k, v in _batches(whole, STRINGS.name).items()
                                 if "scheduler-" in k))
    # but a task's key once, as the scheduler plugin holds it (``collectors.sink.Strings``)
    proc = next((run / "procs").glob("scheduler-*"))
    keys = {k for f in b[(proc.name, "scheduler_transitions")] for k in f["key"].to_list()}
    texts = Counter(read_stream(proc / f"{STRINGS.name}{STREAM_SUFFIX}").frame["text"])
    assert len(keys) >= 900 and {k: texts[k] for k in keys} == dict.fromkeys(keys, 1)


def test_transition_rows_flush_by_flush_are_the_whole_table_cut(tmp_path):
    job = Job(tmp_path, workers=3, threads=2, executions=500, segments=5000,
              prefixes=("a", "b", "c"), hosts=1, seed=1, profile="yappi",
              flush_interval_s=0.02, darshan_offset_ns=0, files_per_prefix=None,
              outside_share=0.001)
    job.layout()
    whole = _transition_rows(job)
    flushes = job.flushes(job.sched_setup, job.sched_close)
    bounds = [np.iinfo(np.int64).min, *flushes.tolist(), np.iinfo(np.int64).max]
    cut = [_transition_rows(job, lo, hi) for lo, hi in zip(bounds, bounds[1:], strict=False)]
    assert sum(len(c[0]) > 0 for c in cut) > 3
    for w, c in zip(whole, zip(*cut, strict=True), strict=True):
        assert np.array_equal(w, np.concatenate(c))
