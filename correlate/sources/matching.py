"""Worker address ↔ host ↔ Darshan process, for importers of runs recorded without our plugins.

Imported runs name workers by address (``tcp://IP:port``) while Darshan names processes by host
name and pid: nothing links them directly. Each piece of evidence is used, strongest first, and
every decision keeps its evidence (``Match.evidence``, written to ``summary.json``):

1. ``thread-id``: a worker's task thread ids (when recorded) are DXT pthread ids of exactly one
   process.
2. ``worker.e local directory``: the distributed log pairs the address with a local directory,
   and one process's Darshan name records lie under it.
3. Host of each worker IP: from the workers matched so far (one IP, one host), the only host
   there is, or by elimination (the only IP without a host and the only worker host left).
4. ``time-overlap``: the remaining workers with executions and the remaining worker processes
   are paired *all at once* by an exact one-to-one assignment (Hungarian method) that explains
   the most executor-thread segments inside the workers' task windows. A pair is kept only
   when its process has enough segments, nearly all of them inside that worker's windows, and
   the best assignment without that pair explains clearly fewer segments; otherwise the worker
   stays unmatched and says why.
5. ``elimination``: the last worker and the last worker process of one host.

Segments of a process's main (event-loop) thread are left out of the overlap: startup and
comms I/O happens there outside any task, on every worker alike.

In-process workers (the MiniApp's cluster) need none of this: their address carries their
process's pid (``inproc://HOST/PID/N``, ``pid_of``), and ``hosts_by_pid`` names its host.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import numpy as np
import polars as pl

#: a process needs at least this many executor-thread segments to be placed by time overlap
MIN_SEGMENTS = 20
#: and at least this share of them inside the worker's task windows
MIN_INSIDE = 0.9
#: the best assignment without a pair must explain this many segments fewer (and this share of
#: the process's segments) for the pair to be kept
MIN_MARGIN = 10
MIN_MARGIN_SHARE = 0.05
#: cost of a forbidden pair (another host) in the assignment
_FORBIDDEN = 1e12


class Match(NamedTuple):
    host: str | None
    pid: int | None
    how: str
    evidence: dict[str, Any] = {}


def ip_of(worker: str | None) -> str | None:
    """The host part of a worker address (``tcp://10.1.2.3:4567`` → ``10.1.2.3``)."""
    m = re.match(r"^\w+://\[?([^\]/]+?)\]?(?::\d+)?(?:/|$)", worker or "")
    return m.group(1) if m else worker



def pid_of(worker: str | None) -> int | None:
    """The pid in an in-process worker's address (``inproc://HOST/PID/N``), else None."""
    m = re.match(r"inproc://[^/]+/(\d+)/", worker or "")
    return int(m.group(1)) if m else None


def hosts_by_pid(workers: pl.DataFrame, darshan_logs: pl.DataFrame | None) -> dict[int, str]:
    """pid → host of ``workers`` (``pid``, ``worker`` address): the host name a Darshan log of
    that pid gives, else the address's IP."""
    out = {p: ip for p, w in workers.select("pid", "worker").unique().drop_nulls().iter_rows()
           if (ip := ip_of(w))}
    if darshan_logs is not None:
        out.update(dict(darshan_logs.select("pid", "host").drop_nulls().iter_rows()))
    return out

# ---------------------------------------------------------------- exact assignment

def assignment(cost: np.ndarray) -> list[tuple[int, int]]:
    """Minimum-cost one-to-one assignment of rows to columns (Hungarian method, O(n²m)):
    (row, column) pairs, min(rows, columns) of them. Exact, for any rectangular matrix."""
    cost = np.asarray(cost, dtype=np.float64)
    if cost.size == 0:
        return []
    if cost.shape[0] > cost.shape[1]:
        return [(r, c) for c, r in assignment(cost.T)]
    n, m = cost.shape
    u, v = np.zeros(n + 1), np.zeros(m + 1)
    p = np.zeros(m + 1, dtype=np.int64)  # p[j]: row (1-based) assigned to column j
    way = np.zeros(m + 1, dtype=np.int64)
    for i in range(1, n + 1):
        p[0], j0 = i, 0
        minv = np.full(m + 1, np.inf)
        used = np.zeros(m + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = p[j0]
            cur = cost[i0 - 1] - u[i0] - v[1:]
            free = ~used[1:]
            better = free & (cur < minv[1:])
            minv[1:][better] = cur[better]
            way[1:][better] = j0
            cand = np.where(free, minv[1:], np.inf)
            j1 = int(np.argmin(cand)) + 1
            delta = cand[j1 - 1]
            u[p[used]] += delta
            v[used] -= delta
            minv[~used] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    return [(int(p[j]) - 1, j - 1) for j in range(1, m + 1) if p[j]]


def _total(cost: np.ndarray, pairs: list[tuple[int, int]]) -> float:
    return float(sum(cost[r, c] for r, c in pairs))


# ---------------------------------------------------------------- evidence

def merged_windows(ex: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Per worker, the union of its execution windows as sorted disjoint (s, e) intervals
    (concurrent tasks overlap, so an as-of join on raw windows would miss containment)."""
    out = {}
    for (w,), g in ex.select("worker", s="local_start_ns", e="local_stop_ns").group_by("worker"):
        g = g.sort("s").with_columns(reach=pl.col("e").cum_max())
        g = g.with_columns(block=(pl.col("s") > pl.col("reach").shift(1)).fill_null(True)
                           .cum_sum())
        out[w] = g.group_by("block").agg(pl.col("s").min(), e=pl.col("e").max()).sort("s").drop(
            "block")
    return out


def executor_midpoints(segs: pl.DataFrame, procs: pl.DataFrame) -> dict[tuple[str, int],
                                                                          pl.DataFrame]:
    """(host, pid) → sorted midpoints (``mid``) of the segments not on its main thread."""
    main = procs.select("host", "pid", "main_thread_id")
    s = (segs.select("host", "pid", "thread_id",
                     mid=(pl.col("local_start_ns") + pl.col("local_stop_ns")) // 2)
         .join(main, on=["host", "pid"], how="inner")
         .filter((pl.col("thread_id") != pl.col("main_thread_id")).fill_null(True)))
    return {(h, p): g.select("mid").sort("mid")
            for (h, p), g in s.group_by("host", "pid")}


def inside(mids: pl.DataFrame, windows: pl.DataFrame) -> int:
    """How many midpoints fall inside the disjoint windows."""
    if mids.is_empty() or windows.is_empty():
        return 0
    return mids.join_asof(windows, left_on="mid", right_on="s", strategy="backward").filter(
        pl.col("mid") <= pl.col("e")).height


# ---------------------------------------------------------------- matching

def by_thread(ex: pl.DataFrame, segs: pl.DataFrame) -> dict[str, Match]:
    threads = segs.select("host", "pid", "thread_id").unique().drop_nulls()
    by = (ex.filter(pl.col("thread_id").is_not_null()).select("worker", "thread_id")
          .unique().join(threads, on="thread_id"))
    out = {}
    for (worker,), g in by.group_by("worker"):
        procs = g.select("host", "pid").unique()
        if procs.height == 1:
            out[worker] = Match(procs["host"][0], int(procs["pid"][0]), "thread-id",
                                {"shared_thread_ids": g.height})
    return out


def ip_hosts(matched: dict[str, Match], hosts: list[str], ips: list[str]
             ) -> dict[str, tuple[str, str]]:
    """Worker IP → (host, why): from matched workers (when they agree), the only worker host,
    or elimination (one IP without a host, one worker host without an IP)."""
    seen: dict[str, set[str]] = {}
    for w, m in matched.items():
        if m.host and m.pid is not None:
            seen.setdefault(ip_of(w) or "", set()).add(m.host)
    out = {ip: (next(iter(h)), "matched workers on this IP") for ip, h in seen.items()
           if len(h) == 1}
    if len(hosts) == 1:
        for ip in ips:
            out.setdefault(ip, (hosts[0], "the only host with worker processes"))
    left_ips = [ip for ip in ips if ip not in out]
    left_hosts = [h for h in hosts if h not in {v[0] for v in out.values()}]
    if len(left_ips) == 1 and len(left_hosts) == 1:
        out[left_ips[0]] = (left_hosts[0], "elimination (the only IP and worker host left)")
    return out


def by_overlap(workers: list[str], procs: list[tuple[str, int]],
               windows: dict[str, pl.DataFrame], mids: dict[tuple[str, int], pl.DataFrame],
               ip_host: dict[str, tuple[str, str]]) -> tuple[dict[str, Match], dict[str, str]]:
    """One assignment of ``workers`` (with windows) to ``procs`` (with executor segments)
    maximising segments inside windows minus segments outside; (matches, why not) per worker."""
    why: dict[str, str] = {}
    ws = [w for w in workers if w in windows]
    ps = [p for p in procs if mids.get(p) is not None and mids[p].height >= MIN_SEGMENTS]
    for w in workers:
        if w not in windows:
            why[w] = "no execution windows: no I/O to compare with a process"
    if not ws or not ps:
        for w in ws:
            why[w] = "no unmatched worker process with enough executor-thread I/O left"
        return {}, why
    n_in, allowed = _inside_counts(ws, ps, windows, mids, ip_host)
    total = np.array([mids[p].height for p in ps])
    cost = np.where(allowed, (total - n_in) - n_in, _FORBIDDEN).astype(np.float64)
    best = [(i, j) for i, j in assignment(cost) if allowed[i, j]]
    base = _total(cost, best)
    out: dict[str, Match] = {}
    for i, j in best:
        w, p = ws[i], ps[j]
        share = n_in[i, j] / total[j]
        alt_cost = cost.copy()
        alt_cost[i, j] = _FORBIDDEN
        alt = [(a, b) for a, b in assignment(alt_cost) if allowed[a, b] and (a, b) != (i, j)]
        # (a worker the alternative leaves out explains nothing: cost 0)
        margin = _total(cost, alt) - base
        rivals = [k for k in range(len(ps)) if k != j and allowed[i, k]]
        runner = max(rivals, key=lambda k: n_in[i, k] / total[k]) if rivals else None
        evidence = {"executor_segments": int(total[j]), "inside_windows": int(n_in[i, j]),
                    "share_inside": round(float(share), 4), "margin_segments": int(margin),
                    "candidates": int(allowed[i].sum()),
                    "runner_up": None if runner is None else {
                        "host": ps[runner][0], "pid": ps[runner][1],
                        "share_inside": round(float(n_in[i, runner] / total[runner]), 4)}}
        needed = max(MIN_MARGIN, MIN_MARGIN_SHARE * total[j])
        if share < MIN_INSIDE:
            why[w] = (f"best process {p[0]}:{p[1]} has only {share:.0%} of its executor-thread "
                      f"segments inside this worker's task windows (< {MIN_INSIDE:.0%})")
        elif margin < needed:
            why[w] = (f"ambiguous: pairing with {p[0]}:{p[1]} explains only {int(margin)} "
                      f"segment(s) more than the best assignment without it (< {needed:.0f})")
        else:
            out[w] = Match(p[0], p[1], f"time-overlap ({n_in[i, j]} of {total[j]} executor "
                           "segments inside its task windows, one-to-one assignment)",
                           evidence)
    for i, w in enumerate(ws):
        if w not in out and w not in why:
            why[w] = ("no process left for it in the one-to-one assignment" if allowed[i].any()
                      else "no unmatched worker process on its host")
    return out, why


def _inside_counts(ws: list[str], ps: list[tuple[str, int]], windows: dict[str, pl.DataFrame],
                   mids: dict[tuple[str, int], pl.DataFrame],
                   ip_host: dict[str, tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Per (worker, process): the process's executor segments inside the worker's windows,
    and whether the pair is allowed (a worker on a known host pairs only with its processes)."""
    n_in = np.zeros((len(ws), len(ps)), dtype=np.int64)
    allowed = np.ones_like(n_in, dtype=bool)
    for i, w in enumerate(ws):
        host = ip_host.get(ip_of(w) or "", (None, ""))[0]
        for j, p in enumerate(ps):
            if host is not None and p[0] != host:
                allowed[i, j] = False
                continue
            n_in[i, j] = inside(mids[p], windows[w])
    return n_in, allowed


def by_elimination(workers: list[str], matched: dict[str, Match],
                   candidates: list[tuple[str, int]], ip_host: dict[str, tuple[str, str]]
                   ) -> dict[str, Match]:
    """The last worker and last worker process of a host, when the host has as many worker
    addresses as worker processes."""
    taken = {(m.host, m.pid) for m in matched.values()}
    out = {}
    for host in sorted({h for h, _ in candidates}):
        on_host = [w for w in workers if ip_host.get(ip_of(w) or "", (None,))[0] == host]
        left_w = [w for w in on_host if w not in matched]
        left_p = [p for p in candidates if p[0] == host and p not in taken]
        n_procs = sum(1 for p in candidates if p[0] == host)
        if len(left_w) == 1 and len(left_p) == 1 and len(on_host) == n_procs:
            out[left_w[0]] = Match(host, left_p[0][1], "elimination (last worker process on "
                                   "host)", {"worker_processes_on_host": n_procs})
    return out


def match_workers(ex: pl.DataFrame, segs: pl.DataFrame, procs: pl.DataFrame,
                  workers: list[str], log_pairs: dict[str, str]
                  ) -> tuple[dict[str, Match], dict[tuple[str, int], str]]:
    """Every worker's match (unmatched ones with ``pid`` None and ``how`` saying why), and
    why each worker process left over is not matched. ``procs``: host, pid, role,
    local_directory, main_thread_id (role ``worker`` = a Dask worker process)."""
    cand_df = procs.filter((pl.col("role") == "worker") & pl.col("host").is_not_null())
    candidates = [(h, int(p)) for h, p in cand_df.select("host", "pid").iter_rows()]
    out = by_thread(ex, segs)
    by_dir = {d: (h, p) for h, p, d in cand_df.select("host", "pid", "local_directory")
              .iter_rows() if d}
    for worker, d in log_pairs.items():
        if worker in workers and worker not in out and d in by_dir:
            out[worker] = Match(*by_dir[d], "worker.e local directory", {"local_directory": d})
    # a process claimed twice (inconsistent evidence) is matched to neither
    claims: dict[tuple[str | None, int | None], list[str]] = {}
    for w, m in out.items():
        claims.setdefault((m.host, m.pid), []).append(w)
    for ws in claims.values():
        if len(ws) > 1:
            for w in ws:
                del out[w]
    hosts = sorted({h for h, _ in candidates})
    ips = sorted({ip_of(w) or "" for w in workers})
    ip_host = ip_hosts(out, hosts, ips)
    windows = merged_windows(ex.filter(pl.col("worker").is_in(workers)))
    mids = executor_midpoints(segs, cand_df)
    why: dict[str, str] = {}
    for _ in range(3):  # overlap and elimination feed each other's host knowledge
        taken = {(m.host, m.pid) for m in out.values()}
        rest = [w for w in workers if w not in out]
        free = [p for p in candidates if p not in taken]
        found, why = by_overlap(rest, free, windows, mids, ip_host)
        found = _consistent_hosts(found, ip_host, why)
        out.update(found)
        ip_host = ip_hosts(out, hosts, ips)
        out.update(by_elimination(workers, out, candidates, ip_host))
        ip_host = ip_hosts(out, hosts, ips)
        if not found:
            break
    for (w, m) in list(out.items()):  # every match's process I/O against its windows
        if m.host is None or m.pid is None:  # an unmatched worker: no process to look at
            continue
        if w in windows and (m.host, m.pid) in mids and "inside_windows" not in m.evidence:
            n = mids[(m.host, m.pid)].height
            out[w] = m._replace(evidence={**m.evidence, "executor_segments": n,
                                          "inside_windows": inside(mids[(m.host, m.pid)],
                                                                   windows[w])})
    for w in workers:
        if w in out:
            continue
        host, how = ip_host.get(ip_of(w) or "", (None, ""))
        reason = why.get(w, "no evidence")
        out[w] = Match(host, None, (f"host only ({how}); process not identified: {reason}"
                                    if host else f"unmatched: {reason}"), {"host_from": how})
    return out, _process_reasons(candidates, out, ip_host, windows)


def contradicted(matches: dict[str, Match]) -> list[str]:
    """Matched workers whose process's executor I/O mostly falls outside their task windows
    (a wrong pairing, or clocks far apart): said in a warning, the match is kept."""
    return [w for w, m in sorted(matches.items())
            if m.evidence.get("executor_segments", 0) >= MIN_SEGMENTS
            and m.evidence["inside_windows"] < MIN_INSIDE * m.evidence["executor_segments"]]


def _consistent_hosts(found: dict[str, Match], ip_host: dict[str, tuple[str, str]],
                      why: dict[str, str]) -> dict[str, Match]:
    """Drop overlap matches that put one IP on two hosts (an IP is one node)."""
    hosts: dict[str, set[str | None]] = {}
    for w, m in found.items():
        hosts.setdefault(ip_of(w) or "", set()).add(m.host)
    for ip, known in ip_host.items():
        if ip in hosts:
            hosts[ip].add(known[0])
    out = {}
    for w, m in found.items():
        if len(hosts[ip_of(w) or ""]) == 1:
            out[w] = m
        else:
            why[w] = f"the overlap places workers of {ip_of(w)} on several hosts"
    return out


def _process_reasons(candidates: list[tuple[str, int]], matches: dict[str, Match],
                     ip_host: dict[str, tuple[str, str]], windows: dict[str, pl.DataFrame]
                     ) -> dict[tuple[str, int], str]:
    taken = {(m.host, m.pid) for m in matches.values()}
    out = {}
    for p in candidates:
        if p in taken:
            continue
        on_host = [w for w in matches if ip_host.get(ip_of(w) or "", (None,))[0] == p[0]]
        left = [w for w in on_host if matches[w].pid is None]
        if not on_host:
            out[p] = "no worker address is known to be on this host"
        elif not left:
            out[p] = "every worker address on this host is matched to another process"
        elif all(w not in windows for w in left):
            out[p] = (f"{len(left)} unmatched worker(s) on this host, none with execution "
                      "windows to compare its I/O with")
        else:
            out[p] = f"ambiguous among {len(left)} unmatched worker(s) on this host"
    return out
