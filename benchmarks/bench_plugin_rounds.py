"""Benchmark: the collectors' CPU per task in the processes of a running cluster, by process
role, with the machine's drift cancelled by alternating rounds in the same processes.

One LocalCluster (2 worker processes x 2 threads, the shape of ``bench_many_tasks.py``) runs
rounds of ``client.map(inc, range(N))`` (fresh keys each round), alternately plain and with the
collectors' scheduler and worker plugins registered for that round only (``--profile off``,
flushing every 5 s). Each round reads the CPU time (user + system, ``os.times``) of the
scheduler's process and of each worker process before and after, so a round with the plugins
pays their set-up (process folder, sink thread) and their close (last flush, closed.json) too,
but not the imports (``bench_many_tasks.py`` has the whole job, start-up included). The
figure per round pair is (plugins - plain) / N per role; the medians over pairs are printed
with their spread.

Not in these figures: the file-open audit hook (``collectors.file_opens``), which a process
cannot remove once added, so the plain rounds after the first recorded one pay it too (its cost
per audited event is ``bench_task_hooks.py``'s; Dask raises about 60 audited events per task).

What this isolates that the whole-job benchmark cannot: the job's other processes (the client,
the nannies, the launcher) and the cluster's start-up vary by more than the collectors' cost
from one job to the next; here the same processes run both kinds of rounds, seconds apart.

    python benchmarks/bench_plugin_rounds.py [--tasks 5000] [--pairs 8] [--tree DIR]

``--tree DIR`` measures the collectors of another checkout (e.g. ``git archive REV collectors
correlate | tar -x -C DIR``) in the same cluster, in turn with this one: three kinds of rounds,
plain, this tree, that tree, all alternated.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def inc(x: int) -> int:
    return x + 1


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=5000)
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--tree", type=Path, default=None, help="a second checkout's collectors")
    args = ap.parse_args()

    from distributed import Client, LocalCluster

    trees = {"this": str(REPO)}
    if args.tree is not None:
        trees["other"] = str(args.tree.resolve())
    work = Path(tempfile.mkdtemp(prefix="bench-rounds-"))
    counter = itertools.count()
    # the workers import each tree's collectors from its own folder (a worker plugin is
    # pickled by reference to its module, so the module must be importable there): one
    # cluster per tree would break the side-by-side, so trees are put on sys.path in turn
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        def cpu() -> dict[str, float]:
            out = {"scheduler": client.run_on_scheduler(cpu_seconds)}
            out.update({f"worker {i}": v for i, v in
                        enumerate(client.run(cpu_seconds).values())})
            return out

        def round_(tree: str | None) -> dict[str, float]:
            base = next(counter) * args.tasks
            names = None
            if tree is not None:
                for where in (client.run, client.run_on_scheduler):
                    where(_use_tree, tree)
                _use_tree(tree)
                s_plugin, w_plugin = _plugins(tree, str(work / f"run-{base}"))
                client.register_plugin(s_plugin)
                client.register_plugin(w_plugin)
                names = (s_plugin.name, w_plugin.name)
            before = cpu()
            futures = client.map(inc, range(base, base + args.tasks))
            client.gather(futures)
            del futures
            if names is not None:
                client.unregister_worker_plugin(names[1])
                client.unregister_scheduler_plugin(names[0])
            time.sleep(0.5)  # forgotten keys' transitions land in this round
            after = cpu()
            return {k: after[k] - before[k] for k in before}

        round_(None)  # warm-up: imports, first connections
        for tree in trees.values():
            round_(tree)
        diffs: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
        for _ in range(args.pairs):
            plain = round_(None)
            for name, tree in trees.items():
                rec = round_(tree)
                for role in plain:
                    diffs[name].setdefault(role, []).append(
                        (rec[role] - plain[role]) / args.tasks * 1e6)
        print(f"\n{args.tasks} tasks per round, {args.pairs} pairs (plain, "
              f"{', '.join(trees)}), 2 workers x 2 threads; CPU µs per task the plugins add, "
              f"median [min, max] over pairs")
        print("| role | " + " | ".join(trees) + " |")
        print("|---|" + "---:|" * len(trees))
        roles = list(next(iter(diffs.values())))
        for role in [*roles, "all"]:
            cells = []
            for name in trees:
                vals = (diffs[name][role] if role != "all" else
                        [sum(v) for v in zip(*diffs[name].values(), strict=True)])
                cells.append(f"{statistics.median(vals):+.1f} [{min(vals):+.1f}, "
                             f"{max(vals):+.1f}]")
            print(f"| {role} | " + " | ".join(cells) + " |")


def _ours(name: str) -> bool:
    return name.split(".")[0] in ("collectors", "correlate")


def _use_tree(tree: str) -> None:
    """Make ``tree``'s collectors the ones ``import collectors...`` finds in this process.
    Each tree is imported once per process (its audit hook, which cannot be removed, is added
    once); the state lives on ``sys``, as this function reaches the workers pickled by value."""
    state = sys.__dict__.setdefault("_bench_plugin_trees", {"current": None, "trees": {}})
    current = state["current"]
    if current == tree:
        return
    if current is not None:
        state["trees"][current] = {m: sys.modules.pop(m) for m in list(sys.modules) if _ours(m)}
        sys.path.remove(current)
    else:  # the tree the process started with (this checkout's, installed in the venv)
        for m in [m for m in sys.modules if _ours(m)]:
            del sys.modules[m]
    sys.path.insert(0, tree)
    sys.modules.update(state["trees"].get(tree, {}))
    state["current"] = tree


def _plugins(tree: str, run_dir: str) -> tuple:
    from collectors.scheduler_plugin import CorrelateSchedulerPlugin
    from collectors.worker_plugin import CorrelateWorkerPlugin

    return CorrelateSchedulerPlugin(run_dir), CorrelateWorkerPlugin(run_dir)


if __name__ == "__main__":
    main()
