"""Files matched across runs by a logical path, before ``compare`` ranks them.

Two runs of one job touch the same files under names that differ by run: Dask's worker
directories, the P2P shuffles' ids, temporary folders and the job's own scratch or output
folders. Compared by their paths, every such file would be new in one run and gone in the
other. Each run's paths are first normalised on their own (``normalise``):

- a worker's local directory (``…/dask-scratch-space/worker-<random>``, before Dask 2023.3
  ``…/dask-worker-space/worker-<random>``; distributed's ``WorkSpace`` makes one below every
  ``local_directory``) becomes ``…/<worker-local>``: which worker did a task is scheduling;
- a P2P shuffle's disk buffer ``shuffle-<id>-<run>`` becomes ``shuffle-<k>``, the shuffles
  numbered from 1 in the order a task first touched them (the id is a token of the graph, the
  run a restart count);
- a ``tempfile`` folder (``tmp`` + 8 letters, digits or ``_``) becomes ``<tmp>``.

Then the folders the job chose per run (``/scratch/job-17/out`` against ``/scratch/job-18/out``)
are paired (``pair``): among the paths found in one run only, a folder that, replaced by one
folder of the other run at the same place, gives the other run's paths is that folder. Only
folders are paired, never file names (a file of another name is another file); a pair must
be the only candidate of both folders. A paired folder is shown as ``{before→after}``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import polars as pl

WORKER_DIR = r"/dask-(?:worker|scratch)-space/worker-[^/]+"
WORKER_LOCAL = "/<worker-local>"
SHUFFLE_DIR = r"^(.*/<worker-local>/shuffle-)([^/]+)-(\d+)(/.*)?$"
TMP_DIR = r"/tmp[a-z0-9_]{8}/"
#: pairing rounds: a path may differ in this many folders (a scratch and an output folder)
ROUNDS = 3


def normalise(task_files: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """``task_files`` of one run with ``path`` logical (worker directories, shuffle ids and
    temporary folders normalised) and ``physical_path`` the path as recorded."""
    path = (pl.col("path").str.replace(WORKER_DIR, WORKER_LOCAL)
            .str.replace_all(TMP_DIR, "/<tmp>/"))
    out = task_files.with_columns(physical_path=pl.col("path"), path=path)
    shuffles = out.filter(pl.col("path").str.contains(SHUFFLE_DIR))
    if shuffles.is_empty():
        return out
    order = (shuffles.join(tasks.select("execution_id", "start_ns"), on="execution_id",
                           how="left")
             .group_by(sid=pl.col("path").str.extract(SHUFFLE_DIR, 2))
             .agg(first=pl.col("start_ns").min())
             .sort("first", "sid", nulls_last=True)
             .with_row_index("k", offset=1))
    number = dict(zip(order["sid"].to_list(), order["k"].to_list(), strict=True))

    names = {}
    for p in shuffles.get_column("path").unique().to_list():
        m = re.match(SHUFFLE_DIR, p)
        if m is not None:
            names[p] = f"{m[1]}{number[m[2]]}{m[4] or ''}"
    return out.with_columns(path=pl.col("path").replace(names))


def _split(path: str) -> tuple[str, ...]:
    return tuple(path.split("/"))


def _votes(ref: Iterable[tuple[str, ...]], other: Iterable[tuple[str, ...]]
           ) -> Counter[tuple[tuple[str, ...], str, str]]:
    """(parent, reference folder, other folder) → how many paths agree once that folder is
    swapped; a place where several folders of a side differ from the other side gives none."""
    places: dict[tuple[int, tuple[str, ...]], tuple[set[str], set[str]]] = defaultdict(
        lambda: (set(), set()))
    for side, paths in enumerate((ref, other)):
        for parts in paths:
            for i in range(1, len(parts) - 1):  # folders only, never the file's own name
                places[(i, parts[:i] + ("",) + parts[i + 1:])][side].add(parts[i])
    votes: Counter[tuple[tuple[str, ...], str, str]] = Counter()
    for (i, skeleton), (r, o) in places.items():
        if len(r) == 1 and len(o) == 1:
            votes[(skeleton[:i], next(iter(r)), next(iter(o)))] += 1
    return votes


def _one_to_one(votes: Counter[tuple[tuple[str, ...], str, str]]
                ) -> dict[tuple[tuple[str, ...], str], str]:
    """(parent, other folder) → reference folder, for pairs that are the only best candidate
    of both their folders."""
    best_r: dict[tuple[tuple[str, ...], str], list[tuple[int, str]]] = defaultdict(list)
    best_o: dict[tuple[tuple[str, ...], str], list[tuple[int, str]]] = defaultdict(list)
    for (parent, r, o), n in votes.items():
        best_r[(parent, r)].append((n, o))
        best_o[(parent, o)].append((n, r))

    def only(cands: list[tuple[int, str]]) -> str | None:
        cands = sorted(cands, reverse=True)
        return cands[0][1] if len(cands) == 1 or cands[0][0] > cands[1][0] else None

    return {(parent, o): r for (parent, r, o) in votes
            if only(best_r[(parent, r)]) == o and only(best_o[(parent, o)]) == r}


def pair(reference: Sequence[str], others: Sequence[Sequence[str]]
         ) -> tuple[dict[str, str], list[dict[str, str]]]:
    """Logical names of the folders each run chose for itself: ``(reference renames, [renames
    of each other run])``, each ``{logical path: matched path}`` for the paths that change."""
    ref_now = {p: _split(p) for p in reference}
    others_now = [{p: _split(p) for p in o} for o in others]
    for _ in range(ROUNDS):
        ref_set = set(ref_now.values())
        label: dict[tuple[tuple[str, ...], str], str] = {}
        swaps: list[dict[tuple[tuple[str, ...], str], str]] = []
        for now in others_now:
            mine = set(now.values())
            swap = _one_to_one(_votes(ref_set - mine, mine - ref_set))
            swaps.append(swap)
            for (parent, o), r in swap.items():
                label.setdefault((parent, r), "{" + r + "→" + o + "}")
        if not label:
            break
        ref_now = {p: _renamed(parts, label) for p, parts in ref_now.items()}
        others_now = [{p: _renamed(parts, {(parent, o): label[(parent, r)]
                                           for (parent, o), r in swap.items()})
                       for p, parts in now.items()}
                      for now, swap in zip(others_now, swaps, strict=True)]
    return ({p: "/".join(parts) for p, parts in ref_now.items() if "/".join(parts) != p},
            [{p: "/".join(parts) for p, parts in now.items() if "/".join(parts) != p}
             for now in others_now])


def _renamed(parts: tuple[str, ...], names: dict[tuple[tuple[str, ...], str], str]
             ) -> tuple[str, ...]:
    for i in range(1, len(parts) - 1):
        new = names.get((parts[:i], parts[i]))
        if new is not None:
            return parts[:i] + (new,) + parts[i + 1:]
    return parts


def logical_task_files(runs: Sequence[pl.DataFrame], tasks: Sequence[pl.DataFrame]
                       ) -> list[pl.DataFrame]:
    """Every run's ``task_files`` with logical paths, matched to the first run's: the first
    BEFORE run is the reference of a comparison."""
    normal = [normalise(f, t) for f, t in zip(runs, tasks, strict=True)]
    paths = [f.get_column("path").unique().sort().to_list() for f in normal]
    ref, others = pair(paths[0], paths[1:])
    return [f.with_columns(path=pl.col("path").replace(names))
            for f, names in zip(normal, [ref, *others], strict=True)]
