"""Shared fixtures: one warm grader for the fast tests, and process-inspection helpers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from gsm8k_multireward import MathGrader

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def grader() -> Iterator[MathGrader]:
    with MathGrader(max_workers=2, timeout=5.0) as shared:
        yield shared


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


def child_pids(parent: int | None = None) -> set[int]:
    """Live or zombie children of ``parent`` (default: this process), read from /proc."""
    parent = os.getpid() if parent is None else parent
    children = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may contain spaces; fields after the closing paren are fixed.
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == parent:
            children.add(int(entry.name))
    return children


def pid_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def list_children():
    """``list_children()`` -> set of child pids of this process."""
    return child_pids


@pytest.fixture
def is_alive():
    """``is_alive(pid)`` -> True while the process exists and is not a zombie."""
    return pid_alive
