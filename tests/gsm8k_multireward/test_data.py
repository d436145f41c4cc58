"""Dataset loading from local JSONL fixtures (no network) and prompt building."""

from __future__ import annotations

from pathlib import Path

import pytest
from gsm8k_multireward import DEFAULT_SYSTEM_PROMPT, GSM8KConfig, build_prompt, load_examples


def test_load_from_path(fixtures_dir: Path) -> None:
    rows = load_examples(path=str(fixtures_dir / "gsm8k" / "train.jsonl"))
    assert [row["answer"] for row in rows] == ["12", "1000", "-6", "14", "90"]  # blank line skipped
    first = rows[0]
    assert set(first) == {"question", "answer", "solution"}
    assert first["question"].startswith("A baker")
    assert first["solution"].endswith("#### 12")


def test_dataset_name_can_be_a_jsonl_file(fixtures_dir: Path) -> None:
    config = GSM8KConfig(dataset_name=str(fixtures_dir / "gsm8k" / "test.jsonl"))
    assert [row["answer"] for row in load_examples(config)] == ["27", "1200"]


@pytest.mark.parametrize(("split", "answers"), [("train", 5), ("test", 2)])
def test_dataset_name_can_be_a_directory_of_splits(
    fixtures_dir: Path, split: str, answers: int
) -> None:
    config = GSM8KConfig(dataset_name=str(fixtures_dir / "gsm8k"), dataset_split=split)
    assert len(load_examples(config)) == answers


def test_num_examples_limit(fixtures_dir: Path) -> None:
    config = GSM8KConfig(num_examples=2)
    rows = load_examples(config, path=str(fixtures_dir / "gsm8k" / "train.jsonl"))
    assert [row["answer"] for row in rows] == ["12", "1000"]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        load_examples(path=str(tmp_path / "nope.jsonl"))
    with pytest.raises(FileNotFoundError, match="not found"):
        load_examples(GSM8KConfig(dataset_name=str(tmp_path / "nope.jsonl")))
    with pytest.raises(FileNotFoundError, match=r"test\.jsonl"):
        load_examples(GSM8KConfig(dataset_name=str(tmp_path), dataset_split="test"))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("bad_no_marker.jsonl", "row 1: .*'####'"),
        ("bad_json.jsonl", "line 2: not valid JSON"),
        ("bad_no_question.jsonl", "row 1: missing or empty 'question'"),
    ],
)
def test_bad_rows(fixtures_dir: Path, name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_examples(path=str(fixtures_dir / name))


def test_build_prompt() -> None:
    # None asks for the boxed answer the grader reads; "" sends no system message at all.
    assert build_prompt("What is 2 + 2?", None) == [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": "What is 2 + 2?"},
    ]
    assert "\\boxed{}" in DEFAULT_SYSTEM_PROMPT
    assert build_prompt("What is 2 + 2?", "") == [{"role": "user", "content": "What is 2 + 2?"}]
    messages = build_prompt("What is 2 + 2?", "Be brief.")
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[1] == {"role": "user", "content": "What is 2 + 2?"}
