"""An outgoing transfer is placed after the execution that made its data, on the run timeline
of ``correlate story`` and ``task_lifecycles.jsonl``. Dask shifts a transfer's times by its
``scheduler_delay``, an estimate it replaces at every heartbeat; the collectors record the
delay Dask added to each outgoing transfer (exactly, from Dask's unshifted ``middle``), so the
transfer is brought back to the worker's clock whatever the worker's samples say.

A real LocalCluster job under `collect`: ``block-0`` made on one worker, sent to the other."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest

from correlate.sources.detect import load
from correlate.timeline.lifecycles import story, with_transitions

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def frames(cluster_run):
    """The session's run of ``jobs.py cluster`` (tests/conftest.py)."""
    return with_transitions(load(cluster_run.run))


def _sent(frames):
    out = (frames.transfer_keys.filter(pl.col("key") == "block-0")
           .join(frames.transfers, on="transfer_id")
           .filter(pl.col("direction") == "outgoing"))
    assert out.height == 1
    return out.row(0, named=True)


def test_the_delay_dask_added_is_recorded_for_outgoing_transfers_only(frames):
    sent = _sent(frames)
    made = frames.executions.filter(pl.col("key") == "block-0").row(0, named=True)
    assert made["pid"] == sent["pid"]
    # on the sending worker's own clock, the transfer starts after block-0 was made
    assert sent["reported_start_ns"] - sent["scheduler_delay_ns"] >= made["local_stop_ns"]
    incoming = frames.transfers.filter(pl.col("direction") == "incoming")
    assert incoming.height and incoming["scheduler_delay_ns"].null_count() == incoming.height


def _order(frames) -> tuple[int, int]:
    """(end of block-0's execution, start of its outgoing transfer) on the run timeline."""
    events = story(frames, "block-0")["events"]
    (ex,) = [e for e in events if e["kind"] == "execution"]
    (tr,) = [e for e in events if e["kind"] == "transfer" and e["direction"] == "outgoing"]
    return ex["run_time_ns"] + ex["local_stop_ns"] - ex["local_start_ns"], tr["run_time_ns"]


def _skewed(frames, by_s: float):
    return replace(frames, clock_samples=frames.clock_samples.with_columns(
        pl.col("scheduler_delay_s") + by_s))


def test_the_transfer_follows_the_execution_whatever_the_samples_say(frames):
    """Dask's estimate was seen 43 ms off the later ones at a worker's start-up: samples that
    differ from the delay Dask added, by more than the gap between the two events, do not
    move the transfer."""
    ended, sent = _order(frames)
    assert sent >= ended
    off = (sent - ended) / 1e9 + 0.01
    for by in (off, -off, 0.05):
        assert _order(_skewed(frames, by)) == (ended, sent)


def test_without_the_exact_delay_the_samples_would_misplace_it(frames):
    """The same run with the delay column emptied (a run recorded before it) falls back to
    the samples, and samples off by more than the gap put the transfer before the
    execution's end: what the exact delay prevents."""
    old = replace(frames, transfers=frames.transfers.with_columns(
        scheduler_delay_ns=pl.lit(None, pl.Int64)))
    ended, by_samples = _order(old)  # the samples' own error shows here too
    ended_old, sent_old = _order(_skewed(old, (by_samples - ended) / 1e9 + 0.01))
    assert sent_old < ended_old
    assert _order(_skewed(frames, (by_samples - ended) / 1e9 + 0.01))[1] >= ended


@pytest.mark.parametrize("by_s", [0.0, 0.05, -0.05])
def test_a_compute_startstop_lies_on_its_execution_whatever_the_samples_say(frames, by_s):
    """Dask's compute startstop and the collectors' execution time the same call: on the run
    timeline they coincide (to the microseconds between the two clock reads), with the delay
    Dask added to the startstop read off that execution."""
    skewed = _skewed(frames, by_s)
    for key in ("burn-0", "nap-1", "block-0", "consume-0"):
        events = story(skewed, key)["events"]
        (ex,) = [e for e in events if e["kind"] == "execution"]
        (ss,) = [e for e in events if e["kind"] == "startstop" and e["action"] == "compute"]
        assert abs(ss["run_time_ns"] - ex["run_time_ns"]) < 1_000_000, key
