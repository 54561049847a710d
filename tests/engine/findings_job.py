"""Jobs with one planted performance problem each, for the findings and critical-path tests
(run under ``collect`` by ``tests/engine/test_findings.py``). ``python findings_job.py VARIANT
TRUTH``: the job writes TRUTH (JSON: what it planted, and the keys it made).

- ``chain``: a serial chain of four 0.4 s sleeps beside 24 short parallel sleeps on 2 workers ×
  2 threads: the chain sets the span.
- ``clean``: the same short parallel work without the chain.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

CHAIN = 4
CHAIN_S = 0.4
SHORT = 24
SHORT_S = 0.05


def nap(seconds: float, *deps: object) -> float:
    time.sleep(seconds)
    return seconds


def run(variant: str, truth_path: str) -> None:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        futures, chain = [], []
        if variant == "chain":
            prev = None
            for i in range(CHAIN):
                key = f"chain-{i}"
                prev = client.submit(nap, CHAIN_S, *([prev] if prev is not None else []),
                                     key=key)
                chain.append(key)
                futures.append(prev)
        futures += [client.submit(nap, SHORT_S, key=f"short-{i}") for i in range(SHORT)]
        client.gather(futures)
    Path(truth_path).write_text(json.dumps({"variant": variant, "chain": chain}))


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2])
