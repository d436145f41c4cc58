"""Public long-context row schemas, each mapped onto the native user row (`rows.py`).

A mapping only renames and reshapes fields; the native loader then checks the result, so a row
of any format is held to the same rules. Fields a schema carries that the environment has no
use for (lengths, domains, difficulty labels) are ignored; a field the mapping needs and cannot
find is an error naming that field.

* ``native``: the row as documented in `rows.py`, unchanged.
* ``oolong``: OOLONG-style aggregation rows: ``context_window_text``, ``question``,
  ``answer`` (a string; a string holding a bracketed list such as ``"['spam']"`` gives each
  element as an accepted answer), ``answer_type`` (``ANSWER_TYPE.NUMERIC`` grades as a number,
  exact; every other type as text), optional ``id``. OOLONG's own metric gives numeric answers
  partial credit by distance; here a number is right or wrong.
* ``longbench``: LongBench-v2-style multiple choice: ``context``, ``question``,
  ``choice_A`` .. ``choice_D``, ``answer`` (the letter), optional ``_id``. The choices are
  written under the question, one per line as ``(A) text``, and the row grades as a choice.
* ``needle``: needle in a haystack: ``haystack``, ``needle``, ``question``, ``answer``,
  optional ``depth_percent`` (where the needle goes, 0 to 100, default 50, moved to the next
  sentence or line break) and ``id``. A haystack that already holds the needle is used as it
  is. The needle is the row's evidence.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from numbers import Real
from typing import Any

from fathom_rlm.userdata.errors import RowFieldError

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


def _oolong(row: Any) -> dict[str, Any]:
    row = _mapping(row)
    answer = _field(row, "answer")
    answers: list[Any] = [answer]
    if isinstance(answer, str) and answer.strip().startswith("["):
        try:
            parsed = ast.literal_eval(answer.strip())
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list) and parsed:
            answers = [x if isinstance(x, str | int | float) else str(x) for x in parsed]
    kind = "number" if "NUMERIC" in str(row.get("answer_type", "")).upper() else "text"
    native = {
        "document": _text(row, "context_window_text"),
        "question": _text(row, "question"),
        "answers": answers,
        "answer_kind": kind,
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


def _mapping(row: Any) -> Mapping[str, Any]:
    if not isinstance(row, Mapping):
        raise RowFieldError("row", f"must be a JSON object, not {type(row).__name__}")
    return row


FORMATS: dict[str, Callable[[Any], Any]] = {
    "native": _native,
    "oolong": _oolong,
    "longbench": _longbench,
    "needle": _needle,
}
"""Row format name -> its mapping onto the native row."""


def to_native(format: str, row: Any) -> Any:
    """`row` in the native schema; ValueError for an unknown format name."""
    try:
        mapping = FORMATS[format]
    except KeyError:
        raise ValueError(f"unknown row format {format!r}; known: {', '.join(FORMATS)}") from None
    return mapping(row)
