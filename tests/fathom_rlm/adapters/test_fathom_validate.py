"""The v1 task's model-free check: what it accepts and rejects, and verifiers' own `validate`
command running it (0.3.1's `validate`, 0.4.0's `vf-validate`) on the local runtime, offline."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.adapters.scoring import gold_problems
from fathom_rlm.documents import TaskRecord, build_split

pytestmark = pytest.mark.xdist_group("test_fathom_validate")

DOC_TOKENS = 16_000
ROWS = 3

VALIDATE_SCRIPT = {"0.3.1": "validate", "0.4.0": "vf-validate"}


@pytest.fixture(scope="module")
def rows() -> list[TaskRecord]:
    return build_split("eval", ROWS, doc_tokens=DOC_TOKENS)


def test_every_gold_answer_is_gradable(rows: list[TaskRecord]) -> None:
    arguments = FathomArguments(doc_tokens=DOC_TOKENS)
    assert [gold_problems(row, arguments) for row in rows] == [[]] * ROWS


def test_an_ungradable_gold_or_a_span_outside_the_document_is_reported(
    rows: list[TaskRecord],
) -> None:
    arguments = FathomArguments(doc_tokens=DOC_TOKENS)
    row = next(r for r in rows if r.spans)
    # No answer longer than `max_answer_chars` can score, the gold included.
    long_gold = "Q" * (arguments.max_answer_chars + 1)
    problems = gold_problems(replace(row, answer=long_gold, aliases=()), arguments)
    assert problems == [f"the gold answer {long_gold!r} scores correctness=0.0, not 1"]
    outside = gold_problems(replace(row, spans=((10**9, 10**9 + 5),)), arguments)
    assert len(outside) == 1 and "is not inside the" in outside[0]


@pytest.mark.parametrize("verifiers_version", sorted(VALIDATE_SCRIPT))
def test_verifiers_validate_command_passes_every_task(
    matrix: Any, tmp_path: Path, verifiers_version: str
) -> None:
    python = matrix.python(verifiers_version)
    argv = [
        matrix.script(python, VALIDATE_SCRIPT[verifiers_version]),
        "fathom-rlm",
        "-n",
        str(ROWS),
        "--rich",
        "false",
        # verifiers' validate defaults to Prime's remote runtime; these tasks need none.
        "--runtime.type",
        "subprocess",
        "--taskset.doc-tokens",
        str(DOC_TOKENS),
        "--run.name",
        "check",
        "-o",
        tmp_path / "out",
    ]
    matrix.run(argv, cwd=tmp_path)
    summary = json.loads((tmp_path / "out" / "check" / "summary.json").read_text())
    assert summary["total"] == ROWS
    assert summary["outcomes"]["valid"] == ROWS, summary
    # 0.4.0 also scores each untouched task (no agent ran): it must not already pass.
    if verifiers_version == "0.4.0":
        assert summary["checks"]["noop"]["valid"] == ROWS, summary
