"""The documentation that must stay true: table docs match the schema, README commands match CI,
docs/layout.md matches the tree, the README stays a short guide, every link resolves and the
docs index names every page."""

from __future__ import annotations

import importlib.util
import re
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
    return (REPO / "docs" / "layout.md").read_text()


def test_layout_names_every_module_and_only_modules_that_exist():
    layout = _layout()
    words = set(re.findall(r"[\w.]+", layout))
    files = [f for top in ("collectors", "correlate", "testing", "benchmarks", "docs", "samples")
             for f in (REPO / top).rglob("*.py") if f.name != "__init__.py"
             and f.name != "__main__.py"]
    missing = sorted(str(f.relative_to(REPO)) for f in files if f.name not in words)
    assert not missing, f"docs/layout.md does not name {missing}"
    named = set(re.findall(r"[\w]+\.py\b", layout))
    existing = {f.name for f in files} | {"pyproject.toml"}
    assert named <= existing, f"docs/layout.md names {sorted(named - existing)}, not in the tree"
    folders = set(re.findall(r"^ *([\w]+)/ ", layout, flags=re.M))
    for folder in folders:
        assert any(p.is_dir() for p in REPO.rglob(folder)), folder


#: the README is a guide; the reference lives in docs/
README_MAX_BYTES = 12 * 1024


def test_readme_is_a_short_guide():
    size = len((REPO / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, (
        f"README.md is {size:,} bytes (at most {README_MAX_BYTES:,}): move reference to docs/")


def _markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


#: ``[text](target)`` links; a target with a scheme (https:, mailto:) or a bare #anchor is not
#: a file of the repository
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _local_links(text: str) -> list[str]:
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t) and not
            t.startswith("#")]


def test_every_link_in_readme_and_docs_resolves_to_a_file():
    broken = [f"{md.relative_to(REPO)}: {target}"
              for md in _markdown_files() for target in _local_links(md.read_text())
              if not (md.parent / target.split("#", 1)[0]).exists()]
    assert not broken, f"links to missing files: {broken}"


def test_link_check_finds_a_broken_link(tmp_path):
    """The check above would catch a link to a missing file (and skips only web links)."""
    text = "[ok](README.md) [web](https://x.org/a) [gone](docs/missing.md#part) [top](#use)"
    assert _local_links(text) == ["README.md", "docs/missing.md#part"]


def test_docs_index_names_every_page():
    index = (REPO / "docs" / "README.md").read_text()
    linked = {t.split("#", 1)[0] for t in _local_links(index)}
    pages = {p.name for p in (REPO / "docs").glob("*.md")} - {"README.md"}
    assert pages <= linked, f"docs/README.md does not link {sorted(pages - linked)}"



def test_no_page_is_a_diary_of_passes():
    """Figures are a current reference ordered by topic; history lives in commit messages."""
    diary = re.compile(r"\b(first|second|third|fourth|fifth|sixth|seventh|last|this|previous)"
                       r" pass\b|\bbefore the last\b", re.I)
    found = [f"{md.relative_to(REPO)}:{n}: {line.strip()[:60]}" for md in _markdown_files()
             for n, line in enumerate(md.read_text().splitlines(), 1) if diary.search(line)]
    assert not found, f"pass-by-pass history in the docs: {found}"


#: scripts of the user's own that the guides use as examples
EXAMPLE_SCRIPTS = {"my_pipeline.py", "my_client.py"}
#: a path of the repository named in the docs: it starts with one of its top-level folders
#: (not inside a web address: perfetto.dev/docs/...)
REPO_PATH = re.compile(r"(?<![\w./-])((?:correlate|collectors|testing|benchmarks|tests|samples"
                       r"|docs)/[\w./-]*[\w/])")


def _stale_names(text: str, files: set[str]) -> list[str]:
    """Repository paths and module file names in ``text`` that the tree does not have."""
    paths = [p for p in REPO_PATH.findall(text) if not (REPO / p).exists()]
    names = [n for n in re.findall(r"(?<![\w/.-])(\w+\.py)\b", text)
             if n not in files and n not in EXAMPLE_SCRIPTS]
    return paths + names


def _tree_files() -> set[str]:
    return {p.name for top in ("collectors", "correlate", "testing", "benchmarks", "docs",
                               "samples", "tests") for p in (REPO / top).rglob("*.py")}


def test_every_file_the_docs_name_exists():
    """A module renamed or moved leaves no stale name in the README or docs/."""
    files = _tree_files()
    stale = [f"{md.relative_to(REPO)}: {name}" for md in _markdown_files()
             for name in _stale_names(md.read_text(), files)]
    assert not stale, f"the docs name files that do not exist: {stale}"


def test_stale_name_check_finds_a_moved_module():
    files = _tree_files()
    text = ("`correlate/attribute_old.py` and gone_module.py; `correlate/schema/` and "
            "engine.py and my_client.py exist; so does https://perfetto.dev/docs/x")
    assert _stale_names(text, files) == ["correlate/attribute_old.py", "gone_module.py"]


def _readme_first_run() -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## A first run"):]
    start = section.index("```\n") + len("```\n")
    return section[start:section.index("```", start)].splitlines()


def _excerpt_mismatches(excerpt: list[str], printed: list[str]) -> list[str]:
    """Lines of ``excerpt`` that are not, in order, lines of ``printed``; a line that ends in
    ", …" was trimmed there and needs only to begin a printed line."""
    printed = [line.rstrip() for line in printed]
    at, missing = 0, []
    for line in excerpt:
        trimmed = line.endswith(", …")
        want = line[:-len(" …")] if trimmed else line.rstrip()
        hit = next((i for i in range(at, len(printed))
                    if (printed[i].startswith(want) if trimmed else printed[i] == want)), None)
        if hit is None:
            missing.append(line)
        else:
            at = hit + 1
    return missing


def test_readme_first_run_is_what_correlate_prints(tmp_path):
    """The README's sample summary is a trimmed copy of what `correlate samples/run-v1` prints
    today, in the same order."""
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "correlate.cli", str(REPO / "samples" / "run-v1"),
                           "-o", str(tmp_path / "out"), "--no-reports"], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "80"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    excerpt = _readme_first_run()
    assert excerpt[0].startswith("64 executions"), excerpt[:1]
    missing = _excerpt_mismatches(excerpt, proc.stdout.splitlines())
    assert not missing, f"the README's first run shows lines correlate does not print: {missing}"


def test_excerpt_check_finds_a_changed_line():
    printed = ["a 1", "b 2, c 3", "d 4"]
    assert _excerpt_mismatches(["a 1", "b 2, …", "d 4"], printed) == []
    assert _excerpt_mismatches(["d 4", "a 1"], printed) == ["a 1"]  # order
    assert _excerpt_mismatches(["a 2"], printed) == ["a 2"]


def test_attribution_page_explains_every_method_label():
    from correlate.schema.outputs import ATTRIBUTION

    labels = ATTRIBUTION.split(":", 1)[1].split(",")
    page = (REPO / "docs" / "attribution.md").read_text()
    rows = set(re.findall(r"^\| `([\w-]+)` \|", page, flags=re.M))
    assert rows == set(labels), (sorted(set(labels) - rows), sorted(rows - set(labels)))
    order = page[page.index("The Enum lists them"):page.index("An execution's `attribution`")]
    assert re.findall(r"`([\w-]+)`", order) == labels


#: a heading that names an issue or a stop of the work: docs/performance.md is a reference by
#: topic, and which issue asked for a figure lives in the commit messages
DIARY_HEADING = re.compile(r"\bissues?\b|\bstop \d+", re.I)
#: text that points at another section by its position: sections move, names stay (link by name)
POSITIONAL = re.compile(r"\bsections? (?:above|below|up)\b|\blast section\b|\bsee (?:above|below)\b"
                        r"|\" (?:above|below)\b", re.I)


def _headings(text: str) -> list[str]:
    """The Markdown headings of ``text``, fenced code left out."""
    fenced, found = False, []
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            found.append(line)
    return found


def _diary_marks(text: str) -> list[str]:
    """Headings that name an issue or a stop, and positional pointers (a pointer may be broken
    across lines)."""
    prose = " ".join(text.split())
    return ([h for h in _headings(text) if DIARY_HEADING.search(h)]
            + [m.group(0) for m in POSITIONAL.finditer(prose)])


def test_performance_page_is_a_reference_by_topic():
    marks = _diary_marks((REPO / "docs" / "performance.md").read_text())
    assert not marks, f"docs/performance.md names issues in headings or points by position: {marks}"


def test_diary_check_finds_issue_headings_and_positional_pointers():
    diary = ("## Yappi on long jobs (issue 49)\n## Issue 44: reading\n### Tag pool (stop 38)\n"
             "## Yappi\n    # a comment in a code block, issue 3\n"
             "At the quiet run two sections up, and the last section; see\nabove. The section "
             "below and the sections above; see \"Not met\" above, see below.\n")
    assert _diary_marks(diary) == [
        "## Yappi on long jobs (issue 49)", "## Issue 44: reading", "### Tag pool (stop 38)",
        "sections up", "last section", "see above", "section below", "sections above",
        "\" above", "see below"]
    topic = ("## Collector cost\nThe CPU above plain, below 0.03% of it; an issue's target "
             "([Reports](#reports)).\n")
    assert _diary_marks(topic) == []


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_links_into_the_performance_page_name_its_headings():
    page = REPO / "docs" / "performance.md"
    anchors = {_slug(h) for h in _headings(page.read_text())}
    links = [(md, t.split("#", 1)[1]) for md in _markdown_files() for t in LINK.findall(
        md.read_text()) if "#" in t and (t.split("#", 1)[0].endswith("performance.md")
                                         or (md == page and t.startswith("#")))]
    broken = [f"{md.relative_to(REPO)}: #{a}" for md, a in links if a not in anchors]
    assert links and not broken, f"links to headings docs/performance.md does not have: {broken}"
