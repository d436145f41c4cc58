"""Grading a final answer against a user row's accepted answers, by answer kind.

What each kind accepts and refuses, and why, is listed in docs/rewards.md ("What each answer
kind accepts"); in short:

* ``text``: `normalize_text` exact match against any accepted answer: case, articles and
  marks without meaning dropped, marks with meaning kept ("C++" is not "C", "128-N" is not
  "128+N", "-5" is not "5"); a leading "Answer:", "Label:", "User:" or "Date:" is dropped;
* ``number``: the answer holds exactly one number (digits, "4.2e1", a number word up to
  ninety-nine, optionally scaled: "1.2 million") within the row's absolute ``tolerance`` of an
  accepted one, and in its unit when the accepted answer names one ("42 miles" is not
  "42 km"; a bare "42" is). Several numbers are a candidate list and grade wrong. A row with
  ``number_credit_base`` (OOLONG's numeric rows: 0.75) gives a near number partial credit,
  ``base ** |error|`` against the nearest accepted number, reported on its own
  (`number_partial_credit`), never as correctness;
* ``year``: exactly one whole number of at most four digits ("1850", "c.1850", "1850 AD";
  "44 BC" and "-44" are -44) equal to an accepted year; a full date is refused;
* ``list``: the items, split at commas, semicolons and line breaks (a lone "and"/"or" before
  the last item is dropped; one item holding " and " is also read as two; a leading label is
  dropped as for text), each normalised as text; correct iff the set of items equals an
  accepted set (all the items and nothing else).
  A piece that normalises to nothing ("-", "?") is an item that matches nothing. Partial
  credit is the F1 of the items (harmonic mean of precision and recall) against the best
  accepted set; it is reported on its own (`list_partial_credit`), never as correctness;
* ``comparison`` (OOLONG's comparison answers, graded as its metric grades them where that
  metric pays only what is right): the answer holds one comparison, once and not negated, in
  OOLONG's phrase ("more common", "less common", "same frequency") or another wording ("rarer",
  "equally common"), and the accepted answer holds that phrase ("Answer: 4471 is more common
  than 9120" for "more common than"); a second comparison is a hedge or a claim taken back and
  grades wrong. Where the question gives OOLONG's answer template ('Answer: X is [X] Y'), a
  sentence must be that one: X before the comparison and Y after (swapped, it says the
  opposite, which OOLONG's metric pays);
* ``choice``: the one letter the answer picks ("B", "(B)", "B) text", "B. text", "answer: b",
  "The answer is (B)", "option B"); an answer naming a second letter ("B or C", "(B) or (C)",
  "choice B C D", "B. Final answer: C") or hedging towards one ("B: or maybe C", "B (perhaps
  D)", in any case or script) picks none; emphasis ("**B**") is read.

Every grader is linear in the answer's length and refuses answers longer than
`MAX_GRADED_CHARS` (the reward's own length cap is far lower). Accepted answers are parsed
when the rows are loaded (`parse_accepted`), so a row whose answer its kind cannot read is an
error there, not a silent 0 here.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
    accepted set, or a number's `number_credit_base ** |error|` (None for the other kinds and
    for number rows without a base)."""

    correct: bool
    partial: float | None = None


# --------------------------------------------------------------------------- normalising

_ARTICLES = frozenset({"a", "an", "the"})
_MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2013": "-"})
# A label the answer may open with: OOLONG's questions ask for "Label: x", "User: x",
# "Date: x" and "Answer: x"; the value after it is what is graded.
_ANSWER_LABEL = re.compile(r"^\s*(?:final\s+answer|answer|label|user|date)\s*:\s*", re.IGNORECASE)


def strip_answer_label(text: str) -> str:
    """`text` without a leading "Answer:", "Final answer:", "Label:", "User:" or "Date:"."""
    return _ANSWER_LABEL.sub("", text, count=1)


def normalize_text(text: str) -> str:
    """A text answer as it is compared: NFKC, lower case, and every mark that carries no
    meaning dropped, while those that do stay: "+", "*", "/" and "#" ("C++", "128*N", "3/8",
    "C#"); "." and "-" between two characters ("3.8.6", "128-N"); a leading minus ("-5"). A
    hyphen between two letters is a space ("well-known" reads "well known"), a full stop
    that ends a word is dropped ("Mrs. Tolliver." reads "mrs tolliver"). Articles go unless
    nothing else is left ("A" stays "a")."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_MINUS_SIGNS)
    text = re.sub(r"(?<=[^\W\d_])-(?=[^\W\d_])", " ", text)
    text = re.sub(r"(?<=\w)([.-])(?=\w)|(?<![\w.])([.-])(?=\d)|[^\w\s+*/#]|_", _kept_mark, text)
    words = text.split()
    content = [w for w in words if w not in _ARTICLES]
    return " ".join(content or words)


def _kept_mark(match: re.Match[str]) -> str:
    return match.group(1) or match.group(2) or " "


# ------------------------------------------------------------------------------ parsers

_SMALL_NUMBERS = [
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
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_NUMBER_WORD = re.compile(
    rf"\b(?:({'|'.join(_TENS)})(?:[-\s]({'|'.join(_SMALL_NUMBERS[1:10])}))?"
    rf"|({'|'.join(_SMALL_NUMBERS)}))\b",
    re.IGNORECASE,
)
_SCALES = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "dozen": 12}
_SCALE_AFTER = re.compile(rf"\s+({'|'.join(_SCALES)})\b", re.IGNORECASE)
_CURRENCIES = {"$": "dollar", "€": "euro", "£": "pound", "¥": "yen"}
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-+]?)\s?(?P<currency>[$€£¥]?)\s?(?P<sign2>[-+]?)"
    r"(?P<digits>(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:e[-+]?\d+)?)"
    r"(?![\w.]*\d)",
    re.IGNORECASE,
)
_UNIT_AFTER = re.compile(r"\s?(%|[^\W\d_]+)")


_HEDGED_NUMBER = re.compile(
    r"(?<![^\W\d_])(?:or|nor|not|none|least|most|more|less|fewer|than|maybe|perhaps|possibly"
    r"|either)(?![^\W\d_])",
    re.IGNORECASE,
)
"""Words that make a number a candidate list, a range or its negation ("6 or 7", "6 or7", "at
least 6", "not 6"): such an answer names no one number. Bounded by letters only, so a digit
next to the word does not hide it."""


@dataclass(frozen=True)
class Quantity:
    """A number as written: its value and its unit (None when it has none): a currency
    sign, "%" as "percent", or the word right after it, singular ("miles" reads "mile")."""

    value: float
    unit: str | None


def _unit(word: str) -> str:
    word = word.lower()
    if word == "%":
        return "percent"
    return word[:-1] if len(word) >= 4 and word.endswith("s") and not word.endswith("ss") else word


def parse_quantity(text: str) -> Quantity | None:
    """The one number in `text` with its unit, or None when it holds none or several, or words
    that hedge it (`_HEDGED_NUMBER`). Read:
    digits ("1,234", "1234.0", ".5", "-3", "4.2e1"), English number words from zero to
    ninety-nine ("three", "twenty-one"), each optionally scaled ("1.2 million", "two
    hundred")."""
    if len(text) > MAX_GRADED_CHARS:
        return None
    text = unicodedata.normalize("NFKC", text).translate(_MINUS_SIGNS)  # "６" is 6, "6½" 61⁄2
    if _HEDGED_NUMBER.search(text):
        return None
    found: list[tuple[int, int, float, str | None]] = []
    for m in _NUMBER.finditer(text):
        value = float(m["digits"].replace(",", ""))
        negative = "-" in (m["sign"], m["sign2"])
        currency = _CURRENCIES.get(m["currency"]) if m["currency"] else None
        found.append((m.start(), m.end(), -value if negative else value, currency))
    for m in _NUMBER_WORD.finditer(text):
        tens, ones, small = m.groups()
        if small:
            value = _SMALL_NUMBERS.index(small.lower())
        else:
            value = 20 + 10 * _TENS.index(tens.lower())
            value += _SMALL_NUMBERS.index(ones.lower()) if ones else 0
        found.append((m.start(), m.end(), float(value), None))
    if len(found) != 1:
        return None
    _, end, value, unit = found[0]
    scale = _SCALE_AFTER.match(text, end)
    if scale:
        value *= _SCALES[scale[1].lower()]
        end = scale.end()
    if not math.isfinite(value):
        return None
    if unit is None and (after := _UNIT_AFTER.match(text, end)):
        unit = _unit(after[1])
    return Quantity(value, unit)


def parse_number(text: str) -> float | None:
    """The value of the one number in `text` (`parse_quantity`), or None."""
    quantity = parse_quantity(text)
    return None if quantity is None else quantity.value


_CIRCA = re.compile(r"\b(?:c|ca|circa)\.?\s*(?=\d)", re.IGNORECASE)
_YEAR = re.compile(r"(?<![\w.,])(-?)(\d{1,4})(?!\w)(?![.,]\d)")
_BC = re.compile(r"\b(?:BC|BCE|B\.C\.?(?:E\.?)?)(?!\w)", re.IGNORECASE)


def parse_year(text: str) -> int | None:
    """The one year (a whole number of at most four digits) in `text`; "BC"/"BCE" or a
    leading minus negate it ("-44" is 44 BC); "c.", "ca." and "circa" may precede it. None
    when there is no year or several (a full date, "12 March 1771", names a day: refused)."""
    if len(text) > MAX_GRADED_CHARS:
        return None
    text = _CIRCA.sub("", text.translate(_MINUS_SIGNS))
    if re.search(r"\d{5,}|\d[.,]\d", text):
        return None  # a longer number or a decimal is no year
    found = _YEAR.findall(text)
    if len(found) != 1:
        return None
    minus, digits = found[0]
    year = int(digits)
    return -year if minus or _BC.search(text) else year


_ITEM_SPLIT = re.compile(r"[,;\n]+")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)]|\[|\()\s*")
_CONJUNCTION = re.compile(r"^(?:and|or|&)\s+", re.IGNORECASE)
_UNREADABLE = "\x00"
"""Prefix of an answer item that normalises to nothing ("-", "?"): it stays an item, one
that matches no accepted item, so junk in a list costs precision."""


def _clean_item(item: str) -> str:
    return normalize_text(_CONJUNCTION.sub("", _BULLET.sub("", item.strip()).strip(" ]).")).strip())


def _answer_item(raw: str) -> str | None:
    if not raw.strip():
        return None  # nothing between two separators ("a, , b", a trailing comma)
    return _clean_item(raw) or _UNREADABLE + raw.strip()


def list_items(text: str) -> list[frozenset[str]]:
    """The readings of a list answer as sets of normalised items: split at commas, semicolons
    and line breaks; and the same with every item also split at a whole-word "and" ("red,
    green and blue"). A row's accepted set matches either reading. A piece that normalises to
    nothing ("-", "?") stays, as an item no accepted set holds."""
    if len(text) > MAX_GRADED_CHARS:
        return []
    items = [x for x in map(_answer_item, _ITEM_SPLIT.split(text)) if x is not None]
    plain = frozenset(items)
    split = frozenset(part for x in plain for part in _split_at_and(x))
    return [r for r in dict.fromkeys((plain, split)) if r]


def _split_at_and(item: str) -> list[str]:
    parts = [p.strip() for p in re.split(r"\band\b", item)]
    return parts if len(parts) > 1 and all(parts) else [item]


_LETTER_ONLY = re.compile(r"^\s*[\[(]?\s*([A-Za-z])\s*[\])]?\s*[.:]?\s*$")
_LETTER_LEAD = re.compile(r"^\s*[\[(]?([A-Za-z])(?:[\]).:]|\s*[\])]\s*[.:]?)(?=\s+\S)")
_LETTER_SAID = re.compile(
    r"^\s*(?:the\s+)?(?:correct\s+|right\s+|final\s+)?(?:answer|option|choice)"
    r"(?:\s+is)?\s*[:\-]?\s*[\[(]?([A-Za-z])(?:[\]).:]|(?=\s)|$)",
    re.IGNORECASE,
)
# Another choice named after the first: a bracketed letter anywhere ("(C)", "[C", "C)"), or a
# letter right after the first, alone or joined by "or", "and", "vs", ",", "/", "&", "+", or a
# list of letters ("B. C. D.").
_ANOTHER_MARKED = re.compile(r"[\[(]\s*[A-Za-z](?![\w'])|(?<![\w'])[A-Za-z]\)")
_ANOTHER_NEXT = re.compile(
    r"^\s*(?:(?:or|and|vs\.?|versus|[,/&+])\s*)?[\[(]?[A-Za-z](?![\w'])", re.IGNORECASE
)
_ANOTHER_JOINED = re.compile(
    r"^\s*(?:(?:or|and|vs\.?|versus|[,/&+])\s*[\[(]?[A-Za-z](?![\w'])|[.,;:]?\s*[A-Z][.)](?!\w))",
    re.IGNORECASE,
)
_HEDGES = frozenset(
    [
        "or",
        "maybe",
        "perhaps",
        "possibly",
        "probably",
        "alternatively",
        "otherwise",
        "else",
        "unless",
        "might",
        "either",
        "could",
        "if",
        "also",
        "vs",
        "versus",
        "answer",
    ]
)
"""Words after which a second letter is a hedge towards it ("B: or maybe C", "B, unless C"),
or a second pick ("B. Final answer: C")."""
_WORD = re.compile(r"[^\W_]+")


def _hedged_choice(rest: str, picked: str, choices: frozenset[str] | None) -> bool:
    """Whether, after a hedge word, the rest names a letter other than the picked one: a word of
    one letter in any case ("c", "'C'"), one of `choices` when the question's letters are known
    (else any but the article "a" and the pronoun "I"), and any letter outside ASCII (a
    Cyrillic "С" looks like a choice). One pass over the words: linear in the answer."""
    hedged = False
    for word in _WORD.findall(unicodedata.normalize("NFKC", rest)):
        if word.lower() in _HEDGES:
            hedged = True
        elif hedged and len(word) == 1 and word.upper() != picked:
            if not word.isascii():
                return True
            if word.upper() in choices if choices else word not in ("a", "I", "i"):
                return True
    return False


_CHOICE_LINE = re.compile(r"^\s*[\[(]?([A-Z])[\]).:]\s+\S", re.MULTILINE)


def question_choices(question: str) -> frozenset[str] | None:
    """The letters a question offers as choices, one per line ("(A) text", "B) text", "C.
    text"); None when it lists fewer than two."""
    letters = frozenset(_CHOICE_LINE.findall(question))
    return letters if len(letters) >= 2 else None


def _another_choice(
    rest: str, next_letter: re.Pattern[str], picked: str, choices: frozenset[str] | None
) -> bool:
    """Whether the text after the picked letter names a second choice."""
    if _ANOTHER_MARKED.search(rest) or next_letter.match(rest):
        return True
    return _hedged_choice(rest, picked, choices)


def choice_letter(text: str, choices: frozenset[str] | None = None) -> str | None:
    """The letter a choice answer picks (upper case), or None when it names none or more than
    one ("B or C", "(B) or (C)", "option B C D" pick none) or hedges towards another ("B: or
    maybe C"; with the question's `choices`, only their letters count as such, else any lone
    letter). Emphasis marks ("**B**") are dropped and whitespace runs read as one space, so the
    patterns never backtrack over a run."""
    if len(text) > MAX_GRADED_CHARS:
        return None
    text = " ".join(text.replace("*", " ").split())
    m = _LETTER_ONLY.match(text)
    if m:
        return m.group(1).upper()
    for lead, next_letter in ((_LETTER_LEAD, _ANOTHER_JOINED), (_LETTER_SAID, _ANOTHER_NEXT)):
        m = lead.match(text)
        if m:
            picked = m.group(1).upper()
            rest = text[m.end() :]
            return None if _another_choice(rest, next_letter, picked, choices) else picked
    return None


COMPARISON_PHRASES = ("more common", "less common", "same frequency")
"""OOLONG's comparison phrases (its metric looks for them inside the answer)."""
_OOLONG_TEMPLATE = re.compile(r"'Answer: (.+?) is \[X\] (.+?)', where \[X\]")
"""The answer sentence an OOLONG comparison question asks for, with its two subjects."""


def comparison_phrases(text: str) -> set[str]:
    """OOLONG's comparison phrases a text holds, as whole words, after normalising (how an
    accepted answer names its comparison)."""
    normal = f" {normalize_text(text)} "
    return {p for p in COMPARISON_PHRASES if f" {p} " in normal}


_COMPARISON_WORDINGS = {
    "more common": ("more common", "more frequent", "more often", "commoner", "more numerous"),
    "less common": ("less common", "less frequent", "less often", "rarer", "fewer", "scarcer"),
    "same frequency": (
        "same frequency",
        "equally common",
        "equally frequent",
        "as common as",
        "as frequent as",
        "as often as",
    ),
}
"""Every wording of each comparison, OOLONG's phrase first: an answer must hold one wording
once, so a second (a hedge, or a claim taken back) is seen whatever words it uses."""
_NEGATIONS = frozenset({"not", "no", "never", "nor", "neither", "hardly", "t"})
"""Words that turn a comparison around just before it ("isn't" reads "isn t")."""


def _comparison_text(text: str) -> str | None:
    """An answer as comparisons are read: emphasis marks and invisible format characters
    dropped, normalised, padded with spaces; None when a letter outside ASCII is left (a
    look-alike letter can hide a second comparison from the search)."""
    text = unicodedata.normalize("NFKC", strip_answer_label(text))
    text = "".join(c for c in text if unicodedata.category(c) != "Cf").replace("*", " ")
    normal = normalize_text(text)
    if any(c.isalpha() and not c.isascii() for c in normal):
        return None
    return f" {normal} "


def _comparison_matches(answer: str, task: TaskRecord) -> bool:
    normal = _comparison_text(answer)
    if normal is None or " more or less " in normal:
        return False
    found = [
        (start, start + len(wording) + 2, kind)
        for kind, wordings in _COMPARISON_WORDINGS.items()
        for wording in wordings
        for start in _occurrences(normal, f" {wording} ")
    ]
    if len(found) != 1:
        return False  # none, a hedge between two, or one said twice
    ((start, end, kind),) = found
    if not any(kind in comparison_phrases(a) for a in _accepted(task)):
        return False
    if set(normal[:start].split()[-2:]) & _NEGATIONS:
        return False  # "not more common than"
    template = _OOLONG_TEMPLATE.search(task.question)
    rest = normal[:start].split() + normal[end - 1 :].split()
    if not template or not [w for w in rest if w not in ("than", "as")]:
        return True  # the phrase alone, or a sentence where the question gives no template
    # A sentence must be the one asked for: its first subject before the comparison and its
    # second after (either way round for "the same frequency").
    first, second = (f" {normalize_text(x)} " for x in template.groups())
    in_order = first in normal[: start + 1] and second in normal[end - 1 :]
    swapped = second in normal[: start + 1] and first in normal[end - 1 :]
    return in_order or (kind == "same frequency" and swapped)


def _occurrences(text: str, part: str) -> list[int]:
    found, start = [], text.find(part)
    while start >= 0:
        found.append(start)
        start = text.find(part, start + 1)
    return found


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
            for item in answer:
                if not _clean_item(item):
                    return (
                        f"{where} has the item {item!r}, which is empty after normalisation "
                        "(nothing an answer could match)"
                    )
            continue
        if not isinstance(answer, str):
            return f"{where} must be a string"
        if kind == "text" and not normalize_text(answer):
            return f"{where} is empty after normalisation"
        if kind == "number" and parse_number(answer) is None:
            return f"{where} {answer!r} is not one number"
        if kind == "year" and parse_year(answer) is None:
            return f"{where} {answer!r} is not one year"
        if kind == "choice" and choice_letter(answer) is None:
            return f"{where} {answer!r} is not a choice letter"
        if kind == "comparison" and len(comparison_phrases(answer)) != 1:
            phrases = ", ".join(f'"{p}"' for p in COMPARISON_PHRASES)
            return f"{where} {answer!r} does not hold exactly one of {phrases}"
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
        credited = kind == "list" or (kind == "number" and task.number_credit_base is not None)
        return Grade(False, 0.0 if credited else None)
    if kind == "list":
        golds = [frozenset(_clean_item(x) for x in items) for items in task.answer_lists]
        readings = list_items(strip_answer_label(answer))
        correct = any(r == g for r in readings for g in golds)
        partial = max((_f1(r, g) for r in readings for g in golds), default=0.0)
        return Grade(correct, partial)
    if kind == "number":
        got = parse_quantity(answer)
        return Grade(_number_matches(got, task), _number_credit(got, task))
    if kind == "comparison":
        return Grade(_comparison_matches(answer, task))
    if kind == "year":
        got_year = parse_year(answer)
        return Grade(got_year is not None and got_year in {parse_year(a) for a in _accepted(task)})
    if kind == "choice":
        letter = choice_letter(answer, question_choices(task.question))
        return Grade(letter is not None and letter in {choice_letter(a) for a in _accepted(task)})
    got_text = normalize_text(strip_answer_label(answer))
    return Grade(bool(got_text) and got_text in {normalize_text(a) for a in _accepted(task)})


def _number_credit(got: Quantity | None, task: TaskRecord) -> float | None:
    """`number_credit_base ** |error|` against the nearest accepted number in the same unit
    (OOLONG's partial credit for numbers, which it gives whole numbers only: a fraction earns
    it only when right); None when the row gives no base."""
    base = task.number_credit_base
    if base is None:
        return None
    if got is not None and not got.value.is_integer():
        return 1.0 if _number_matches(got, task) else 0.0
    errors = [
        abs(got.value - gold.value)
        for gold in map(parse_quantity, _accepted(task))
        if got is not None
        and gold is not None
        and not (gold.unit and got.unit and got.unit != gold.unit)
    ]
    if not errors:
        return 0.0
    error = max(0.0, min(errors) - task.tolerance)
    return base**error if error < 1_000 else 0.0


def _number_matches(got: Quantity | None, task: TaskRecord) -> bool:
    """An accepted number within the tolerance, in the accepted answer's unit when it has one
    (a bare number is read in the question's unit: "42" for "42 km"; "42 miles" is not)."""
    if got is None:
        return False
    for gold in map(parse_quantity, _accepted(task)):
        if gold is None or (gold.unit and got.unit and got.unit != gold.unit):
            continue
        # A relative slack of 1e-9 absorbs float rounding ("0.3" against 0.1 + 0.2).
        if math.isclose(got.value, gold.value, rel_tol=1e-9, abs_tol=task.tolerance):
            return True
    return False
