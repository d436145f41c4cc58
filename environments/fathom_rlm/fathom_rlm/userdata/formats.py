"""Public long-context row schemas, each mapped onto the native user row (`rows.py`).

A mapping only renames and reshapes fields; the native loader then checks the result, so a row
of any format is held to the same rules. Fields a schema carries that the environment has no
use for (lengths, domains, difficulty labels) are ignored; a field the mapping needs and cannot
find is an error naming that field.

* ``native``: the row as documented in `rows.py`, unchanged.
* ``oolong``: OOLONG-synth rows as the dataset stores them: ``context_window_text`` (never
  the ``_with_labels`` text), ``question``, ``answer`` (the text of a Python list; the first
  element is the gold, as in OOLONG's metric: ``"[47]"``, ``"['spam']"``,
  ``"[datetime.date(2023, 1, 2)]"``), ``answer_type`` (``ANSWER_TYPE.NUMERIC`` grades as a
  number; ``DATE`` as text accepting the usual writings of that date, MM/DD/YYYY first;
  ``COMPARISON`` as text accepting the phrase, the phrase without its last word, and the
  sentence the question asks for; ``LABEL``, ``USER``, ``MONTH_YEAR`` as text), optional
  ``id``. Where the grading differs from OOLONG's own metric: docs/rewards.md.
* ``longbench``: LongBench-v2-style multiple choice: ``context``, ``question``,
  ``choice_A`` .. ``choice_D``, ``answer`` (the letter), optional ``_id``. The choices are
  written under the question, one per line as ``(A) text``, and the row grades as a choice.
* ``needle``: this project's needle-in-a-haystack layout: ``haystack``, ``needle``,
  ``question``, ``answer``, optional ``depth_percent`` (where the needle goes, 0 to 100,
  default 50, moved to the next sentence or line break) and ``id``. A haystack that already
  holds the needle is used as it is. The needle is the row's evidence.
* ``ruler``: RULER's needle rows: ``input`` (the prompt: instructions and haystack, then the
  question on its last line ending in "?"), ``outputs`` (the values; all of them are needed,
  so several grade as a list), optional ``answer_prefix`` (the reply's opening; the opening
  followed by the value is accepted too) and ``index`` (the id). Each value's sentence is
  evidence. Fields such as ``length`` are ignored.
* ``needle-tool``: the original needle-in-a-haystack tool's layout: its arguments ``needle``,
  ``retrieval_question`` and ``true_answer``, and the haystack with the needle in it as the
  tool saves it: ``context``, or ``file_name`` naming ``contexts/<file_name>_context.txt``
  beside the rows file. The stripped needle is the evidence; ``file_name`` is the id; the
  result fields (``model``, ``score``, ``depth_percent``...) are ignored.
"""

from __future__ import annotations

import ast
import datetime
import re
from collections.abc import Callable, Mapping
from numbers import Real
from typing import Any

from fathom_rlm.userdata.errors import RowFieldError
from fathom_rlm.userdata.grading import comparison_phrases

__all__ = ["CHOICE_LETTERS", "FORMATS", "insert_needle", "to_native"]

CHOICE_LETTERS = ("A", "B", "C", "D")


def _field(row: Mapping[str, Any], name: str) -> Any:
    if name not in row or row[name] is None:
        raise RowFieldError(name, "missing")
    return row[name]


def _text(row: Mapping[str, Any], name: str) -> str:
    value = _field(row, name)
    if not isinstance(value, str):
        raise RowFieldError(name, f"must be a string, not {type(value).__name__}")
    return value


def _with_id(native: dict[str, Any], row: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = row.get(name)
    if value is not None:
        native["id"] = value if isinstance(value, str) else str(value)
    return native


def _native(row: Any) -> Any:
    return row


_OOLONG_DATE = re.compile(r"datetime\.date\(\s*(\d{1,4})\s*,\s*(\d{1,2})\s*,\s*(\d{1,2})\s*\)")
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


OOLONG_NUMBER_CREDIT = 0.75
"""OOLONG's partial credit for a numeric answer: 0.75 ** |gold - answer|."""


def _oolong_gold(answer: Any) -> str | datetime.date:
    """The value OOLONG's metric grades against: the first element of the answer, which the
    dataset stores as the text of a Python list ("[47]", "['spam']",
    "[datetime.date(2023, 1, 2)]"); a bare value is taken as it is."""
    if not isinstance(answer, str):
        if isinstance(answer, bool) or not isinstance(answer, str | int | float):
            raise RowFieldError("answer", f"must be a string, not {type(answer).__name__}")
        return str(answer)
    text = answer.strip()
    if "datetime" in text:
        date = _OOLONG_DATE.search(text)
        if date is None:
            raise RowFieldError("answer", f"holds no datetime.date(year, month, day): {text!r}")
        try:
            return datetime.date(*(int(x) for x in date.groups()))
        except ValueError as exc:
            raise RowFieldError("answer", f"{exc}: {text!r}") from None
    if not text.startswith("["):
        return text
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise RowFieldError("answer", f"is not the text of a Python list: {text!r}") from None
    if not isinstance(parsed, list | tuple) or not parsed:
        raise RowFieldError("answer", f"is an empty or malformed list: {text!r}")
    return str(parsed[0])


def _date_writings(date: datetime.date) -> list[str]:
    """The writings of a date a DATE answer may take: OOLONG asks for MM/DD/YYYY, and its
    metric parses any writing month first (dateutil's default); these are the usual ones."""
    month = _MONTHS[date.month - 1]
    y, m, d = date.year, date.month, date.day
    return [
        f"{m:02d}/{d:02d}/{y}",
        f"{m}/{d}/{y}",
        date.isoformat(),
        f"{month} {d}, {y}",
        f"{month[:3]} {d}, {y}",
        f"{month[:3]} {d:02d}, {y}",
        f"{d} {month} {y}",
    ]


def _oolong(row: Any) -> dict[str, Any]:
    row = _mapping(row)
    question = _text(row, "question")
    gold = _oolong_gold(_field(row, "answer"))
    answer_type = str(row.get("answer_type", "")).upper().removeprefix("ANSWER_TYPE.")
    kind, extra = "text", {}
    if isinstance(gold, datetime.date):
        answers = _date_writings(gold)
    elif answer_type == "NUMERIC":
        kind, answers = "number", [gold]
        extra = {"number_credit_base": OOLONG_NUMBER_CREDIT}
    elif answer_type == "COMPARISON" and len(comparison_phrases(gold)) == 1:
        kind, answers = "comparison", [gold]
    else:  # LABEL, USER, MONTH_YEAR: the value itself
        answers = [gold]
    native = {
        "document": _text(row, "context_window_text"),
        "question": question,
        "answers": answers,
        "answer_kind": kind,
        **extra,
    }
    return _with_id(native, row, "id")


def _longbench(row: Any) -> dict[str, Any]:
    row = _mapping(row)
    choices = [f"({x}) {_text(row, f'choice_{x}').strip()}" for x in CHOICE_LETTERS]
    letter = _text(row, "answer").strip().upper()
    if letter not in CHOICE_LETTERS:
        raise RowFieldError("answer", f"must be one of {', '.join(CHOICE_LETTERS)}: {letter!r}")
    native = {
        "document": _text(row, "context"),
        "question": _text(row, "question").strip() + "\n" + "\n".join(choices),
        "answer": letter,
        "answer_kind": "choice",
    }
    return _with_id(native, row, "_id")


def insert_needle(haystack: str, needle: str, depth_percent: float) -> str:
    """`haystack` with `needle` inserted at `depth_percent` of its length, moved forward to the
    next sentence end or line break so that no sentence is cut."""
    at = round(len(haystack) * depth_percent / 100)
    ends = [i + 1 for i in (haystack.find(c, at) for c in ".!?\n") if i >= 0]
    at = min(ends) if ends and at > 0 else (0 if at == 0 else len(haystack))
    before, after = haystack[:at], haystack[at:]
    return f"{before.rstrip(' ')} {needle.strip()} {after.lstrip(' ')}".strip(" ")


def _needle(row: Any) -> dict[str, Any]:
    row = _mapping(row)
    haystack, needle = _text(row, "haystack"), _text(row, "needle")
    if not needle.strip():
        raise RowFieldError("needle", "empty")
    depth = row.get("depth_percent", 50)
    if isinstance(depth, bool) or not isinstance(depth, Real) or not 0 <= depth <= 100:
        raise RowFieldError("depth_percent", f"must be a number from 0 to 100, not {depth!r}")
    needle = needle.strip()
    document = haystack if needle in haystack else insert_needle(haystack, needle, float(depth))
    native = {
        "document": document,
        "question": _text(row, "question"),
        "answer": _field(row, "answer"),
        "evidence": [needle],
    }
    return _with_id(native, row, "id")


def _sentence_around(text: str, start: int, end: int) -> str:
    """The sentence (or line) of `text` that holds `text[start:end]`."""
    before = max(text.rfind(c, 0, start) for c in ".!?\n") + 1
    ends = [i for i in (text.find(c, end) for c in ".!?\n") if i >= 0]
    after = min(ends) + 1 if ends else len(text)
    return text[before:after].strip()


def _ruler(row: Any) -> dict[str, Any]:
    """RULER's needle rows: the prompt is `input` (instructions, haystack, and the question on
    its last line ending in "?"), `outputs` the values to retrieve, all of them (RULER's
    niah metric, `string_match_all`), `answer_prefix` the start of the expected reply."""
    row = _mapping(row)
    prompt = _text(row, "input")
    outputs = _field(row, "outputs")
    if isinstance(outputs, str) or not isinstance(outputs, list) or not outputs:
        raise RowFieldError("outputs", "must be a non-empty list of strings")
    if not all(isinstance(x, str) and x.strip() for x in outputs):
        raise RowFieldError("outputs", "every value must be a non-empty string")
    lines = prompt.rstrip().splitlines()
    asked = [i for i, line in enumerate(lines) if line.rstrip().endswith("?")]
    if not asked:
        raise RowFieldError("input", "has no question (a line ending in '?') after the text")
    document = "\n".join(lines[: asked[-1]]).rstrip()
    question = lines[asked[-1]].strip()
    evidence = []
    for value in outputs:
        at = document.find(value)
        if at < 0:
            raise RowFieldError("outputs", f"{value!r} is not in the input's text")
        evidence.append(_sentence_around(document, at, at + len(value)))
    native: dict[str, Any] = {"document": document, "question": question, "evidence": evidence}
    if len(outputs) > 1:
        native |= {"answer": list(outputs), "answer_kind": "list"}
    else:
        prefix = row.get("answer_prefix")
        said = (
            [f"{prefix.strip()} {outputs[0]}"] if isinstance(prefix, str) and prefix.strip() else []
        )
        native["answers"] = [outputs[0], *said]
    return _with_id(native, row, "index")


def _needle_tool(row: Any) -> dict[str, Any]:
    """The needle-in-a-haystack tool's layout: its arguments `needle`, `retrieval_question`
    and `true_answer` (its evaluator's reference), with the haystack as the tool saves it: the
    `context` text, or `file_name` naming `contexts/<file_name>_context.txt` beside the rows
    file. The needle (stripped) is the evidence and must be in the context."""
    row = _mapping(row)
    needle = _text(row, "needle").strip()
    if not needle:
        raise RowFieldError("needle", "empty")
    native: dict[str, Any] = {
        "question": _text(row, "retrieval_question"),
        "answer": _field(row, "true_answer"),
        "evidence": [needle],
    }
    if row.get("context") is not None:
        native["document"] = _text(row, "context")
    elif row.get("file_name") is not None:
        native["document_path"] = f"contexts/{_text(row, 'file_name')}_context.txt"
    else:
        raise RowFieldError("context", "missing (give context, or file_name of a saved context)")
    return _with_id(native, row, "file_name")


def _mapping(row: Any) -> Mapping[str, Any]:
    if not isinstance(row, Mapping):
        raise RowFieldError("row", f"must be a JSON object, not {type(row).__name__}")
    return row


FORMATS: dict[str, Callable[[Any], Any]] = {
    "native": _native,
    "oolong": _oolong,
    "longbench": _longbench,
    "needle": _needle,
    "ruler": _ruler,
    "needle-tool": _needle_tool,
}
"""Row format name -> its mapping onto the native row."""


def to_native(format: str, row: Any) -> Any:
    """`row` in the native schema; ValueError for an unknown format name."""
    try:
        mapping = FORMATS[format]
    except KeyError:
        raise ValueError(f"unknown row format {format!r}; known: {', '.join(FORMATS)}") from None
    return mapping(row)
