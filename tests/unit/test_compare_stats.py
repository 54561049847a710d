"""compare_stats: the rank test against scipy's (a test extra), the run-to-run check, and the
span shares that add up to the job's span."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from correlate.compare.stats import MIN_EXECUTIONS, rank_test, runs_apart, span_shares


@pytest.mark.parametrize("seed", range(6))
def test_the_rank_test_agrees_with_scipy_including_ties(seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(1.0, 0.2, 12 + seed), 1)  # rounded: many ties
    y = np.round(rng.normal(1.0 + 0.1 * seed, 0.2, 9 + 2 * seed), 1)
    p, direction = rank_test(x, y)
    ref = mannwhitneyu(y, x, alternative="two-sided", method="asymptotic", use_continuity=True)
    assert p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12)
    assert direction == (0 if ref.statistic == len(x) * len(y) / 2
                         else 1 if ref.statistic > len(x) * len(y) / 2 else -1)


def test_many_small_shifts_are_certain_and_few_large_ones_are_not():
    rng = np.random.default_rng(1)
    base = rng.normal(1.0, 0.05, 1000)
    p, direction = rank_test(base, base * 1.05)
    assert p < 1e-6 and direction == 1
    assert rank_test([1.0, 1.1], [1.4, 1.5]) is None  # too few executions to judge
    few = rank_test([1.0] * MIN_EXECUTIONS, [1.0] * MIN_EXECUTIONS)
    assert few == (1.0, 0)


def test_runs_apart_needs_a_shift_beyond_the_run_to_run_range():
    assert runs_apart([1.0], [2.0]) is None
    assert runs_apart([1.0], [2.0, 2.1]) is None and runs_apart([1.0, 1.1], [2.0]) is None
    assert runs_apart([1.0, 1.1], [2.0, 2.1]) is True
    # apart, but the means differ by less than half a side's run-to-run range
    assert runs_apart([1.0, 1.8, 1.8], [1.85, 1.85, 1.85]) is False
    assert runs_apart([1.0, 1.1], [2.0, 5.0]) is True  # a wide side far beyond the other
    assert runs_apart([1.0, 1.5], [1.2, 1.7]) is False
    assert runs_apart([2.0, 2.1], [1.0, 1.1]) is True


def test_runs_apart_at_its_edges():
    # sides that share a value are not apart, in either direction, however far their means
    assert runs_apart([1.0, 2.0], [2.0, 3.0]) is False
    assert runs_apart([2.0, 3.0], [1.0, 2.0]) is False
    # a shift of exactly half the larger range is enough: means 3 and 5, range 4
    assert runs_apart([0.0, 4.0, 4.0, 4.0], [5.0, 5.0]) is True
    assert runs_apart([5.0, 5.0], [0.0, 4.0, 4.0, 4.0]) is True
    # apart, but means 7.5 and 10.5 differ by less than half the range of 10
    assert runs_apart([0.0, 10.0, 10.0, 10.0], [10.5, 10.5]) is False


def test_the_rank_test_of_two_equal_samples_finds_no_shift():
    same = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert rank_test(same, same.copy()) == (1.0, 0)
    # one value apart: the continuity correction keeps it far from any level
    p, direction = rank_test(same, np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.5]))
    ref = mannwhitneyu([1.0, 2.0, 3.0, 4.0, 5.0, 6.5], same, alternative="two-sided",
                       method="asymptotic", use_continuity=True)
    assert p == pytest.approx(ref.pvalue, rel=1e-9) and direction == 1


def test_fewer_than_five_executions_on_either_side_are_not_judged():
    five, four, many = np.arange(5.0), np.arange(4.0), np.arange(50.0)
    assert rank_test(five, five + 1) is not None
    assert rank_test(four, many) is None and rank_test(many, four) is None


def test_the_thresholds_are_the_ones_docs_compare_md_states():
    from pathlib import Path

    from correlate.compare.stats import ALPHA, COUNT_TOLERANCE, MATERIAL

    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "compare.md").read_text()
                    .split())
    assert f"p < {ALPHA:g}" in text
    assert f"at least {MATERIAL:.0%} of the row's time per execution" in text
    assert f"moved by more than {COUNT_TOLERANCE:.0%}" in text
    assert f"fewer than {MIN_EXECUTIONS} executions on a side" in text


def test_span_shares_of_a_zero_length_execution_and_a_reversed_one():
    # an execution that starts and stops at once takes no share; one that stops before it
    # starts is left out (NaN); the span is measured from the first start, not from 0
    shares, span = span_shares(np.array([10.0, 12.0, 13.0]), np.array([14.0, 12.0, 11.0]))
    assert span == 4.0
    assert shares[:2] == pytest.approx([4.0, 0.0]) and np.isnan(shares[2])


def test_span_shares_add_up_to_the_span_less_idle_time():
    # two executions overlap for 1 s, then a 1 s gap, then one alone
    start = np.array([0.0, 1.0, 4.0, np.nan])
    stop = np.array([2.0, 3.0, 5.0, 1.0])
    shares, span = span_shares(start, stop)
    assert span == 5.0
    assert shares[:3] == pytest.approx([1.5, 1.5, 1.0])
    assert np.isnan(shares[3])
    assert np.nansum(shares) + 1.0 == pytest.approx(span)  # + the idle second
