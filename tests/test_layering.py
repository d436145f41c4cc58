"""Imports run one way: labs -> envtools -> environments, and in fathom's lab audit -> ladder.

A shipped environment imports neither toolkit nor lab; the toolkit serves the labs' ladders
through entry points, never by importing them; the honest ladder never imports an attack.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LABS = ("fathom_lab", "gsm8k_lab")
RULES = {
    "environments": ("envtools", *LABS),
    "src/envtools": LABS,
    "labs/fathom_rlm/fathom_lab/ladder": ("fathom_lab.audit", "fathom_lab.policies"),
    "labs/gsm8k_multireward": ("fathom_lab",),
}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, wherever the import statement stands."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("folder", sorted(RULES))
def test_no_import_runs_against_the_layers(folder: str) -> None:
    forbidden = RULES[folder]
    wrong = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in (ROOT / folder).rglob("*.py")
        for name in imported_modules(path)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    }
    assert not wrong, sorted(wrong)
