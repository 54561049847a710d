"""The per-task lifecycle view (seed 004): one JSON object per task key with everything the
sources say about it, for every input format (``task_lifecycles.jsonl``).

Each object: ``key``, ``prefix``, ``group``, ``depends_on`` / ``dependents`` (graph),
``submitted_ns`` and ``client`` (first update_graph that carried it), ``executions`` (count,
those known only from the scheduler's compute startstops included: ``executions_unrecorded``)
and ``events`` in time order. An event has ``time_ns``, ``kind`` (``scheduler-transition``,
``worker-transition``, ``execution``, ``startstop``, ``transfer``), ``clock`` (whose clock
``time_ns`` is on: ``scheduler``, ``worker`` or ``worker+scheduler_delay``), ``run_time_ns``
and the fields of its source row that are not null — for scheduler transitions the
start/finish states, stimulus, source (scheduler) address, worker, thread, begins/ends and any
unknown CSV column.

``time_ns`` stays on its recording clock, as the source said it. ``run_time_ns`` is the same
moment on the run timeline (the scheduler's clock): worker-clock times shifted by the offsets
``correlate`` estimates for ``events.parquet`` and ``clocks.parquet``, times Dask shifted by its
own scheduler_delay estimate (compute and transfer startstops, transfers) first brought back by
the delay it had then. The events are in that order, so that a task is received after it was
sent even when the worker's clock runs behind (on their own clocks, events of two hosts
interleave by as much as the clocks differ). Pure:
``lifecycle_lines(frames)`` builds each task's JSON line in polars (no Python per event);
``lifecycles`` parses them, ``write_lifecycles`` writes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from correlate.frames import spill
from correlate.frames.prefixes import key_split_groups, key_splits
from correlate.frames.spill import parts_for
from correlate.sources.frames import RunFrames
from correlate.timeline import align, coroutines
from correlate.timeline.message_bounds import combined as combined_bounds
from correlate.timeline.message_bounds import message_bounds

_TRANSITION_SKIP = ("key", "side", "local_time_ns", "prefix", "group")
#: what ``message_bounds`` reads of the transitions
_BOUNDS: list[str | pl.Expr] = ["side", "key", "worker", "host", "pid", "local_time_ns", "start",
                                "finish"]
#: keys whose lines are built and written at once: a chunk's events and lines are what the
#: writer holds beyond the run's rows, so this bounds it (and a chunk of the whole run was
#: slower to build than several: docs/performance.md, "Memory limit")
KEYS_PER_CHUNK = 20_000
#: transitions a part of ``write_lifecycles`` holds at most (where the buckets allow): a
#: part's rows are held as read and dealt to its chunks, twice, beside the run's other tables
LIFECYCLE_ROWS_PER_PART = 4_000_000


def _json_object(df: pl.DataFrame, cols: list[str]) -> pl.Expr:
    """``{"col": value, ...}`` per row over ``cols`` in name order, null fields left out;
    values JSON-encoded by polars (strings escaped), no Python per row. A null field is
    ``"name":null`` right after ``{`` or ``,`` — inside an encoded string a quote is always
    preceded by a backslash, so removing that pattern never touches a value."""
    exprs = []
    for c in sorted(cols):
        col = pl.col(c)
        if df.schema[c] == pl.Categorical or isinstance(df.schema[c], pl.Enum):
            col = col.cast(pl.String)
        exprs.append(col.alias(c))
    enc = pl.struct(exprs).struct.json_encode()
    if not df.select(pl.any_horizontal(pl.col(cols).is_null().any())).item():
        return enc  # no null field to take out (the regexes are half the encoding's cost)
    return (enc.str.replace_all(r',"[^"\\]+":null', "")
            .str.replace(r'^\{"[^"\\]+":null,?', "{"))


def _event_part(df: pl.DataFrame, time: str, kind: str, clock: pl.Expr, cols: list[str],
                to_run: pl.Series | None = None) -> pl.DataFrame:
    """``to_run``: per row, what turns ``time`` into the run timeline (None: it is on it)."""
    df = df.with_columns(time_ns=pl.col(time), kind=pl.lit(kind), clock=clock)
    df = df.with_columns(run_time_ns=pl.col("time_ns") if to_run is None
                         else pl.col("time_ns") + to_run)
    return df.select("key", "run_time_ns", "kind",
                     event=_json_object(df, [*cols, "time_ns", "kind", "clock", "run_time_ns"]))


def _to_run_timeline(df: pl.DataFrame, time: str, clock: pl.Expr, clocks: pl.DataFrame,
                     samples: pl.DataFrame) -> pl.Series:
    """Per row of ``df`` (with ``host`` and ``pid``): what turns its ``time``, on ``clock``
    (``worker``, or ``worker+scheduler_delay`` as Dask shifts its startstops), into the run
    timeline: the worker's offset, minus, for a shifted time, the scheduler_delay Dask added
    (the process's sample nearest in time). A shifted time whose process has no sample is
    taken as it is (Dask meant it to be on the scheduler's clock). Where the source gives the
    delay Dask added to that very row (``scheduler_delay_ns``: outgoing transfers), that is
    used: Dask's estimate changes at every heartbeat, so a sample from another instant can
    put a transfer before the execution that made its data."""
    exact = (pl.col("scheduler_delay_ns") if "scheduler_delay_ns" in df.columns
             else pl.lit(None, pl.Int64))
    rows = df.select("host", "pid", pl.col(time).alias("t"), shifted=clock != "worker",
                     shift=align.worker_shift(df, clocks), exact=exact).with_row_index("row")
    delays = (samples.filter(pl.col("scheduler_delay_s").is_not_null())
              .select("host", "pid", t="local_time_ns",
                      delay=(pl.col("scheduler_delay_s") * 1e9).round().cast(pl.Int64))
              .sort("t"))
    got = (rows.drop_nulls("t").sort("t")
           .join_asof(delays, on="t", by=["host", "pid"], strategy="nearest",
                      check_sortedness=False)  # (both sorted on t just above)
           .select("row", "delay"))
    rows = rows.join(got, on="row", how="left").sort("row")
    return rows.select(pl.when(~pl.col("shifted")).then(pl.col("shift"))
                       .when(pl.col("exact").is_not_null())
                       .then(pl.col("shift") - pl.col("exact"))
                       .when(pl.col("delay").is_not_null())
                       .then(pl.col("shift") - pl.col("delay"))
                       .otherwise(0)).to_series()


def _transition_events(tr: pl.DataFrame, clocks: pl.DataFrame) -> list[pl.DataFrame]:
    out = []
    for side in ("scheduler", "worker"):
        part = tr.filter(pl.col("side") == side)
        if part.is_empty():
            continue
        cols = [c for c in part.columns if c not in _TRANSITION_SKIP
                and part[c].null_count() < part.height]
        shift = align.worker_shift(part, clocks) if side == "worker" else None
        out.append(_event_part(part, "local_time_ns", f"{side}-transition", pl.lit(side), cols,
                               shift))
    return out


#: Dask shifts the times of these startstops by its scheduler_delay; the others (disk-read,
#: disk-write) are on the worker's own clock
SHIFTED_ACTIONS = ("compute", "transfer")


def compute_delays(executions: pl.DataFrame, startstops: pl.DataFrame) -> pl.DataFrame:
    """key, worker, action ("compute"), scheduler_delay_ns: the delay Dask added to a compute
    startstop, read off the execution the collectors timed on the worker's own clock (the same
    call, timed microseconds apart): Dask passes the estimate in force when the task starts,
    which samples taken at other instants do not know. Only where the key ran once on that
    worker (a retry's pairing would be a guess)."""
    schema = pl.Schema({"key": pl.String, "worker": pl.String, "action": pl.String,
                        "scheduler_delay_ns": pl.Int64})
    if "window_source" not in executions.columns or not executions.height:
        return pl.DataFrame(schema=schema)
    timed = (executions.filter(pl.col("window_source") == "executor-hook")
             .select("key", "worker", "local_start_ns")
             .filter(pl.len().over("key", "worker") == 1))
    reported = (startstops.filter(pl.col("action") == "compute")
                .select("key", "worker", "reported_start_ns")
                .filter(pl.len().over("key", "worker") == 1))
    return (timed.join(reported, on=["key", "worker"])
            .select("key", "worker", action=pl.lit("compute"),
                    scheduler_delay_ns=pl.col("reported_start_ns") - pl.col("local_start_ns"))
            .cast(schema))


def run_clocks(frames: RunFrames, parts: int | None = None) -> pl.DataFrame:
    """The worker clocks' offsets from the scheduler's (``clocks`` rows), estimated as for the
    run's ``events.parquet``: from every task message of the run, so compute them before taking
    a slice of keys. The transitions are read in ``parts`` parts by key (default:
    ``RunFrames.keyed_parts``, as the engine's timeline reads them): each task's messages are
    in one."""
    bounds = [message_bounds(replace(frames, transitions=t).table("transitions", _BOUNDS))
              for t in frames.transition_parts(parts or frames.keyed_parts())]
    return align.worker_offsets(frames.clock_samples, frames.processes,
                                combined_bounds(bounds))


def _lifecycle_parts(frames: RunFrames) -> int:
    """How many parts by key a run's lifecycles are written in: about
    ``LIFECYCLE_ROWS_PER_PART`` transitions each, a multiple of the parts the source spilled
    them in (each part then read from one of those: ``RunFrames.transition_parts``)."""
    spilled = len(frames.transitions_in_parts) or 1
    rows = frames.transitions.lazy().select(pl.len()).collect().item()
    within = -(-parts_for(rows, LIFECYCLE_ROWS_PER_PART) // spilled)
    return spilled * max(1, min(within, spill.BUCKETS // spilled))


def _events(frames: RunFrames, clocks: pl.DataFrame) -> pl.DataFrame:
    """key, run_time_ns, kind, event (one JSON object per event), in no particular order."""
    parts = _transition_events(frames.table("transitions"), clocks)
    ex = (frames.executions if "awaiting_s" in frames.executions.columns
          else coroutines.with_awaiting(frames.executions, frames.execution_slices))
    samples = frames.clock_samples
    if ex.height:
        cols = ["worker", "host", "pid", "thread_id", "local_start_ns", "local_stop_ns",
                "cpu_s", "awaiting_s", "status", "window_source"]
        clock = (pl.when(pl.col("window_source").is_in(["startstops", "task-stream"]))
                 .then(pl.lit("worker+scheduler_delay")).otherwise(pl.lit("worker")))
        parts.append(_event_part(ex, "local_start_ns", "execution", clock, cols,
                                 _to_run_timeline(ex, "local_start_ns", clock, clocks, samples)))
    # startstops name their worker by address only
    ss = frames.startstops.join(
        frames.processes.drop_nulls("worker").unique("worker", keep="first")
        .select("worker", "host", "pid"), on="worker", how="left", maintain_order="left")
    if ss.height:
        ss = ss.join(compute_delays(frames.executions, frames.startstops),
                     on=["key", "worker", "action"], how="left", maintain_order="left")
        clock = (pl.when(pl.col("action").is_in(SHIFTED_ACTIONS))
                 .then(pl.lit("worker+scheduler_delay")).otherwise(pl.lit("worker")))
        parts.append(_event_part(ss, "reported_start_ns", "startstop", clock,
                                 ["action", "worker", "source", "reported_start_ns",
                                  "reported_stop_ns"],
                                 _to_run_timeline(ss, "reported_start_ns", clock, clocks,
                                                  samples)))
    tk = frames.transfer_keys.join(frames.transfers, on="transfer_id")
    if tk.height:
        clock = pl.lit("worker+scheduler_delay")
        parts.append(_event_part(tk, "reported_start_ns", "transfer", clock,
                                 ["transfer_id", "direction", "worker", "peer", "nbytes",
                                  "total_bytes", "reported_start_ns", "reported_stop_ns"],
                                 _to_run_timeline(tk, "reported_start_ns", clock, clocks,
                                                  samples)))
    schema = pl.Schema({"key": pl.String, "run_time_ns": pl.Int64, "kind": pl.String,
                        "event": pl.String})
    if not parts:
        return pl.DataFrame(schema=schema)
    return pl.concat([p.cast(schema) for p in parts])


def _execution_counts(frames: RunFrames) -> pl.DataFrame:
    """key, executions, executions_unrecorded: per worker, the larger of its execution rows
    and the compute startstops the scheduler received from it (an execution its worker never
    wrote, e.g. killed before its flush, is known from the startstop alone), summed."""
    by = ["key", "worker"]
    rows = frames.executions.group_by(by).agg(rows=pl.len().cast(pl.Int64))
    ss = (frames.startstops.filter(pl.col("action") == "compute").group_by(by)
          .agg(computes=pl.len().cast(pl.Int64)))
    both = rows.join(ss, on=by, how="full", coalesce=True, nulls_equal=True).with_columns(
        pl.col("rows", "computes").fill_null(0))
    return both.group_by("key").agg(
        executions=pl.max_horizontal("rows", "computes").sum(),
        executions_unrecorded=(pl.col("computes") - pl.col("rows")).clip(0).sum())


def _graph(frames: RunFrames) -> pl.DataFrame:
    """key → depends_on, client, submitted_ns; and dependents."""
    deps = frames.dependencies
    on = deps.group_by("key").agg(pl.col("depends_on").unique().sort(),
                                  pl.col("client").first(),
                                  submitted_ns=pl.col("local_time_ns").min())
    users = (deps.group_by("depends_on").agg(dependents=pl.col("key").unique().sort())
             .rename({"depends_on": "key"}))
    return on.join(users, on="key", how="full", coalesce=True)


def _names(frames: RunFrames) -> pl.DataFrame:
    named = [df.select(pl.col("key").cast(pl.String), "prefix", "group")
             for df in (frames.executions, frames.table("transitions"))
             if {"prefix", "group"} <= set(df.columns) and df.height]
    if not named:
        return pl.DataFrame(schema={"key": pl.String, "prefix": pl.String, "group": pl.String})
    return (pl.concat(named, how="vertical_relaxed").drop_nulls("prefix")
            .unique("key", keep="first", maintain_order=True))


def lifecycle_lines(frames: RunFrames, clocks: pl.DataFrame | None = None) -> pl.DataFrame:
    """key, line: one JSON object per key (every key seen in any table, graph-only keys
    included), sorted by key. ``clocks``: ``run_clocks`` of the whole run (default: of
    ``frames``)."""
    clocks = run_clocks(frames) if clocks is None else clocks
    frames = _as_text(frames)
    events = _events(frames, clocks)
    # each key's events in time order (ties in source order): sorting within each key is
    # cheaper than sorting all events by their string key first
    in_time_order = pl.col("event").sort_by("run_time_ns", "kind", nulls_last=True,
                                            maintain_order=True)
    per_key = events.group_by("key").agg(events=in_time_order.str.join(",")).join(
        _execution_counts(frames), on="key", how="left")
    graph = _graph(frames)
    keys = pl.concat([events.select("key"), graph.select("key")]).unique()
    t = (keys.join(per_key, on="key", how="left").join(graph, on="key", how="left")
         .join(_names(frames), on="key", how="left").sort("key"))
    if t.get_column("prefix").has_nulls():
        t = t.with_columns(prefix=pl.coalesce("prefix", key_splits(t.get_column("key"))))
    if t.get_column("group").has_nulls():
        t = t.with_columns(group=pl.coalesce("group", key_split_groups(
            t.get_column("key"), t.get_column("prefix"))))
    t = t.with_columns(
        depends_on=pl.col("depends_on").fill_null([]),
        dependents=pl.col("dependents").fill_null([]),
        executions=pl.col("executions").fill_null(0),
        executions_unrecorded=pl.col("executions_unrecorded").fill_null(0),
        events=pl.col("events").fill_null(""))
    head = pl.struct("client", "depends_on", "dependents").struct.json_encode()
    tail = pl.struct("executions", "executions_unrecorded", "group", "key", "prefix",
                     "submitted_ns").struct.json_encode()
    line = pl.concat_str([head.str.strip_suffix("}"), pl.lit(',"events":['), pl.col("events"),
                          pl.lit("],"), tail.str.strip_prefix("{")])
    return t.select("key", line=line)


def _as_text(frames: RunFrames) -> RunFrames:
    """``frames`` with the keys of the tables read here as text (the engine's are Categorical:
    a task's JSON line and the key ranges are text)."""
    def text(df: pl.DataFrame, *cols: str) -> pl.DataFrame:
        return df.with_columns(pl.col(c).cast(pl.String) for c in cols)

    return replace(frames, executions=text(frames.executions, "key"),
                   startstops=text(frames.startstops, "key"),
                   transfer_keys=text(frames.transfer_keys, "key"),
                   dependencies=text(frames.dependencies, "key", "depends_on"))


def lifecycles(frames: RunFrames) -> Iterator[dict[str, Any]]:
    """One dict per key, sorted by key (see ``lifecycle_lines``)."""
    for line in lifecycle_lines(frames)["line"]:
        yield json.loads(line)


def all_keys(frames: RunFrames) -> pl.Series:
    """Every task key any table mentions, sorted."""
    text = pl.col("key").cast(pl.String)  # (the engine's keys are Categorical)
    return pl.concat([frames.table("transitions", [text]), frames.executions.select(text),
                      frames.startstops.select(text), frames.transfer_keys.select(text),
                      frames.dependencies.select(text),
                      frames.dependencies.select(pl.col("depends_on").cast(pl.String).alias(
                          "key"))]).unique().sort("key")["key"]


def _key_slice(frames: RunFrames, lo: str, hi: str) -> RunFrames:
    """The rows about keys ``lo <= key <= hi`` (dependency edges from or to them)."""
    def inside(col: str) -> pl.Expr:
        return pl.col(col).is_between(pl.lit(lo), pl.lit(hi))

    return replace(frames, transitions=frames.transitions.filter(inside("key")),
                   transitions_in_parts=(),  # (the whole run's: not this slice's)
                   executions=frames.executions.filter(inside("key")),
                   startstops=frames.startstops.filter(inside("key")),
                   transfer_keys=frames.transfer_keys.filter(inside("key")),
                   dependencies=frames.dependencies.filter(inside("key") | inside("depends_on")))


def story(frames: RunFrames, key: str) -> dict[str, Any]:
    """One task's lifecycle object, built from that key's rows only (any run size: only the
    part of the transitions that holds its key is read, ``_lifecycle_parts``)."""
    parts = _lifecycle_parts(frames)
    p = spill.parts_of(pl.Series([key]), parts)[0]
    part = replace(frames, transitions=frames.transition_parts(parts)[p],
                   transitions_in_parts=())
    lines = lifecycle_lines(_key_slice(part, key, key), run_clocks(frames)).filter(
        pl.col("key") == key)
    return json.loads(lines["line"][0])


def matching_keys(frames: RunFrames, wanted: str) -> list[str]:
    """Every task key any table mentions that contains ``wanted`` (itself included), sorted:
    each table's distinct keys looked at, the transitions a part at a time."""
    text = pl.col("key").cast(pl.String)
    tables = [*(t.select(pl.col("key").unique()) for t in frames.transition_parts(
        frames.keyed_parts())), *(getattr(frames, n).lazy().select("key") for n in _KEYED),
        frames.dependencies.lazy().select("key"),
        frames.dependencies.lazy().select(key="depends_on")]
    hits = [t.select(text).filter(text.str.contains(wanted, literal=True)).collect()
            for t in tables]
    return pl.concat(hits).unique().sort("key").get_column("key").to_list()


def with_transitions(frames: RunFrames) -> RunFrames:
    """``frames`` with its transitions read if they were lazy: the only lazy table lifecycles
    use (a run folder's DXT segments and profile rows stay unread)."""
    return replace(frames, transitions=frames.table("transitions"))


def write_lifecycles(frames: RunFrames, path: Path, keys_per_chunk: int = KEYS_PER_CHUNK,
                     clocks: pl.DataFrame | None = None, parts: int | None = None) -> int:
    """Write ``task_lifecycles.jsonl`` a chunk of ``keys_per_chunk`` keys at a time, in key
    order, so that memory stays bounded on runs with millions of tasks; returns the number of
    tasks written. A run of more than ``LIFECYCLE_ROWS_PER_PART`` transitions (or given
    ``parts``) is written a part at a time, each part's keys in key order (the parts by the
    hash of the key, ``spill.in_part``: a part's keys are read once, never sought in the whole
    run). ``clocks``: the run's ``clocks`` table when it was just correlated (default:
    ``run_clocks``, the same offsets)."""
    clocks = run_clocks(frames) if clocks is None else clocks
    parts = parts or _lifecycle_parts(frames)
    # (each execution's time awaiting found once: the coroutine slices are not by key, and
    # each chunk would read all of them)
    frames = replace(frames, executions=coroutines.with_awaiting(frames.executions,
                                                                 frames.execution_slices),
                     execution_slices=frames.execution_slices.clear())
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("wb") as fh:
        for taken in _key_parts(frames, parts):
            for chunk, keys in _key_chunks(taken, keys_per_chunk):
                # edges list neighbours from other chunks: keep this chunk's keys only
                lines = lifecycle_lines(chunk, clocks).filter(
                    pl.col("key").is_in(keys.implode()))
                # one column, never quoted: each row is written as its JSON text
                lines.select("line").write_csv(fh, include_header=False, quote_style="never")
                written += lines.height
    return written


#: the tables a key's lifecycle reads by key (``dependencies`` also by ``depends_on``)
_KEYED = ("executions", "startstops", "transfer_keys")


#: a part of a run's keys handed over (a one-element list whose taker pops it, so that its
#: tables are let go once dealt to chunks) with its keys, sorted
Part = list[tuple[RunFrames, pl.Series]]


def _key_parts(frames: RunFrames, parts: int) -> Iterator[Part]:
    """``frames`` a part of the keys at a time (``spill.in_part``; an edge is in the part of
    each of its keys), the part's transitions read."""
    if parts == 1:
        yield [_with_keys(with_transitions(frames))]
        return
    part_of = {name: spill.parts_of(getattr(frames, name).get_column("key"), parts)
               for name in _KEYED}
    deps = frames.dependencies
    edge = (spill.parts_of(deps.get_column("key"), parts),
            spill.parts_of(deps.get_column("depends_on"), parts))
    for p, transitions in enumerate(frames.transition_parts(parts)):
        yield [_with_keys(replace(
            frames, transitions=replace(frames, transitions=transitions).table("transitions"),
            transitions_in_parts=(), dependencies=deps.filter((edge[0] == p) | (edge[1] == p)),
            **{name: getattr(frames, name).filter(part_of[name] == p) for name in _KEYED}),
            (p, parts))]


def _with_keys(part: RunFrames, which: tuple[int, int] | None = None
               ) -> tuple[RunFrames, pl.Series]:
    """``part`` with its keys, sorted: those of part ``which`` (p of n) only, when given (the
    other keys of its edges are another part's)."""
    keys = all_keys(part)
    return part, keys if which is None else keys.filter(spill.parts_of(keys, which[1])
                                                         == which[0])


def _key_chunks(taken: Part, keys_per_chunk: int) -> Iterator[tuple[RunFrames, pl.Series]]:
    """A part (handed over) a chunk of ``keys_per_chunk`` of its keys at a time, with the
    chunk's keys: each table's rows dealt to their chunks in one pass (an edge to the chunks
    of both its keys), the part's own tables let go."""
    part, keys = taken.pop()
    if keys.len() <= keys_per_chunk:
        yield part, keys
        return
    chunk_of = pl.DataFrame({"key": keys}).with_columns(
        _chunk=pl.int_range(pl.len(), dtype=pl.Int64) // keys_per_chunk)
    dealt = {name: _dealt(getattr(part, name), "key", chunk_of)
             for name in ("transitions", *_KEYED)}
    by_key, by_input = (_dealt(part.dependencies, col, chunk_of, "_edge")
                        for col in ("key", "depends_on"))
    none = part.dependencies.clear().with_row_index("_edge")
    part = replace(part, transitions=part.transitions.clear(), dependencies=none.drop("_edge"),
                   **{name: getattr(part, name).clear() for name in _KEYED})
    for c in range(-(-keys.len() // keys_per_chunk)):
        edges = pl.concat([by_key.get(c, none), by_input.get(c, none)]).unique(
            "_edge", keep="first", maintain_order=True).sort("_edge").drop("_edge")
        yield (replace(part, dependencies=edges, **{
            name: rows.pop(c, getattr(part, name)) for name, rows in dealt.items()}),
            keys.slice(c * keys_per_chunk, keys_per_chunk))


def _dealt(df: pl.DataFrame, col: str, chunk_of: pl.DataFrame, index: str | None = None
           ) -> dict[int, pl.DataFrame]:
    """``df``'s rows by the chunk of their ``col`` (``chunk_of``: key → ``_chunk``), in their
    order; with a row number ``index`` when given (the same row dealt by two columns)."""
    if index is not None:
        df = df.with_row_index(index)
    chunk = df.select(pl.col(col).cast(pl.String)).join(
        chunk_of, left_on=col, right_on="key", how="left", maintain_order="left"
    ).get_column("_chunk")
    return {c: rows for (c,), rows in df.with_columns(_chunk=chunk).drop_nulls("_chunk")
            .partition_by("_chunk", as_dict=True, maintain_order=True, include_key=False).items()}
