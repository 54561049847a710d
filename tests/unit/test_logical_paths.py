"""Files matched across runs by a logical path (``correlate.compare.logical_paths``): the paths as
distributed and ``tempfile`` lay them out, differing between two runs of one job only by the
run's own folders."""

from __future__ import annotations

import polars as pl

from correlate.compare.logical_paths import logical_task_files, normalise, pair


def _run(paths_by_execution: dict[int, list[str]], starts: dict[int, int]
         ) -> tuple[pl.DataFrame, pl.DataFrame]:
    files = pl.DataFrame([{"execution_id": e, "path": p} for e, ps in paths_by_execution.items()
                          for p in ps], schema={"execution_id": pl.Int64, "path": pl.String})
    tasks = pl.DataFrame({"execution_id": list(starts), "start_ns": list(starts.values())},
                         schema={"execution_id": pl.Int64, "start_ns": pl.Int64})
    return files, tasks


def test_worker_directories_shuffle_ids_and_temporary_folders_are_normalised():
    files, tasks = _run({
        # the second shuffle (by its first task) is touched first in the table's order
        0: ["/scratch/j/dask-scratch-space/worker-x1y2z3/shuffle-9f8e-2/3"],
        1: ["/scratch/j/dask-scratch-space/worker-a1b2c3/shuffle-4d5c-1/0",
            "/tmp/tmpk3_9ab1z/part.0.parquet"],
        2: ["/old/dask-worker-space/worker-q9/storage/x", "/data/tmpfolder/a.csv"],
    }, {0: 300, 1: 100, 2: 200})
    got = dict(zip(*normalise(files, tasks).select("physical_path", "path"), strict=True))
    assert got == {
        "/scratch/j/dask-scratch-space/worker-x1y2z3/shuffle-9f8e-2/3":
            "/scratch/j/<worker-local>/shuffle-2/3",
        "/scratch/j/dask-scratch-space/worker-a1b2c3/shuffle-4d5c-1/0":
            "/scratch/j/<worker-local>/shuffle-1/0",
        "/tmp/tmpk3_9ab1z/part.0.parquet": "/tmp/<tmp>/part.0.parquet",
        "/old/dask-worker-space/worker-q9/storage/x": "/old/<worker-local>/storage/x",
        "/data/tmpfolder/a.csv": "/data/tmpfolder/a.csv",  # not a tempfile name: 7 letters
    }


def test_the_runs_own_folders_are_paired_and_other_files_are_not():
    before = ["/data/in.csv", "/s/job-17/out/a.parquet", "/s/job-17/out/b.parquet",
              "/s/job-17/<worker-local>/shuffle-1/0", "/s/job-17/out/gone.parquet"]
    after = ["/data/in.csv", "/s/job-18/out/a.parquet", "/s/job-18/out/b.parquet",
             "/s/job-18/<worker-local>/shuffle-1/0", "/s/job-18/out/new.parquet",
             "/data/in2.csv"]
    ref, (other,) = pair(before, [after])
    label = "/s/{job-17→job-18}"
    assert ref == {p: p.replace("/s/job-17", label) for p in before if "job-17" in p}
    assert other == {p: p.replace("/s/job-18", label) for p in after if "job-18" in p}
    matched = {ref.get(p, p) for p in before} & {other.get(p, p) for p in after}
    # the file names decide: gone.parquet and new.parquet stay a file gone and a new one
    assert matched == {"/data/in.csv", f"{label}/out/a.parquet", f"{label}/out/b.parquet",
                       f"{label}/<worker-local>/shuffle-1/0"}


def test_a_folder_with_two_candidates_is_not_paired():
    """Two output folders of the other run that could each be the reference's: no guess."""
    ref, (other,) = pair(["/o/r1/a"], [["/o/r2/a", "/o/r3/a"]])
    assert ref == {} and other == {}


def test_folders_differing_at_two_depths_are_paired_in_rounds():
    before = ["/s/job-1/out-x/a", "/s/job-1/out-x/b", "/s/job-1/log/l"]
    after = ["/s/job-2/out-y/a", "/s/job-2/out-y/b", "/s/job-2/log/l"]
    ref, (other,) = pair(before, [after])
    assert {ref[p] for p in before} == {other[p] for p in after} == {
        "/s/{job-1→job-2}/{out-x→out-y}/a", "/s/{job-1→job-2}/{out-x→out-y}/b",
        "/s/{job-1→job-2}/log/l"}


def test_every_run_of_a_side_is_matched_to_the_first_before_run():
    runs = [_run({0: [f"/w/run-{i}/dask-scratch-space/worker-{i}a/shuffle-{i}f-1/0",
                      f"/w/run-{i}/out/o.bin"]}, {0: 1}) for i in range(3)]
    out = logical_task_files([f for f, _ in runs], [t for _, t in runs])
    paths = [sorted(f["path"].to_list()) for f in out]
    assert paths[0] == paths[1] == paths[2] == [
        "/w/{run-0→run-1}/<worker-local>/shuffle-1/0", "/w/{run-0→run-1}/out/o.bin"]
    assert sorted(out[2]["physical_path"]) == sorted(runs[2][0]["path"])
