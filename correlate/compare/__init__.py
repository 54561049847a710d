"""Compare correlated runs: what got slower, where, and why (``correlate compare``).

Pure functions over the output tables of two sides (one or several runs each): ``changes``
(each run's profile per prefix, span, file or function; the two sides joined, judged and
ranked; a change of the machine or the concurrency told apart; the setup's differences),
``stats`` (the rank test, the run-to-run check, shares of the job's span), ``logical_paths``
(files matched across runs), ``arrivals`` (data from outside Dask: the simulation or the
analytics changed) and ``explain`` (the sentences). The door is ``compare_runs(loaded, names, by) -> Comparison``
(``comparison``); ``reports.compare`` writes and prints it.

A new figure of a comparison goes into ``changes`` (with its judgement); a new kind of
evidence across runs is a module here used by ``changes`` or ``explain``.
"""

from correlate.compare.comparison import Comparison, compare_runs

__all__ = ["Comparison", "compare_runs"]
