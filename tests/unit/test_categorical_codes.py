"""Categorical codes kept apart from their column (a spilled frame's, the strings' lookup)
still mean their texts when no Categorical column is alive in between: polars forgets every
category then, and numbers new texts from 0 again. Each case runs in a fresh interpreter, where
nothing else holds a Categorical column."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> None:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_a_spilled_frame_takes_back_its_texts():
    _run("""
        import gc
        import polars as pl
        from correlate.frames import spill

        df = pl.DataFrame({"key": ["b-1", "a-2", "b-1", None], "n": [1, 2, 3, 4]})
        want = df.clone()
        kept = spill.spilled_coded(df.with_columns(pl.col("key").cast(pl.Categorical)))
        del df
        gc.collect()
        others = pl.Series(["zz", "yy", "xx"]).cast(pl.Categorical)  # (codes 0, 1, 2 if new)
        got = kept.take().with_columns(pl.col("key").cast(pl.String))
        assert got.equals(want), got
        print("ok")
        """)


def test_the_lookup_gives_each_text_its_code_across_calls():
    _run("""
        import gc
        import polars as pl
        from correlate.sources.stream_strings import Lookup

        texts = pl.Series(["k-0", "k-1", "k-2"])
        lookup = Lookup(texts, [3], pl.Series([0, 1, 2], dtype=pl.UInt32))
        at = pl.Series("key", [2, 0, None, 2], dtype=pl.UInt32)
        assert lookup.categorical(at).to_list() == ["k-2", "k-0", None, "k-2"]
        gc.collect()  # (the column given is gone)
        others = pl.Series(["zz", "yy", "xx"]).cast(pl.Categorical)
        again = lookup.categorical(pl.Series("key", [1, 2, 0], dtype=pl.UInt32))
        assert again.cast(pl.String).to_list() == ["k-1", "k-2", "k-0"], again
        print("ok")
        """)


def test_a_spilled_scan_reads_back_its_texts():
    _run("""
        import gc
        import polars as pl
        from correlate.frames import spill

        df = pl.DataFrame({"key": ["b-1", "a-2", "b-1", None], "n": [1, 2, 3, 4]})
        want = df.clone()
        scans = spill.spilled_parts(df.with_columns(pl.col("key").cast(pl.Categorical)), 2)
        gc.collect()
        others = pl.Series(["zz", "yy", "xx"]).cast(pl.Categorical)  # (codes 0, 1, 2 if new)
        got = pl.concat(scans).collect()
        assert got.schema["key"] == pl.Categorical
        got = got.with_columns(pl.col("key").cast(pl.String))
        assert sorted(got.rows(), key=str) == sorted(want.rows(), key=str), got
        print("ok")
        """)
