"""A table decoded from run format 3's string ids holds its texts in buffers of its own: a
column gathered from the lookup of every process's texts would keep all of them alive (each
task's key, each stimulus id) for as long as it lives, though it holds a few."""

from __future__ import annotations

import polars as pl

from correlate.sources.run_streams import decode
from correlate.sources.stream_strings import Lookup

TEXTS = [f"/scratch/{'x' * 200}/{i}" for i in range(5000)]  # (about 1 MB of texts)


def _data_bytes(column: pl.Series) -> int:
    """The bytes of the buffers that hold ``column``'s texts."""
    arrow = column.to_arrow(compat_level=pl.CompatLevel.newest())
    return sum(b.size for b in arrow.buffers()[2:] if b is not None)


def test_a_small_decoded_table_holds_only_its_own_texts():
    lookup = Lookup(pl.Series(TEXTS), [len(TEXTS)], pl.Series(range(len(TEXTS)),
                                                                dtype=pl.UInt32))
    markers = pl.DataFrame({"_proc": [0, 0, 0], "path": [7, None, 7], "offset": [0, 1, 2]},
                           schema={"_proc": pl.Int64, "path": pl.UInt32, "offset": pl.Int64})
    out, lost = decode(markers, "worker_clock_markers", lookup)
    assert out.get_column("path").to_list() == [TEXTS[7], None, TEXTS[7]]
    assert lost == 0
    assert _data_bytes(out.get_column("path")) < 4 * len(TEXTS[7])
