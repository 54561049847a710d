"""``correlate compare`` on real runs of one workload (compare_job.py under ``collect`` on a
LocalCluster, 2 worker processes × 2 threads), each side recorded twice: a baseline, and one
planted change per variant (more CPU in one prefix, more bytes at the same time, slower
storage, a longer sleep, spilling, more tasks, fewer threads per worker), a pair without any
change and a pair where only the machine is loaded (CPU burners beside the AFTER runs).
Each planted change must be named first and explained by the right dimension; the no-change
pair names nothing; the loaded pair is named as a machine change, not as one prefix's.

The Darshan logs are always written through ``testing.darshan_writer`` from the calls the tasks
(and Dask's spill store) recorded, never a real darshan-runtime: the storage throttle is a
sleep inside each recorded call, which a real LD_PRELOAD would not count as I/O time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import compare_job as job
import polars as pl
import pytest

from correlate.cli import main
from testing.darshan_writer import write_logs_from_truth

HERE = Path(__file__).parent
RUNS = 2  # per side
# (not `alone`: the runs are recorded with the machine alone, `machine_alone` in `runs`; the
# tests only read them)
pytestmark = [pytest.mark.cluster]


def _record(tmp: Path, name: str, mode: str) -> Path:
    """One run of ``mode``; runs of one mode have the same command (each writes its truth
    into its own working folder), so only a planted change differs in their setup. Its
    Darshan logs and tables are made later (``_correlate``)."""
    run, work = tmp / name, tmp / f"work-{name}"
    work.mkdir()
    cmd = [sys.executable, "-m", "collectors.launcher", "-o", str(run), "--darshan", "off",
           "--flush-interval", "0.5", "--", sys.executable, str(HERE / "compare_job.py"), mode,
           "truth.json", str(tmp / "data")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run


def _correlate(runs: list[Path]) -> None:
    """Each run's Darshan logs, from the calls its tasks recorded, then its tables (compare
    reads RUN/correlated), by two processes (the machine's two cores) taking every other run."""
    for run in runs:
        write_logs_from_truth(run, json.loads((run.parent / f"work-{run.name}" / "truth.json")
                                              .read_text()))
    code = ("import sys; from correlate.cli import main\n"
            "for run in sys.argv[1:]: assert main(['run', run, '--no-reports']) == 0, run")
    procs = [subprocess.Popen([sys.executable, "-c", code, *map(str, runs[k::2])],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for k in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]


def _burners(n: int = 4) -> list[subprocess.Popen]:
    """CPU burners beside a run: the machine is loaded, nothing in the job changes."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, machine_alone) -> dict[str, list[Path]]:
    """Every variant's runs, recorded round-robin (base, base, cpu, …, loaded, then again), so
    that a drift of the machine's own load hits every side alike, while no other test runs;
    then correlated, beside the other tests."""
    tmp = tmp_path_factory.mktemp("compare-real")
    with machine_alone():
        out = _record_all(tmp)
    _correlate([r for rs in out.values() for r in rs])
    # the no-change pair compares base runs 0, 1 with 2, 3: one of each round on each side
    out["base"] = [out["base"][j] for j in (0, 2, 1, 3)]
    return out


def _record_all(tmp: Path) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for i in range(RUNS):
        for mode in (m for m in job.MODES if m != "twice"):
            for _ in range(2 if mode == "base" else 1):  # base: both sides of the no-change pair
                n = len(out.get(mode, []))
                out.setdefault(mode, []).append(_record(tmp, f"{mode}-{n}", mode))
        procs = _burners()
        try:
            out.setdefault("loaded", []).append(_record(tmp, f"loaded-{i}", "base"))
            # one step's bytes doubled, on the loaded machine
            out.setdefault("twice", []).append(_record(tmp, f"twice-{i}", "twice"))
        finally:
            for p in procs:
                p.kill()
                p.wait()
    return out


def _compare(runs: dict[str, list[Path]], mode: str, out: Path, *extra: str) -> dict:
    """``compare BASE1 BASE2 --after M1 M2``: the page's data and the prefix table."""
    before = runs["base"][:RUNS]
    after = runs["base"][RUNS:] if mode == "none" else runs[mode]
    assert main(["compare", *map(str, before), "--after", *map(str, after), "-o", str(out),
                 *extra]) == 0
    page = (out / "compare.html").read_text()
    data = json.loads(page.split('<script type="application/json" id="compare-data">', 1)[1]
                      .split("</script>", 1)[0])
    data["prefix"] = pl.read_parquet(out / "compare_prefix.parquet")
    data["md"] = (out / "compare.md").read_text()
    return data


def _first(data: dict) -> tuple[str, list[str]]:
    """The first named item and its reasons (the text after " — ", split at "; ")."""
    assert data["explained"], (data["machine"], data["prefix"].head(6))
    item, why = data["explained"][0]["item"], data["explained"][0]["why"]
    return item, why.split(" — ", 1)[1].split(". Before the executions")[0].split("; ")


# (mode, planted prefix, what its first reason starts with, text that must be in the reasons)
PLANTED = [
    ("cpu", "burn", "CPU per execution +", "CPU per execution +"),
    ("bytes", "load", "bytes read +100% (8.0 MiB → 16.0 MiB)", "bytes read +100%"),
    ("slowio", "load", "I/O time +", "slower storage, not more data"),
    ("sleep", "nap", "none of it is CPU or I/O", "no source explains (sleeping"),
    ("more", "crunch", "2.0× the executions (8 → 16)", "CPU per execution unchanged"),
]


@pytest.mark.parametrize(("mode", "prefix", "lead", "said"), PLANTED,
                         ids=[p[0] for p in PLANTED])
def test_a_planted_change_is_named_first_with_its_own_dimension(runs, tmp_path, mode, prefix,
                                                                 lead, said):
    data = _compare(runs, mode, tmp_path / mode)
    item, reasons = _first(data)
    assert item == prefix, data["explained"]
    assert reasons[0].startswith(lead), reasons
    assert any(said in r for r in reasons), reasons
    top = data["prefix"].row(0, named=True)
    assert top["item"] == prefix and top["significant"] and top["rank"] == 1
    # the first line of "What changed" in compare.md is the planted prefix (unless the machine
    # line stands before it)
    changed = data["md"].split("## What changed\n\n", 1)[1].split("\n## ", 1)[0]
    bullets = [b for b in changed.splitlines() if b.startswith("- `")]
    assert bullets[0].startswith(f"- `{prefix}`: job span share "), bullets


def test_more_cpu_is_explained_by_cpu_not_by_an_unknown(runs, tmp_path):
    data = _compare(runs, "cpu", tmp_path / "cpu")
    burn = data["prefix"].filter(pl.col("item") == "burn").row(0, named=True)
    assert burn["cpu_changed"] and burn["p_cpu"] < 1e-3
    # 3× the CPU work: the thread CPU per execution roughly triples
    cpu_b, cpu_a = (burn[f"cpu_s_{s}"] / burn[f"executions_{s}"] for s in ("before", "after"))
    assert 2.5 < cpu_a / cpu_b < 3.5
    why = data["explained"][0]["why"]
    assert "no source explains" not in why and "I/O time" not in why


def test_spilling_is_named_with_the_spilled_bytes(runs, tmp_path):
    data = _compare(runs, "spill", tmp_path / "spill")
    assert data["explained"][0]["item"] == "hold", data["explained"]
    why = data["explained"][0]["why"]
    assert "results spilled to disk" in why and "none before" in why, why
    hold = data["prefix"].filter(pl.col("item") == "hold").row(0, named=True)
    assert hold["spilled_bytes_before"] == 0 and hold["spilled_bytes_after"] > 0
    assert "spilled_bytes" in hold["counts_changed"]


def test_fewer_threads_per_worker_is_a_setup_change_named_first(runs, tmp_path):
    data = _compare(runs, "threads", tmp_path / "threads")
    assert data["setup"][0] == "nthreads: 2 → 1", data["setup"]
    assert data["machine"] and "nthreads: 2 → 1" in data["machine"]
    md = data["md"]
    assert md.index("nthreads: 2 → 1") < md.index("## What changed")


def test_a_pair_without_a_change_names_nothing(runs, tmp_path):
    data = _compare(runs, "none", tmp_path / "none")
    assert data["explained"] == [] and data["machine"] is None, (
        data["explained"], data["machine"])
    assert not data["prefix"]["significant"].any()
    assert data["setup"] == []
    assert "- no change beyond noise: no prefix moved a count" in data["md"]


def test_a_loaded_machine_is_named_as_such_not_as_one_prefix(runs, tmp_path):
    data = _compare(runs, "loaded", tmp_path / "loaded")
    assert data["setup"] == []
    assert data["machine"], data["prefix"].select("item", "wall_s_delta", "cpu_s_delta",
                                                  "stretched", "significant")
    assert "unrelated prefix(es)" in data["machine"] and "burn" in data["machine"]
    # the collectors recorded the hosts' load: the line says the machine was loaded, with the
    # figures of both sides (four busy loops beside 2 × 2 threads)
    assert "the hosts were more loaded (processes runnable per CPU " in data["machine"], (
        data["machine"])
    assert "host load is not recorded" not in data["machine"]
    assert "crunch" in data["machine"]
    assert data["explained"] == [], data["explained"]
    machine = data["prefix"].filter(pl.col("machine"))
    assert (machine["wall_s_delta"] > 0).all() and not machine["cpu_changed"].any()


def test_more_bytes_per_file_in_the_file_view(runs, tmp_path):
    out = tmp_path / "by-file"
    _compare(runs, "bytes", out, "--by", "file")
    d = pl.read_parquet(out / "compare_file.parquet")
    inputs = d.filter(pl.col("item").str.contains("/input-"))
    assert inputs.height == job.N_TASKS and inputs["significant"].all()
    assert (inputs["read_bytes_rel"] == 1.0).all()
    assert set(d.head(job.N_TASKS)["item"]) == set(inputs["item"])


def test_one_run_per_side_still_works_and_a_run_equals_itself(runs, tmp_path):
    base = runs["base"][0]
    assert main(["compare", str(base), str(base), "-o", str(tmp_path / "same")]) == 0
    d = pl.read_parquet(tmp_path / "same" / "compare_prefix.parquet")
    assert not d["significant"].any() and (d["wall_s_delta"] == 0).all()
    assert (d["p_wall"] == 1.0).all()
    assert main(["compare", str(base), str(runs["sleep"][0]), "-o", str(tmp_path / "one")]) == 0
    d = pl.read_parquet(tmp_path / "one" / "compare_prefix.parquet")
    assert d.row(0, named=True)["item"] == "nap"


def test_runs_with_their_own_scratch_and_output_folders_change_no_file_by_path(runs, tmp_path):
    """Every run writes into its own folder (``work-<run>/out``, workers' scratch below
    ``work-<run>/scratch``): matched by their logical path, no file is new, gone or changed."""
    out = tmp_path / "by-file"
    _compare(runs, "none", out, "--by", "file")
    d = pl.read_parquet(out / "compare_file.parquet")
    assert not d["significant"].any(), d.filter(pl.col("significant")).select(
        "item", "counts_changed")
    assert (d["executions_before"] > 0).all() and (d["executions_after"] > 0).all(), d["item"]
    written = d.filter(pl.col("item").str.contains("/out/out-"))["item"].sort().to_list()
    ref, other = runs["base"][0].name, runs["base"][1].name  # the first before run, the next
    assert len(written) == job.N_TASKS // 2 and all(
        w.endswith(f"/{{work-{ref}→work-{other}}}/out/out-{i}.bin")
        for i, w in enumerate(written)), written


def test_a_step_reading_twice_on_a_loaded_machine_is_named_first_with_its_bytes(runs, tmp_path):
    """AFTER: ``load`` reads each input file twice, and four CPU burners run beside the job.
    The step whose bytes doubled is named first, with its bytes; the timings that moved
    everywhere else are the loaded machine's (its recorded load said so), not slower storage."""
    data = _compare(runs, "twice", tmp_path / "twice")
    item, reasons = _first(data)
    assert item == "load", data["explained"]
    assert reasons[0] == "bytes read +100% (8.0 MiB → 16.0 MiB)", reasons
    assert not any("slower storage" in why["why"] for why in data["explained"]), (
        data["explained"])
    assert data["machine"] and "the hosts were more loaded" in data["machine"], data["machine"]
    load = data["prefix"].filter(pl.col("item") == "load").row(0, named=True)
    assert load["read_ops_after"] == 2 * load["read_ops_before"] and not load["machine"]
    changed = data["md"].split("## What changed\n\n", 1)[1].split("\n## ", 1)[0]
    assert "more loaded" in changed, changed
