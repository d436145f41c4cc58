"""Every Python file of the environments, `packages/`, `src/`, `benchmarks/` and `training/` stays
small enough to read whole.

A file over 600 lines (450 in the environments, the shipped packages) or a function over 80
lines is split along its seams, not allowed to grow.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_FILE_LINES = 600
MAX_ENVIRONMENT_FILE_LINES = 450
MAX_FUNCTION_LINES = 80


def _sources() -> list[Path]:
    tops = ("src", "environments", "packages", "benchmarks", "training")
    files = [p for top in tops for p in (ROOT / top).rglob("*.py")]
    return sorted(p for p in files if not any(part.startswith(".") for part in p.parts))


def test_the_sources_are_found() -> None:
    names = {p.name for p in _sources()}
    assert {"evaluate.py", "restricted.py", "rewards.py", "gsm8k_grading.py"} <= names


def test_no_file_over_the_line_limit() -> None:
    long_files = {}
    for path in _sources():
        lines = path.read_text(encoding="utf-8").count("\n")
        name = str(path.relative_to(ROOT))
        limit = MAX_ENVIRONMENT_FILE_LINES if name.startswith("environments/") else MAX_FILE_LINES
        if lines > limit:
            long_files[name] = (lines, limit)
    assert long_files == {}, f"files over their line limit (lines, limit): {long_files}"


def test_no_function_over_the_line_limit() -> None:
    long_functions = {}
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    where = f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
                    long_functions[where] = lines
    assert long_functions == {}, f"functions over {MAX_FUNCTION_LINES} lines: {long_functions}"
