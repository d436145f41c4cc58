"""Grading a final answer against a user row's accepted answers, by answer kind.

* ``text``: normalised exact match (`normalize_answer`: case, punctuation, articles) against
  any accepted answer, as synthetic rows are graded;
* ``number``: the answer holds exactly one number ("1,234", "1234.0", "$5", "-3", "12.5%")
  within the row's absolute ``tolerance`` of an accepted one. Several numbers are a candidate
  list and grade wrong, as do number words ("five");
* ``year``: exactly one whole number of at most four digits ("1850", "c. 1850", "1850 AD";
  "44 BC" is -44) equal to an accepted year;
* ``list``: the items, split at commas, semicolons and line breaks (a lone "and"/"or" before
  the last item is dropped; one item holding " and " is also read as two), each normalised as
  text; correct iff the set of items equals an accepted set (all the items and nothing else).
  Partial credit is the F1 of the items (harmonic mean of precision and recall) against the
  best accepted set; it is reported on its own (`list_partial_credit`), never as correctness;
* ``choice``: the letter the answer picks ("B", "(B)", "B) text", "B. text", "answer: b",
  "The answer is (B)", "option B") equal to an accepted letter.

Every grader is linear in the answer's length and refuses answers longer than
`MAX_GRADED_CHARS` (the reward's own length cap is far lower). Accepted answers are parsed
when the rows are loaded (`parse_accepted`), so a row whose answer its kind cannot read is an
error there, not a silent 0 here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fathom_rlm.documents.tasks.core import normalize_answer

if TYPE_CHECKING:
    from fathom_rlm.documents.tasks.record import TaskRecord

__all__ = [
    "MAX_GRADED_CHARS",
    "Grade",
    "answer_char_cap",
    "answer_instruction",
    "choice_letter",
    "grade_answer",
    "list_items",
    "parse_accepted",
    "parse_number",
    "parse_year",
    "task_question",
]

MAX_GRADED_CHARS = 20_000
"""Longer answers are not read at all (they grade wrong)."""

_INSTRUCTIONS = {
    "number": "Answer with a number.",
    "year": "Answer with a year.",
    "list": "Answer with every item, separated by commas.",
    "choice": "Answer with the letter of the right choice.",
}


@dataclass(frozen=True)
class Grade:
    """`correct`: the answer is accepted. `partial`: a list answer's item F1 against the best
    accepted set (None for the other kinds)."""

    correct: bool
    partial: float | None = None


# ------------------------------------------------------------------------------ parsers

_MINUS = "-\u2212\u2013"
_NUMBER = re.compile(
    rf"(?<![\w.])([{_MINUS}+]?)\s?[$€£¥]?\s?([{_MINUS}+]?)"
    r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?![\w.]*\d)"
)


def parse_number(text: str) -> float | None:
    """The one number in `text`, or None when it holds none or several."""
    if len(text) > MAX_GRADED_CHARS:
        return None
    found = _NUMBER.findall(text.replace("\u00a0", " "))
    if len(found) != 1:
        return None
    sign_before, sign_after, digits = found[0]
    value = float(digits.replace(",", ""))
    negative = any(s and s in _MINUS for s in (sign_before, sign_after))
    return -value if negative else value


_YEAR = re.compile(r"(?<![\w.,])(\d{1,4})(?!\w)(?![.,]\d)")
_BC = re.compile(r"\b(?:BC|BCE|B\.C\.?(?:E\.?)?)(?!\w)", re.IGNORECASE)


def parse_year(text: str) -> int | None:
    """The one year (a whole number of at most four digits) in `text`; "BC"/"BCE" negate it.
    None when there is no year or several."""
    if len(text) > MAX_GRADED_CHARS:
        return None
    if re.search(r"\d{5,}|\d[.,]\d", text):
        return None  # a longer number or a decimal is no year
    found = _YEAR.findall(text)
    if len(found) != 1:
        return None
    year = int(found[0])
    return -year if _BC.search(text) else year


_ITEM_SPLIT = re.compile(r"[,;\n]+")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)]|\[|\()\s*")
_CONJUNCTION = re.compile(r"^(?:and|or|&)\s+", re.IGNORECASE)


def _clean_item(item: str) -> str:
    item = _CONJUNCTION.sub("", _BULLET.sub("", item.strip()).strip(" ]).")).strip()
    return normalize_answer(item)


def list_items(text: str) -> list[frozenset[str]]:
    """The readings of a list answer as sets of normalised items: split at commas, semicolons
    and line breaks; and the same with every item also split at a whole-word "and" ("red,
    green and blue"). A row's accepted set matches either reading."""
    if len(text) > MAX_GRADED_CHARS:
        return []
    items = [_clean_item(x) for x in _ITEM_SPLIT.split(text)]
    plain = frozenset(x for x in items if x)
    split = frozenset(
        part for x in plain for part in (p.strip() for p in re.split(r"\band\b", x)) if part
    )
    return [r for r in dict.fromkeys((plain, split)) if r]


_LETTER_ONLY = re.compile(r"^\s*[\[(]?\s*([A-Za-z])\s*[\])]?\s*[.:]?\s*$")
_LETTER_LEAD = re.compile(r"^\s*[\[(]?([A-Za-z])(?:[\]).:]|\s*[\])]\s*[.:]?)\s+\S")
_LETTER_SAID = re.compile(
    r"^\s*(?:the\s+)?(?:correct\s+|right\s+|final\s+)?(?:answer|option|choice)"
    r"(?:\s+is)?\s*[:\-]?\s*[\[(]?([A-Za-z])(?:[\]).:]|\s|$)",
    re.IGNORECASE,
)


def choice_letter(text: str) -> str | None:
    """The letter a choice answer picks (upper case), or None when it names none."""
    if len(text) > MAX_GRADED_CHARS:
        return None
    for pattern in (_LETTER_ONLY, _LETTER_LEAD, _LETTER_SAID):
        m = pattern.match(text)
        if m:
            return m.group(1).upper()
    return None


# ----------------------------------------------------------------------- accepted answers


def parse_accepted(kind: str, answers: Sequence[str | Sequence[str]]) -> str | None:
    """Why these accepted answers cannot be graded as `kind` (None when they can): every
    answer of a list row is a non-empty list of strings, every other answer a string its kind
    reads (a number, a year, a letter)."""
    for i, answer in enumerate(answers, 1):
        where = f"accepted answer {i}" if len(answers) > 1 else "the answer"
        if kind == "list":
            if isinstance(answer, str) or not answer:
                return f"{where} of a list row must be a non-empty list of strings"
            if not list_items(", ".join(answer)):
                return f"{where} has no item left after normalisation"
            continue
        if not isinstance(answer, str):
            return f"{where} must be a string"
        if kind == "text" and not normalize_answer(answer):
            return f"{where} is empty after normalisation"
        if kind == "number" and parse_number(answer) is None:
            return f"{where} {answer!r} is not one number"
        if kind == "year" and parse_year(answer) is None:
            return f"{where} {answer!r} is not one year"
        if kind == "choice" and choice_letter(answer) is None:
            return f"{where} {answer!r} is not a choice letter"
    return None


def _accepted(task: TaskRecord) -> list[str]:
    return [task.answer, *task.aliases]


def answer_char_cap(task: TaskRecord, cap: int) -> int:
    """The longest answer the reward reads for this row: `cap`, or for a user row twice its
    longest accepted answer when that is longer (a list of many items needs the room)."""
    if task.source != "user":
        return cap
    texts = [", ".join(items) for items in task.answer_lists] or _accepted(task)
    return max(cap, 2 * max(len(t) for t in texts))


def task_question(task: TaskRecord) -> str:
    """The question as the model is asked it: a user row of a kind other than text gets one
    line saying how to answer (a list, a letter, a number)."""
    instruction = answer_instruction(task.answer_kind) if task.source == "user" else ""
    return f"{task.question}\n\n{instruction}" if instruction else task.question


def answer_instruction(kind: str) -> str:
    """The line that tells the model how to write an answer of `kind` ('' for text)."""
    return _INSTRUCTIONS.get(kind, "")


# ------------------------------------------------------------------------------ grading


def _f1(got: frozenset[str], gold: frozenset[str]) -> float:
    hit = len(got & gold)
    if not hit:
        return 0.0
    precision, recall = hit / len(got), hit / len(gold)
    return 2 * precision * recall / (precision + recall)


def grade_answer(answer: str, task: TaskRecord) -> Grade:
    """The grade of `answer` (the text of the one answer block) for `task`, by its kind."""
    kind = task.answer_kind
    if len(answer) > MAX_GRADED_CHARS:
        return Grade(False, 0.0 if kind == "list" else None)
    if kind == "list":
        golds = [frozenset(_clean_item(x) for x in items) - {""} for items in task.answer_lists]
        readings = list_items(answer)
        correct = any(r == g for r in readings for g in golds)
        partial = max((_f1(r, g) for r in readings for g in golds), default=0.0)
        return Grade(correct, partial)
    if kind == "number":
        got = parse_number(answer)
        if got is None:
            return Grade(False)
        # A relative slack of 1e-9 absorbs float rounding ("0.3" against 0.1 + 0.2).
        return Grade(
            any(
                math.isclose(got, gold, rel_tol=1e-9, abs_tol=task.tolerance)
                for gold in (parse_number(a) for a in _accepted(task))
                if gold is not None
            )
        )
    if kind == "year":
        got_year = parse_year(answer)
        return Grade(got_year is not None and got_year in {parse_year(a) for a in _accepted(task)})
    if kind == "choice":
        letter = choice_letter(answer)
        return Grade(letter is not None and letter in {choice_letter(a) for a in _accepted(task)})
    got_text = normalize_answer(answer)
    return Grade(bool(got_text) and got_text in {normalize_answer(a) for a in _accepted(task)})
