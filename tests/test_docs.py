"""The documentation that must stay true: table docs match the schema, README commands match CI,
the README's layout matches the tree."""

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


def _layout() -> str:
    readme = (REPO / "README.md").read_text()
    section = readme.split("\n## Layout\n", 1)[1]
    return section.split("\n## ", 1)[0]


def test_readme_layout_names_every_module_and_only_modules_that_exist():
    import re

    layout = _layout()
    words = set(re.findall(r"[\w.]+", layout))
    files = [f for top in ("collectors", "correlate", "testing", "benchmarks", "docs", "samples")
             for f in (REPO / top).rglob("*.py") if f.name != "__init__.py"
             and f.name != "__main__.py"]
    missing = sorted(str(f.relative_to(REPO)) for f in files if f.name not in words)
    assert not missing, f"README layout does not name {missing}"
    named = set(re.findall(r"[\w]+\.py\b", layout))
    existing = {f.name for f in files} | {"pyproject.toml"}
    assert named <= existing, f"README layout names {sorted(named - existing)}, not in the tree"
    folders = set(re.findall(r"^ *([\w]+)/ ", layout, flags=re.M))
    for folder in folders:
        assert any(p.is_dir() for p in REPO.rglob(folder)), folder
