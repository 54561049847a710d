"""Start and always stop the real processes of the deployment tests (each in its own session,
so one ``killpg`` of its id ends it and its children), and correlate their run folder."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from testing.darshan_writer import write_logs_from_truth

HERE = Path(__file__).parent
REPO = HERE.parents[1]
BIN = Path(sys.executable).parent
CLIENT = HERE / "client.py"
#: every key of client.py's graph
KEYS = {*(f"burn-{i}" for i in range(8)), *(f"io-{i}" for i in range(4)), "gather-0"}


def env(run: Path | None = None, **extra: str) -> dict[str, str]:
    """This environment without any recording variables, plus ``extra``."""
    out = {k: v for k, v in os.environ.items()
           if not k.startswith(("DASK_CORRELATE_", "DASK_DISTRIBUTED__", "DARSHAN_", "DXT_"))
           and k != "LD_PRELOAD"}
    out["PATH"] = f"{BIN}{os.pathsep}{out.get('PATH', '')}"
    # client.py's task functions are pickled by reference: every Dask process imports it
    out["PYTHONPATH"] = os.pathsep.join(filter(None, (str(HERE), out.get("PYTHONPATH"))))
    if run is not None:
        out["DASK_CORRELATE_RUN_DIR"] = str(run)
    out.update({"DASK_CORRELATE_FLUSH_INTERVAL": "0.5", "DASK_CORRELATE_PROFILE": "off"})
    out.update(extra)
    return out


class Procs:
    """Background processes; ``stop`` ends those still running (their whole session)."""

    def __init__(self) -> None:
        self.running: list[subprocess.Popen] = []

    def start(self, cmd: list[str], log: Path, **kw) -> subprocess.Popen:
        fh = log.open("w")
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                             **kw)
        fh.close()
        self.running.append(p)
        return p

    def wait_all(self, timeout: float) -> None:
        for p in self.running:
            p.wait(timeout=timeout)

    def stop(self) -> None:
        for p in self.running:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        for p in self.running:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)


@contextlib.contextmanager
def processes() -> Iterator[Procs]:
    procs = Procs()
    try:
        yield procs
    finally:
        procs.stop()


def run_client(scheduler_file: Path, truth: Path, data: Path, environ: dict[str, str],
               workers: int, timeout: float = 120) -> None:
    data.mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, str(CLIENT), str(scheduler_file), str(truth),
                           str(data)], env={**environ, "CLIENT_WORKERS": str(workers)},
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]


def correlate(run: Path) -> tuple[pl.DataFrame, dict]:
    """``correlate RUN --no-reports`` as a user runs it; its tasks table and summary."""
    proc = subprocess.run([str(BIN / "correlate"), str(run), "--no-reports"], env=env(),
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = run / "correlated"
    return pl.read_parquet(out / "tasks.parquet"), json.loads((out / "summary.json").read_text())


def check_tasks(tasks: pl.DataFrame, truth: list[dict]) -> None:
    """Every task of the graph: one execution, on the thread and process that ran it, with
    its thread CPU."""
    by_key = {t["key"]: t for t in truth}
    assert set(by_key) == KEYS
    mine = tasks.filter(pl.col("key").is_in(list(KEYS)))
    assert sorted(mine["key"]) == sorted(KEYS), tasks["key"].to_list()
    for row in mine.iter_rows(named=True):
        obs = by_key[row["key"]]
        assert row["thread_id"] == obs["thread"], row
        assert row["pid"] == obs["pid"], row
        assert row["cpu_s"] is not None, row
        if row["key"].startswith("burn"):
            assert abs(row["cpu_s"] - obs["cpu"]) < 0.02 + 0.1 * obs["cpu"], row


def check_io(run: Path, tasks: pl.DataFrame, truth: list[dict], lib: str | None) -> None:
    """Each I/O task has exactly its own bytes, by thread id: from the logs of the Darshan
    runtime ``lib`` or, without one, from genuine logs written through libdarshan-util's
    writing calls of the calls each task recorded (client.py's ``ops``), each under the host
    its worker reported, correlated again: so the check runs on every machine."""
    if not lib:
        hosts = dict(zip(tasks["pid"].to_list(), tasks["host"].to_list(), strict=True))
        write_logs_from_truth(run, truth, hosts=hosts)
        tasks, summary = correlate(run)
        assert summary["io"]["captured"] is True, summary["io"]
    by_key = {t["key"]: t for t in truth}
    io = tasks.filter(pl.col("key").str.starts_with("io-"))
    assert io.height == 4
    for row in io.iter_rows(named=True):
        assert row["write_bytes"] == by_key[row["key"]]["written"], row
        assert row["read_bytes"] == by_key[row["key"]]["read"], row
        assert row["attribution"] == "exact-thread", row


def exports(run, lib) -> dict[str, str]:
    """`collect env`'s variables, as `eval "$(collect env ...)"` would set them."""
    out = subprocess.run([str(BIN / "collect"), "env", "-o", str(run), "--profile", "off",
                          "--flush-interval", "0.5", "--darshan", lib or "off"], env=env(),
                         capture_output=True, text=True, check=True).stdout
    pairs = (line.removeprefix("export ").split("=", 1) for line in out.splitlines()
             if line.startswith("export "))
    return {k: v.strip('"') for k, v in pairs}


def darshan_lib() -> str | None:
    from collectors.darshan_env import find_runtime

    return find_runtime("auto")[0]
