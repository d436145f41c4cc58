"""Rows of public long-context datasets in their own field layouts (fixtures written here with
invented content: `oolong_synth.jsonl`, `ruler.jsonl`, `needle_tool.jsonl`) load unchanged, and
grade as the datasets' own metrics do, except where docs/rewards.md says they differ.

The datasets' metrics are restated here from their public definitions, as test oracles:
OOLONG-synth's answer parser and scorer, and RULER's `string_match_all` for needle rows."""

from __future__ import annotations

import ast
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import dateutil.parser
import pytest
from fathom_rlm.documents import TaskRecord, task_document
from fathom_rlm.userdata import UserRowError, grade_answer, load_rows

FIXTURES = Path(__file__).parent / "fixtures"
PHRASES = ("more common", "less common", "same frequency")


def _rows(name: str) -> list[dict[str, Any]]:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def oolong_official(row: dict[str, Any], output: str) -> float:
    """OOLONG-synth's score of `output`: the text after the last colon (the whole output when
    it has none and is short, else its last word), "*" and brackets dropped; a long candidate
    holding a comparison phrase is that phrase. Gold: the first element of the stored list.
    1 for an equal string, or a comparison phrase inside the gold; a number earns 0.75 ** its
    distance; a date earns 1 when it parses (month first) to the gold date."""
    answer = row["answer"]
    if "datetime" in answer:
        gold: Any = datetime.strptime(answer, "[datetime.date(%Y, %m, %d)]")
    else:
        gold = ast.literal_eval(answer)[0]
    if ":" not in output:
        candidate = output if len(output) < 20 else output.split()[-1]
    else:
        candidate = output.split(":")[-1].strip().replace("*", "").replace("[", "")
        candidate = candidate.replace("]", "")
        if len(candidate) >= 20:
            candidate = next((p for p in PHRASES if p in candidate), candidate)
    if str(candidate) == str(gold):
        return 1.0
    if candidate in PHRASES:
        return float(candidate in str(gold))
    if row["answer_type"] == "ANSWER_TYPE.NUMERIC":
        try:
            return 0.75 ** abs(int(gold) - int(candidate))
        except ValueError:
            return 0.0
    if row["answer_type"] == "ANSWER_TYPE.DATE":
        try:
            return float(dateutil.parser.parse(candidate) == gold)
        except (ValueError, OverflowError):
            return 0.0
    return 0.0


# (row, answer, OOLONG's score, correct here, why they differ or "")
OOLONG_CASES = [
    (0, "Answer: 6", 1.0, True, ""),
    (0, "6", 1.0, True, ""),
    (0, "Answer: 6 or 7", 0.0, False, ""),
    (0, "Answer: 7", 0.75, False, "partial credit is its own metric, not correctness"),
    (0, "6 messages", 0.0, True, "a number with words around it is read here"),
    (1, "Label: spam", 1.0, True, ""),
    (1, "spam", 1.0, True, ""),
    (1, "Label: ham", 0.0, False, ""),
    (1, "Label: spam or ham", 0.0, False, ""),
    (1, "Label: Spam", 0.0, True, "text is compared without case here"),
    (1, "The least common label is spam", 1.0, False, "no last-word parse"),
    (1, "It is spam, not ham", 0.0, False, ""),
    (1, "I counted them all, and the least common is: spam", 1.0, False, "no last-colon parse"),
    (2, "Answer: ham is more common than spam", 1.0, True, ""),
    (2, "more common", 1.0, True, ""),
    (2, "Answer: more common than", 1.0, True, ""),
    (2, "Answer: ham is less common than spam", 0.0, False, ""),
    (2, "less common", 0.0, False, ""),
    (2, "Answer: ham is more common than, or less common than, spam", 1.0, False, "a hedge"),
    (2, "Answer: label ham is more common than label spam", 1.0, True, ""),
    (2, "I counted: ham is more common than spam", 1.0, True, ""),
    (2, "Answer: ham is **more common than** spam", 1.0, True, ""),
    (2, "Answer: spam is more common than ham", 1.0, False, "swapped subjects say the opposite"),
    (2, "Answer: 4471 is more common than 9120", 1.0, False, "a sentence must be the one asked"),
    (2, "Answer: ham is not more common than spam", 1.0, False, "a negation"),
    (2, "Answer: ham isn't more common than spam", 1.0, False, "a negation"),
    (2, "Answer: ham is more common than spam, or equally common", 1.0, False, "a hedge"),
    (2, "Answer: more common than spam. Just kidding, ham is rarer", 1.0, False, "taken back"),
    (2, "Is ham more common than spam? No: spam is more common than ham.", 1.0, False, "twice"),
    (2, "Answer: ham is more common than spam or less com\u200bmon", 1.0, False, "hidden"),
    (2, "Answer: ham is more common than spam or less c\u043emmon", 1.0, False, "hidden"),
    (5, "Answer: spam is less common after 2024-04-01", 1.0, False, "not the sentence asked"),
    (5, "Answer: spam is more or less common before 2024-04-01", 1.0, False, "a hedge"),
    (7, "Answer: 8802 is more common than 6645", 1.0, True, ""),
    (7, "Answer: 6645 is more common than 8802", 1.0, False, "swapped subjects say the opposite"),
    (7, "more common", 1.0, True, ""),
    (3, "User: 3310", 1.0, True, ""),
    (3, "3310", 1.0, True, ""),
    (3, "User: 5127", 0.0, False, ""),
    (4, "Date: 03/09/2024", 1.0, True, ""),
    (4, "03/09/2024", 1.0, True, ""),
    (4, "Date: 2024-03-09", 1.0, True, ""),
    (4, "Date: March 9, 2024", 1.0, True, ""),
    (4, "Date: 09/03/2024", 0.0, False, ""),
    (4, "Date: 9th of March 2024", 1.0, False, "only the usual writings of a date are listed"),
    (5, "Answer: spam is less common before 2024-04-01", 1.0, True, ""),
    (5, "less common", 1.0, True, ""),
    (5, "Answer: spam is more common before 2024-04-01", 0.0, False, ""),
    (6, "Answer: March 2024", 1.0, True, ""),
    (6, "March 2024", 1.0, True, ""),
    (6, "Answer: April 2024", 0.0, False, ""),
]


@pytest.fixture(scope="module")
def oolong() -> tuple[list[dict[str, Any]], list[TaskRecord]]:
    return _rows("oolong_synth.jsonl"), load_rows(FIXTURES / "oolong_synth.jsonl", format="oolong")


@pytest.mark.parametrize(("index", "answer", "official", "correct", "differs"), OOLONG_CASES)
def test_oolong_rows_grade_as_oolongs_metric(
    oolong: tuple[list[dict[str, Any]], list[TaskRecord]],
    index: int,
    answer: str,
    official: float,
    correct: bool,
    differs: str,
) -> None:
    rows, records = oolong
    assert oolong_official(rows[index], answer) == pytest.approx(official)
    assert grade_answer(answer, records[index]).correct is correct
    # Where no difference is documented, the two scores are equal.
    assert bool(differs) == (official != float(correct))


@pytest.mark.parametrize(
    ("answer", "partial"),
    [("Answer: 6", 1.0), ("Answer: 7", 0.75), ("Answer: 4", 0.75**2), ("Answer: 16", 0.75**10)],
)
def test_oolong_numbers_get_oolongs_partial_credit_apart_from_correctness(
    oolong: tuple[list[dict[str, Any]], list[TaskRecord]], answer: str, partial: float
) -> None:
    rows, records = oolong
    grade = grade_answer(answer, records[0])
    assert grade.partial == pytest.approx(partial) == oolong_official(rows[0], answer)
    assert grade.correct is (partial == 1.0)
    assert grade_answer("Answer: 6 or 7", records[0]).partial == 0.0  # a candidate list


def test_oolong_rows_load_unchanged_with_the_first_list_element_as_gold(
    oolong: tuple[list[dict[str, Any]], list[TaskRecord]], tmp_path: Path
) -> None:
    rows, records = oolong
    assert [r.row_id for r in records] == [str(row["id"]) for row in rows]
    kinds = ["number", "text", "comparison", "text", "text", "comparison", "text", "comparison"]
    assert [r.answer_kind for r in records] == kinds
    assert [r.number_credit_base for r in records] == [0.75, *[None] * 7]
    assert [r.answer for r in records] == [
        "6",
        "spam",
        "more common than",
        "3310",
        "03/09/2024",
        "less common",
        "March 2024",
        "more common than",
    ]
    assert task_document(records[0]) == rows[0]["context_window_text"]  # never the labels
    # The metric takes the first element of the stored list; so does the mapping.
    two = {**rows[1], "answer": "['spam', 'ham']"}
    path = tmp_path / "two.jsonl"
    path.write_text(json.dumps(two) + "\n", encoding="utf-8")
    (first,) = load_rows(path, format="oolong")
    assert first.answer == "spam" and not grade_answer("ham", first).correct


def ruler_string_match_all(outputs: list[str], prediction: str) -> float:
    """RULER's needle metric: the share of the expected values found in the reply, any case."""
    return sum(v.lower() in prediction.lower() for v in outputs) / len(outputs)


# (row, answer, correct here, why it differs from string_match_all or "")
RULER_CASES = [
    (0, "4721936", True, ""),
    (0, "The special code for quiet-lantern in the text above is 4721936.", True, ""),
    (0, "1067742", False, ""),
    (0, "It is 4721936", False, "a value inside other words is not read (containment pays lists)"),
    (0, "4721936 or 8830215", False, "containment pays a candidate list; here it is wrong"),
    (1, "8830215, 1067742", True, ""),
    (1, "1067742 and 8830215", True, ""),
    (1, "8830215", False, ""),
    (2, "5B1E07C2-93D4-4A8F-B6E1-2F0C9D7A4E31", True, ""),
    (2, "5b1e07c2 93d4 4a8f b6e1 2f0c9d7a4e31", False, ""),
]


@pytest.mark.parametrize(("index", "answer", "correct", "differs"), RULER_CASES)
def test_ruler_rows_grade_as_string_match_all(
    index: int, answer: str, correct: bool, differs: str
) -> None:
    rows = _rows("ruler.jsonl")
    record = load_rows(FIXTURES / "ruler.jsonl", format="ruler")[index]
    official = ruler_string_match_all(rows[index]["outputs"], answer)
    assert grade_answer(answer, record).correct is correct
    assert bool(differs) == ((official == 1.0) != correct)


def test_ruler_rows_split_the_prompt_into_text_and_question() -> None:
    rows = _rows("ruler.jsonl")
    records = load_rows(FIXTURES / "ruler.jsonl", format="ruler")
    assert [r.row_id for r in records] == ["0", "1", "2"]
    assert [r.answer_kind for r in records] == ["text", "list", "text"]
    for row, record in zip(rows, records, strict=True):
        text = task_document(record)
        assert row["input"] == f"{text}\n{record.question}"  # nothing lost, nothing added
        assert record.question.endswith("?")
        found = [text[a:b] for a, b in record.spans]
        assert len(found) == len(row["outputs"])
        assert all(v in s and s.endswith(".") for v, s in zip(row["outputs"], found, strict=True))


def test_needle_tool_rows_read_the_context_or_its_saved_file() -> None:
    rows = _rows("needle_tool.jsonl")
    inline, saved = load_rows(FIXTURES / "needle_tool.jsonl", format="needle-tool")
    assert task_document(inline) == rows[0]["context"]
    saved_path = FIXTURES / "contexts" / f"{rows[1]['file_name']}_context.txt"
    assert task_document(saved) == saved_path.read_text(encoding="utf-8")
    for row, record in zip(rows, (inline, saved), strict=True):
        assert record.row_id == row["file_name"] and record.question == row["retrieval_question"]
        ((start, end),) = record.spans
        assert task_document(record)[start:end] == row["needle"].strip()
        assert grade_answer(row["true_answer"], record).correct
    assert grade_answer("Behind the calendar.", inline).correct
    assert not grade_answer("behind the clock", inline).correct
    assert grade_answer("4.1 kilograms", saved).correct
    assert not grade_answer("4 kilograms", saved).correct


@pytest.mark.parametrize(
    ("format", "row", "error"),
    [
        (
            "oolong",
            {"context_window_text": "t", "question": "q?", "answer": "[1"},
            "answer: is not",
        ),
        (
            "oolong",
            {
                "context_window_text": "t",
                "question": "q?",
                "answer": "[datetime.date(2024, 2, 30)]",
            },
            "answer: day is out of range",
        ),
        ("ruler", {"input": "text only.", "outputs": ["1"]}, "input: has no question"),
        ("ruler", {"input": "t 2.\nWhich?", "outputs": ["1"]}, "outputs: '1' is not in"),
        ("ruler", {"input": "t 1.\nWhich?", "outputs": "1"}, "outputs: must be a non-empty"),
        (
            "needle-tool",
            {"needle": "n.", "retrieval_question": "q?", "true_answer": "a"},
            "context: missing",
        ),
        (
            "needle-tool",
            {"needle": "n.", "retrieval_question": "q?", "true_answer": "a", "file_name": "nope"},
            "document_path: cannot read 'contexts/nope_context.txt'",
        ),
        (
            "needle-tool",
            {
                "needle": "Not there.",
                "retrieval_question": "q?",
                "true_answer": "a",
                "context": "x",
            },
            "evidence: passage not in the document",
        ),
    ],
)
def test_a_bad_public_row_is_one_line_naming_its_field(
    tmp_path: Path, format: str, row: dict[str, Any], error: str
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(UserRowError) as failed:
        load_rows(path, format=format)
    message = str(failed.value)
    assert "\n" not in message and message.startswith(f"{path}: line 1: {error}")


def test_the_format_fixture_set_loads_with_its_formats() -> None:
    """tests/fathom_rlm/fixtures/formats/: the needle rows are the needle tool's layout, the
    OOLONG rows store bare answers (read as they are), the LongBench rows are LongBench v2's."""
    formats = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
    for name, format in (
        ("needle.jsonl", "needle-tool"),
        ("oolong.jsonl", "oolong"),
        ("longbench.jsonl", "longbench"),
    ):
        rows = [json.loads(line) for line in (formats / name).open(encoding="utf-8")]
        records = load_rows(formats / name, format=format)
        assert len(records) == len(rows)
        for row, record in zip(rows, records, strict=True):
            gold = row["true_answer"] if "true_answer" in row else row["answer"]
            assert grade_answer(gold, record).correct, (name, gold)
