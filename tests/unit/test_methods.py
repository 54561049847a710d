"""The one table of attribution methods: the lists the code uses follow from its rows, and the
per-process method is read from it (``driver._process_method``), on literal frames."""

from __future__ import annotations

import polars as pl
import pytest

from correlate.attribution.driver import _process_method
from correlate.schema import methods
from correlate.schema.outputs import ATTRIBUTION


def test_the_attribution_enum_lists_the_table_most_exact_first():
    assert ATTRIBUTION == "Enum:" + ",".join(m.label for m in methods.METHODS)
    assert [methods.RANK[m.label] for m in methods.METHODS] == list(range(len(methods.METHODS)))
    assert len(set(methods.LABELS)) == len(methods.LABELS)


def test_a_process_method_is_a_row_that_stands_for_itself():
    for label, process in methods.PROCESS.items():
        assert methods.PROCESS[process] == process, (label, process)
        assert methods.RANK[process] <= methods.RANK[label]


def test_the_lists_follow_the_rows():
    rows = {m.label: m for m in methods.METHODS}
    assert all(rows[m].destination == "execution" for m in methods.WHOLE)
    assert all(rows[m].exactness == "thread" for m in methods.THREAD_EXACT)
    assert set(methods.BY_THREAD) <= set(methods.THREAD_EXACT) & set(methods.PROCESS.values())
    assert all(rows[m].against_record for m in methods.AGAINST_RECORD)


def test_every_step_of_the_table_has_its_pass_and_they_run_in_its_order():
    from correlate.attribution import counters, helpers, p2p, passes, stdio, threads

    assert passes.unregistered() == []
    assert passes.segment_passes() == [helpers.helper_pass, threads.inferred_pass,
                                       p2p.shard_pass]
    assert passes.untraced_passes() == [stdio.stdio_pass, counters.counter_pass]


def test_a_pass_registers_only_under_a_row_with_a_step():
    from correlate.attribution import passes

    with pytest.raises(ValueError, match="no step"):
        passes.segment_pass("window-split")


def test_each_process_gets_the_best_method_its_segments_show():
    seg = pl.DataFrame({
        "host": ["a", "a", "a", "a", "a", "b", "b"],
        "pid": [1, 1, 2, 2, 3, 4, 4],
        # a helper's label shows the threads were recorded; p2p-shuffle and none show nothing
        "attribution": ["window-split", "helper-split", "window-split", "inferred-thread",
                        "p2p-shuffle", "none", "window-split"]},
        schema_overrides={"attribution": methods_dtype()})
    got = {(h, p): m for h, p, m in _process_method(seg).iter_rows()}
    assert got == {("a", 1): "exact-thread", ("a", 2): "inferred-thread", ("a", 3): "none",
                   ("b", 4): "window-split"}


def methods_dtype() -> pl.DataType:
    return pl.Enum(list(methods.LABELS))
