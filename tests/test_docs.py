"""The documentation that must stay true: table docs match the schema, README commands match CI."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_tables_doc_is_generated_from_the_schema():
    spec = importlib.util.spec_from_file_location("gen", REPO / "docs" / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (REPO / "docs" / "tables.md").read_text() == gen.render(), (
        "docs/tables.md is stale: run `python docs/generate.py`")


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO / "README.md").read_text().splitlines()
    block = readme[readme.index("```bash") + 1: readme.index("```bash") + 3]
    test_command = block[1].split("  #")[0].rstrip()  # the line's comment is for the reader
    assert test_command in (REPO / ".ci" / "run").read_text()
