"""Public row schemas mapped onto the native user row: OOLONG-style, LongBench-style choice and
needle in a haystack, on rows written here in those schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fathom_rlm.documents import task_document
from fathom_rlm.userdata import FORMATS, UserRowError, grade_answer, load_rows, to_native
from fathom_rlm.userdata.formats import insert_needle

FIXTURES = Path(__file__).parent / "fixtures"


def test_every_format_is_named() -> None:
    assert list(FORMATS) == ["native", "oolong", "longbench", "needle", "ruler", "needle-tool"]
    with pytest.raises(ValueError, match="unknown row format 'csv'"):
        to_native("csv", {})


def test_oolong_rows_keep_their_answer_type_and_unwrap_list_answers() -> None:
    count, label = load_rows(FIXTURES / "oolong.jsonl", format="oolong")
    assert count.row_id == "17" and count.answer_kind == "number" and count.answer == "2"
    assert task_document(count).startswith("Date: Jan 02, 2023 || User: 4471")
    assert grade_answer("2", count).correct and not grade_answer("3", count).correct
    assert label.answer_kind == "text" and label.answer == "negative"
    assert grade_answer("Negative", label).correct
    assert count.spans == () and count.depth is None


def test_longbench_rows_become_choice_questions_with_their_choices() -> None:
    (row,) = load_rows(FIXTURES / "longbench.jsonl", format="longbench")
    assert row.row_id == "lb-1" and row.answer_kind == "choice" and row.answer == "C"
    assert row.question.splitlines() == [
        "Why did the keeper move the lamp?",
        "(A) To save oil",
        "(B) Because the tower leaned",
        "(C) To signal the fishing fleet",
        "(D) Because the glass cracked",
    ]
    assert grade_answer("(C) To signal the fishing fleet", row).correct
    assert not grade_answer("A", row).correct


def test_needle_rows_insert_the_needle_and_make_it_the_evidence() -> None:
    inserted, present = load_rows(FIXTURES / "needle.jsonl", format="needle")
    text = task_document(inserted)
    needle = "The secret ingredient of the pie is juniper."
    assert text.count(needle) == 1
    ((start, end),) = inserted.spans
    assert text[start:end] == needle
    # At 40% of the haystack, moved on to the end of a sentence: no sentence is cut.
    assert 0.35 < start / len(text) < 0.5 and text[start - 2 : start] == ". "
    # A haystack that already holds the needle is used as it is.
    assert task_document(present) == "Rain fell. The code to the gate is 4417. The wind rose."
    assert present.answer == "4417"


def test_insert_needle_at_the_ends() -> None:
    assert insert_needle("One. Two.", "N.", 0) == "N. One. Two."
    assert insert_needle("One. Two.", "N.", 100) == "One. Two. N."
    assert insert_needle("no full stop here", "N.", 50) == "no full stop here N."


@pytest.mark.parametrize(
    ("format", "row", "field"),
    [
        ("oolong", {"question": "q?", "answer": "1"}, "context_window_text"),
        ("oolong", {"context_window_text": "text", "question": "q?"}, "answer"),
        (
            "longbench",
            {"context": "c", "question": "q?", "choice_A": "a", "answer": "A"},
            "choice_B",
        ),
        (
            "longbench",
            {"context": "c", "question": "q", **{f"choice_{x}": x for x in "ABCD"}, "answer": "E"},
            "answer",
        ),
        ("needle", {"haystack": "h.", "question": "q?", "answer": "a"}, "needle"),
        (
            "needle",
            {
                "haystack": "h.",
                "needle": "n.",
                "question": "q?",
                "answer": "a",
                "depth_percent": 150,
            },
            "depth_percent",
        ),
        ("needle", ["not", "an", "object"], "row"),
    ],
)
def test_a_row_missing_a_field_of_its_format_names_it(
    tmp_path: Path, format: str, row: object, field: str
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(UserRowError) as error:
        load_rows(path, format=format)
    assert str(error.value).startswith(f"{path}: line 1: {field}: ")
