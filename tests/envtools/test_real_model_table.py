"""benchmarks/real_model_table.py on small real runs: an `fathom_lab.evaluate` folder of scripted
policies and a legacy `vf-eval` results file made from the real model's own gsm8k completions.
Every saved score is checked against the core before the table is written, and a tampered score
makes the command fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "benchmarks" / "real_model_table.py"
FIXTURES = Path(__file__).parent / "fixtures" / "real_model"

pytestmark = pytest.mark.timeout(600)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(TABLE), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=540, cwd=REPO)


@pytest.fixture(scope="module")
def scripted_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two scripted policies on the same 3 tasks, as `fathom_lab.evaluate` saves them."""
    out = tmp_path_factory.mktemp("scripted")
    evaluate = [sys.executable, "-m", "fathom_lab.evaluate", "--n", "3", "--doc-tokens", "4000"]
    policies = ["--policies", "fathom-closed-book,fathom-grep-only", "--out", str(out)]
    done = subprocess.run(
        [*evaluate, *policies], capture_output=True, text=True, timeout=540, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def gsm8k_results(path: Path) -> Path:
    """The real model's saved gsm8k completions, written as legacy vf-eval's results.jsonl."""
    lines = []
    for number, fixture in enumerate(sorted(FIXTURES.glob("gsm8k-*.json"))):
        saved = json.loads(fixture.read_text())
        lines.append(
            {
                "example_id": number,
                "completion": [{"role": "assistant", "content": saved["completion"]}],
                "answer": saved["answer"],
                "token_usage": {"output_tokens": saved["completion_tokens"]},
                "is_truncated": saved["is_truncated"],
                **saved["scores"],
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_table_checks_every_score_then_writes(scripted_runs: Path, tmp_path: Path) -> None:
    results = gsm8k_results(tmp_path / "results.jsonl")
    out = tmp_path / "table"
    done = run("--fathom", f"4K={scripted_runs}", "--gsm8k", f"GSM8K={results}", "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "6 transcripts replayed" in done.stdout and "every saved score matches" in done.stdout
    table = json.loads((out / "table.json").read_text())
    rows = {row["policy"]: row for row in table["fathom"]}
    assert set(rows) == {"fathom-closed-book", "fathom-grep-only"}
    closed = rows["fathom-closed-book"]
    assert closed["mistakes"] == {"no_tool_call": 3} and closed["tool_calls"] == 0.0
    assert rows["fathom-grep-only"]["touched_document"] == 1.0
    (gsm8k,) = table["gsm8k"]
    assert gsm8k["rollouts"] == 2 and gsm8k["boxed"]["mean"] == 0.0
    assert gsm8k["mistakes"]["no_boxed_answer"] == 2 and gsm8k["mistakes"]["cut_at_token_cap"] == 1
    assert "| 4K | fathom-grep-only | 3 |" in (out / "table.md").read_text()


def test_a_tampered_score_fails_the_table(scripted_runs: Path, tmp_path: Path) -> None:
    results = gsm8k_results(tmp_path / "results.jsonl")
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    lines[0]["correct_answer"] = lines[0]["reward"] = 1.0  # paid for a wrong answer
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = run("--gsm8k", f"GSM8K={results}", "--out", str(tmp_path / "table"))
    assert done.returncode == 1
    assert "correct_answer: saved 1.0 != replayed 0.0" in done.stderr


def test_runs_on_different_rows_cannot_share_a_label(scripted_runs: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    evaluate = [sys.executable, "-m", "fathom_lab.evaluate", "--n", "2", "--doc-tokens", "4000"]
    args = ["--policies", "fathom-closed-book", "--out", str(other)]
    assert subprocess.run([*evaluate, *args], capture_output=True, cwd=REPO).returncode == 0
    done = run("--fathom", f"4K={scripted_runs}", f"4K={other}", "--out", str(tmp_path / "t"))
    assert done.returncode == 2 and "do not hold the same tasks" in done.stderr
