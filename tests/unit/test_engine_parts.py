"""Big tables written in parts: sorted as a whole, each part conformed to the output schema."""

from __future__ import annotations


def test_events_in_parts_sort_categorical_states_as_strings(monkeypatch):
    import random

    import polars as pl

    from correlate import sinks
    from correlate.schema import TABLES, conform
    from correlate.sinks import MemorySink

    rng = random.Random(5)
    n = 3000
    # first seen in reverse lexical order: a Categorical's codes sort the other way round
    states = ["waiting", "released", "processing", "memory"]
    strings = pl.DataFrame({
        "time_ns": [rng.randrange(40) for _ in range(n)],
        "side": [rng.choice(["scheduler", "worker"]) for _ in range(n)],
        "key": [rng.choice(["k1", "k2"]) for _ in range(n)],
        "worker": [rng.choice(["tcp://b", "tcp://a", None]) for _ in range(n)],
        "host": "h", "pid": 1,
        "start": [states[min(i, rng.randrange(4))] for i in range(n)],
        "finish": [states[min(i, rng.randrange(4))] for i in range(n)],
        "stimulus_id": [f"s{i}" for i in range(n)],
    })
    held = strings.with_columns(pl.col("worker", "start", "finish").cast(pl.Categorical))
    monkeypatch.setattr(sinks, "PART_ROWS", 700)
    sink = MemorySink()
    sinks.put_in_parts(sink, "events", held)
    table = TABLES["events"]
    expected = strings.sort(table.sort_by, maintain_order=True).select(table.names)
    assert sink.tables["events"].schema == table.polars_schema()
    assert sink.tables["events"].equals(conform(expected, table))
