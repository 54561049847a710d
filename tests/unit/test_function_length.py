"""No function of correlate/ or collectors/ runs over 60 lines, unless its ``def`` line says
in a comment why it reads better long (``# long: …``)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 60


def long_functions(source: str) -> list[tuple[str, int]]:
    """(name, lines) of the functions over ``MAX_LINES`` whose ``def`` line carries no
    ``# long:`` reason."""
    lines = source.splitlines()
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = (node.end_lineno or node.lineno) - node.lineno + 1
            if n > MAX_LINES and "# long:" not in lines[node.lineno - 1]:
                out.append((node.name, n))
    return out


def test_no_function_runs_over_60_lines():
    found = [f"{path.relative_to(REPO)}: {name} ({n} lines)"
             for top in ("correlate", "collectors") for path in sorted((REPO / top).rglob("*.py"))
             for name, n in long_functions(path.read_text())]
    assert not found, found


def test_the_length_check_finds_a_long_function_and_reads_its_reason():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    assert long_functions(f"def f():\n{body}") == [("f", MAX_LINES + 1)]
    assert long_functions(f"def f():  # long: one table\n{body}") == []
    assert long_functions(f"def f():\n{body[:-len('    x59 = 59') - 1]}") == []
