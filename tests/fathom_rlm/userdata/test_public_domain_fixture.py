"""The shipped public-domain fixture: every row is a well-formed user row whose answer its evidence
supports.

Only the standard library and the files are used, so the fixture is checked on its own terms,
independently of the loader that will read it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from copy import deepcopy
from pathlib import Path
from typing import Any

import pytest

DATA = (
    Path(__file__).resolve().parents[3]
    / "environments"
    / "fathom_rlm"
    / "fathom_rlm"
    / "data"
    / "public_domain"
)
QUESTIONS = DATA / "questions.jsonl"
CHOICE_HELDOUT = DATA / "choice_heldout.jsonl"  # held out from the reference's choice reading

KINDS = {"text", "number", "year", "list", "choice"}
FIELDS = {
    "id",
    "document",
    "document_path",
    "question",
    "answers",
    "answer",
    "answer_kind",
    "tolerance",
    "evidence",
    "depth",
}
# An answer counts as supported when it appears within this many characters of a passage.
NEAR = 300
OPTION = re.compile(r"^\s*([A-Z])\)\s*(.+?)\s*$", re.MULTILINE)

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINALS = [
    "_",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
]


def normalise(text: str) -> str:
    """Lowercase, punctuation to spaces, articles dropped: the comparison the grader makes."""
    words = re.sub(r"[^a-z0-9]+", " ", text.lower()).split()
    return " ".join(w for w in words if w not in {"a", "an", "the"})


def number_words(n: int) -> list[str]:
    """How the texts write a whole number below 1000 in words ('forty-two', 'five hundred')."""
    if n < 20:
        words = [_ONES[n]]
    elif n < 100:
        words = [_TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])]
    else:
        rest = n % 100
        words = [f"{_ONES[n // 100]} hundred" + (f" and {number_words(rest)[0]}" if rest else "")]
    if 0 < n < len(_ORDINALS):
        words.append(_ORDINALS[n])
    return words


def load_rows() -> list[dict[str, Any]]:
    """The rows of both question files (they share the texts and every check)."""
    lines = [
        line
        for path in (QUESTIONS, CHOICE_HELDOUT)
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    return [json.loads(line) for line in lines if line.strip()]


def document_of(row: dict[str, Any]) -> str:
    if "document" in row:
        return row["document"]
    return (QUESTIONS.parent / row["document_path"]).read_text(encoding="utf-8")


def accepted(row: dict[str, Any]) -> list[Any]:
    return list(row["answers"]) if "answers" in row else [row["answer"]]


def options(question: str) -> dict[str, str]:
    return {letter: text for letter, text in OPTION.findall(question)}


def format_problems(row: dict[str, Any]) -> list[str]:
    """What in a row breaks the user row format (empty when it conforms)."""
    bad: list[str] = []
    if unknown := set(row) - FIELDS:
        bad.append(f"unknown fields {sorted(unknown)}")
    if "id" in row and not (isinstance(row["id"], str) and row["id"]):
        bad.append("id is not a non-empty string")
    if ("document" in row) == ("document_path" in row):
        bad.append("needs exactly one of document and document_path")
    if "document" in row and not (isinstance(row["document"], str) and row["document"]):
        bad.append("document is not a non-empty string")
    if "document_path" in row:
        path = row["document_path"]
        if not isinstance(path, str) or Path(path).is_absolute() or ".." in Path(path).parts:
            bad.append("document_path is not a plain relative path")
        elif not (QUESTIONS.parent / path).is_file():
            bad.append(f"document_path {path} does not exist")
    if not (isinstance(row.get("question"), str) and row["question"].strip()):
        bad.append("question is not a non-empty string")
    if ("answers" in row) == ("answer" in row):
        bad.append("needs exactly one of answers and answer")
    elif "answers" in row and not (isinstance(row["answers"], list) and row["answers"]):
        bad.append("answers is not a non-empty list")
    kind = row.get("answer_kind", "text")
    if kind not in KINDS:
        bad.append(f"answer_kind {kind!r} is not one of {sorted(KINDS)}")
    if "answers" in row and not isinstance(row["answers"], list):
        return bad
    for answer in accepted(row) if ("answers" in row) != ("answer" in row) else []:
        if kind == "list":
            if not (
                isinstance(answer, list)
                and answer
                and all(isinstance(i, str) and i.strip() for i in answer)
            ):
                bad.append(f"list answer {answer!r} is not a non-empty list of strings")
        elif isinstance(answer, bool) or not isinstance(answer, str | int | float):
            bad.append(f"answer {answer!r} is neither a string nor a number")
        elif isinstance(answer, str) and not answer.strip():
            bad.append("an answer is empty")
        elif kind in {"number", "year"}:
            try:
                float(answer)
            except ValueError:
                bad.append(f"{kind} answer {answer!r} is not a number")
        elif kind == "choice" and str(answer) not in options(row.get("question", "")):
            bad.append(f"choice answer {answer!r} names no option of the question")
    if "tolerance" in row:
        tol = row["tolerance"]
        if kind != "number":
            bad.append("tolerance given for a kind other than number")
        if isinstance(tol, bool) or not isinstance(tol, int | float) or tol < 0:
            bad.append("tolerance is not a non-negative number")
    if "evidence" in row:
        evidence = row["evidence"]
        if not isinstance(evidence, list):
            bad.append("evidence is not a list")
        elif not (
            all(isinstance(e, str) and e for e in evidence)
            or all(
                isinstance(e, dict)
                and set(e) == {"start", "end"}
                and all(type(e[k]) is int for k in ("start", "end"))
                and 0 <= e["start"] < e["end"]
                for e in evidence
            )
        ):
            bad.append("evidence is neither all quoted passages nor all {start, end} spans")
    if "depth" in row and (type(row["depth"]) is not int or row["depth"] < 0):
        bad.append("depth is not a non-negative integer")
    return bad


def spans(row: dict[str, Any], document: str) -> list[tuple[int, int]]:
    """Where each evidence passage lies in the document (its first occurrence for a quote)."""
    out = []
    for e in row.get("evidence", []):
        if isinstance(e, dict):
            out.append((e["start"], e["end"]))
        elif (start := document.find(e)) >= 0:
            out.append((start, start + len(e)))
    return out


def support_problems(row: dict[str, Any], document: str) -> list[str]:
    """Which parts of the row's first accepted answer no evidence passage supports.

    The first answer is the canonical one and must stand in the text; later entries are aliases
    (another spelling, a name the text uses elsewhere) and need not.
    """
    windows = [normalise(document[max(0, s - NEAR) : e + NEAR]) for s, e in spans(row, document)]
    if not windows:
        return ["no evidence passage found in the document"]

    def near(phrase: str) -> bool:
        target = f" {normalise(phrase)} "
        return target.strip() != "" and any(target in f" {w} " for w in windows)

    kind = row.get("answer_kind", "text")
    answer = accepted(row)[0]
    if kind == "list":
        return [f"list item {item!r} not near its evidence" for item in answer if not near(item)]
    if kind == "choice":
        text = options(row["question"]).get(str(answer))
        if text is None or not near(text):
            return [f"option {answer}) {text!r} not near its evidence"]
        return []
    if kind in {"number", "year"}:
        value = float(answer)
        forms = [f"{value:g}"]
        if value.is_integer() and 0 <= value < 1000:
            forms += number_words(int(value))
        return [] if any(near(f) for f in forms) else [f"number {answer!r} not near its evidence"]
    return [] if near(str(answer)) else [f"answer {answer!r} not near its evidence"]


ROWS = load_rows()


def test_every_row_follows_the_user_row_format():
    problems = {row.get("id", i): p for i, row in enumerate(ROWS) if (p := format_problems(row))}
    assert problems == {}
    ids = [row["id"] for row in ROWS if "id" in row]
    assert len(ids) == len(set(ids)), "row ids repeat"


def test_every_evidence_passage_occurs_exactly_once_in_its_document():
    # Exactly once, so a passage names one place: a quote found twice would let a span-based
    # reward credit the wrong region of the document.
    for row in ROWS:
        document = document_of(row)
        for e in row.get("evidence", []):
            if isinstance(e, dict):
                assert e["end"] <= len(document), (row["id"], e)
            else:
                assert document.count(e) == 1, (row["id"], e, document.count(e))


def test_every_answer_stands_next_to_its_evidence():
    problems = {row["id"]: p for row in ROWS if (p := support_problems(row, document_of(row)))}
    assert problems == {}


def test_the_fixture_is_large_and_varied_enough():
    assert len(ROWS) >= 30
    kinds = Counter(row.get("answer_kind", "text") for row in ROWS)
    assert len(kinds) >= 3, kinds
    assert all(row.get("evidence") for row in ROWS), "every row carries evidence"
    # depth 1 marks the questions that combine passages far apart, and only those.
    deep = [row for row in ROWS if row.get("depth") == 1]
    assert deep, "no row combines distant passages"
    for row in deep:
        starts = sorted(s for s, _ in spans(row, document_of(row)))
        assert len(starts) >= 2 and starts[-1] - starts[0] > 5 * NEAR, row["id"]
    assert {row["document_path"] for row in ROWS} == {p.name for p in DATA.glob("*.txt")}


def test_the_texts_are_clean_public_domain_text():
    for path in DATA.glob("*.txt"):
        text = path.read_text(encoding="utf-8")
        # The texts ship without any Project Gutenberg header, footer or trademark.
        assert "gutenberg" not in text.lower(), path.name
        assert "\r" not in text and "\x1a" not in text, path.name
    total = sum(p.stat().st_size for p in DATA.glob("*.txt"))
    assert 100_000 <= total <= 300_000, total


def _mutated(row_id: str, **changes: Any) -> dict[str, Any]:
    row = deepcopy(next(r for r in ROWS if r["id"] == row_id))
    for key in ("answer", "answers"):
        row.pop(key, None)
    row.update(changes)
    return row


@pytest.mark.parametrize(
    "row",
    [
        # A text answer the passage does not contain.
        _mutated("alice-02", answer="Kitty"),
        # A number the passage does not state, in digits or words.
        _mutated("alice-03", answer=16),
        # One list item that is not there.
        _mutated("alice-20", answer=["Elsie", "Lacie", "Matilda"]),
        # A letter naming an option the passage does not support.
        _mutated("alice-24", answer="A"),
        # A supported answer with its evidence moved to an unrelated passage.
        {**_mutated("alice-02", answer="Dinah"), "evidence": ["Rule Forty-two."]},
    ],
    ids=["text", "number", "list", "choice", "moved-evidence"],
)
def test_the_support_check_rejects_an_unsupported_answer(row: dict[str, Any]):
    assert support_problems(row, document_of(row))


def test_the_format_check_rejects_malformed_rows():
    good = ROWS[0]
    assert format_problems(good) == []
    broken = [
        {**good, "answer_kind": "date"},
        {**good, "document": "text"},
        {k: v for k, v in good.items() if k not in {"answer", "answers"}},
        {**good, "evidence": [{"start": 5, "end": 2}]},
        {**good, "depth": -1},
        {**_mutated("alice-07", answer="E")},
        {**_mutated("alice-03", answer="fifteen")},
    ]
    for row in broken:
        assert format_problems(row), row
