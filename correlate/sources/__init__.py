"""Source adapters: each input format's reader turns a folder into the canonical ``RunFrames``
(``detect.load`` picks the adapter). This module holds only the list of formats, so that the
CLI can offer them without importing an adapter."""

from __future__ import annotations

#: format name -> (adapter module, what the folder must hold)
FORMATS: dict[str, tuple[str, str]] = {
    "run-folder": ("correlate.sources.run_folder",
                   "procs/<role>-<host>-<pid>/proc.json (+ manifest.json from `collect`)"),
    "mofka-csv": ("correlate.sources.mofka_csv",
                  "scheduler_transition.csv or worker_transition.csv (Mofka-Dask)"),
    "miniapp": ("correlate.sources.miniapp", "task_stream.yaml (Recup MiniApp Reports/)"),
    "task-stream": ("correlate.sources.task_stream",
                    "task_stream.parquet (+ workers.json, darshan/) from Dask's task stream"),
}
