"""What a worker's closing record says of its profile reaches correlate's warnings."""

from __future__ import annotations

import json

from correlate.sources.run_folder import load
from testing.synthetic.run import write_run


def test_threads_yappi_could_not_hook_are_said(tmp_path):
    run = tmp_path / "run"
    write_run(run, workers=2, executions=40, segments=200)
    proc = sorted(run.glob("procs/worker-*"))[0]
    info = json.loads((proc / "proc.json").read_text())
    before = [w for w in load(run).warnings if "could not be put on" in w]
    info["closed"]["profile_threads_unhooked"] = 3
    (proc / "proc.json").write_text(json.dumps(info))
    after = [w for w in load(run).warnings if "could not be put on" in w]
    assert before == []
    assert after == [f"{proc.name}: Yappi's hook could not be put on 3 thread(s) as they "
                     "started (another thread was installing its own; they ran unprofiled): "
                     "their work outside tasks has no function rows"]
