"""correlate.compare.arrivals on literal summary sections: the side that changed more (the
simulation's pace and spread, or the analytics' lag) is named; noise and runs without arrivals
name nothing."""

from __future__ import annotations

from correlate.compare.arrivals import explain_arrivals


def section(interval: float, spread: float, lag: float, waited: float) -> dict:
    return {"arrivals": {
        "steps": 4, "step_interval_s": interval, "max_spread_s": spread,
        "wait_external_s": waited, "lag_s": {"mean": lag},
        "senders": [{"sender": "rank 0", "last_in_steps": 1},
                    {"sender": "rank 2", "last_in_steps": 3}]}}


def test_a_slower_simulation_names_the_arrivals():
    item, why = explain_arrivals(section(0.5, 0.6, 0.1, 2.0), section(1.1, 1.4, 0.11, 4.5))
    assert item == "arrivals"
    assert why.startswith("the data from outside Dask (the simulation) changed, not the "
                          "analytics")
    assert "0.500 s → 1.100 s (+0.600 s a step)" in why and "rank 2 last in 3 of 4" in why
    assert "+2.500 s longer" in why and "0.100 s → 0.110 s" in why


def test_analytics_falling_behind_names_the_analytics():
    _item, why = explain_arrivals(section(0.5, 0.6, 0.1, 2.0), section(0.5, 0.61, 0.9, 2.0))
    assert why.startswith("the analytics changed, not the data from outside Dask: the "
                          "analytics' lag after a step's last arrival 0.100 s → 0.900 s")


def test_noise_or_no_arrivals_names_nothing():
    assert explain_arrivals({}, {}) is None
    assert explain_arrivals(section(0.5, 0.6, 0.1, 2.0),
                            section(0.505, 0.61, 0.11, 2.01)) is None
    _item, why = explain_arrivals({}, section(0.5, 0.6, 0.1, 2.0))
    assert why.startswith("only this run received data from outside Dask")
