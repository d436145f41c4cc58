"""Cheap, exact reading of plain-number answers, and pre-filters for pathological ones.

GSM8K golds are plain integers (a few negative, some with thousands commas), so almost every
answer a model writes is a number in light LaTeX dress. ``plain_number`` reads those forms
exactly (as a ``Fraction``) in microseconds; anything it does not recognise is left to
math-verify. ``is_pathological`` rejects answers that no honest GSM8K answer looks like and
that can stall a symbolic engine (huge inputs, deep nesting, power towers, big factorials).

Accepted forms (all compared exactly, never with float rounding):

* signs ``-``, ``+``, ``−`` (U+2212); digits with valid thousands groups (``1,000``,
  ``1{,}000``, ``1\\,000``); decimals (``18.0``, ``.5``); a trailing sentence
  period (``18.``);
* dollar signs ``$``/``\\$`` and math delimiters ``$...$``, ``\\(...\\)``, ``\\[...\\]``;
* wrappers ``\\text{18}``, ``\\textbf{18}``, ``\\mathrm{18}``, ``\\mathbf{18}``;
* ``\\frac{a}{b}`` / ``\\dfrac`` / ``\\tfrac`` / ``a/b`` with plain-number parts;
* units after the number: ``\\text{ dollars}``, ``\\mbox{...}``, ``\\mathrm{...}`` and
  plain words (``18 dollars``, ``18 km/h``), up to four words, separated from the number by
  a space; words that change the value (``thousand``, ``dozen``, ``half``, ``squared``,
  ``times`` ...) or single letters (``18 k``) make the answer unrecognised instead;
* percent (``18\\%``, ``18%``, ``18 percent``) and degrees (``30^\\circ``, ``30°``).
"""

from __future__ import annotations

import re
from fractions import Fraction

# No GSM8K answer is anywhere near this long; longer boxed content scores 0 without parsing.
MAX_ANSWER_CHARS = 1000
# Deepest brace nesting accepted for symbolic grading (\frac{\frac{a}{b}}{c} is depth 2).
MAX_BRACE_DEPTH = 12
# Largest exponent or factorial argument (in digits) accepted for symbolic grading.
MAX_EXPONENT_DIGITS = 3
# Plain numbers longer than this are not read exactly (and are far from any gold).
_MAX_NUMBER_CHARS = 200

_NUMBER = re.compile(
    r"(?P<sign>[-+\u2212]?)\s*"
    r"(?P<int>\d{1,3}(?:(?:,|\{,\}|\\,|\\ )\d{3})+|\d+)?"
    r"(?:\.(?P<frac>\d+))?\.?"
)
_GROUP_SEPARATORS = re.compile(r",|\{,\}|\\,|\\ ")
_FRACTION = re.compile(
    r"(?P<sign>[-+\u2212]?)\s*\\[dt]?frac\s*\{(?P<num>[^{}]*)\}\s*\{(?P<den>[^{}]*)\}"
)
_SLASH = re.compile(r"(?P<num>[^/]+)/(?P<den>[^/]+)")
_WRAPPER = re.compile(
    r"\\(?:text|textbf|textrm|textnormal|mathrm|mathbf|mbox|boxed)\s*\{([^{}]*)\}"
)
_UNIT_GROUP = re.compile(r"\\(?:text|textrm|textnormal|mathrm|mbox|textit)\s*\{([^{}]*)\}\s*$")
_UNIT_WORDS = re.compile(r"[A-Za-z][A-Za-z'\-]*(?:/[A-Za-z][A-Za-z'\-]*)*")
_DELIMITERS = (("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_PERCENT = re.compile(r"(?:\\?%|\s+percent|\s+per\s+cent)$")
_DEGREES = re.compile(r"(?:\^\s*\{?\s*\\circ\s*\}?|°)$")
_SPACING = re.compile(r"\\[!;:]|~|\\left|\\right")
_TRAILING_SPACE = re.compile(r"(?:\\[, ]|\s)+$")

# Words after a number that change its value or turn it into an expression.
# fmt: off
_VALUE_WORDS = frozenset({
    "hundred", "hundreds", "thousand", "thousands", "million", "millions", "billion", "billions",
    "trillion", "trillions", "dozen", "dozens", "score", "half", "halves", "third", "thirds",
    "quarter", "quarters", "fourth", "fourths", "fifth", "fifths", "tenth", "tenths",
    "hundredth", "hundredths", "thousandth", "thousandths", "squared", "cubed", "square", "cube",
    "root", "roots", "power", "powers", "times", "plus", "minus", "over", "divided",
    "multiplied", "and", "or", "to", "not", "no", "point", "percent",
})
# fmt: on
_MAX_UNIT_WORDS = 4


def plain_number(answer: str) -> tuple[Fraction, bool] | None:
    """Read ``answer`` as an exact number.

    Returns ``(value, is_percent)`` or None when the answer is not a recognised plain number.
    """
    text = answer.strip()
    if not text or len(text) > _MAX_NUMBER_CHARS:
        return None
    text = _strip_delimiters(text)
    text = text.replace("\\$", "").replace("$", "")
    text = _SPACING.sub("", text).strip()
    # Unwrap \text{18} and similar (each pass removes one wrapper, so this terminates).
    for _ in range(3):
        unwrapped = _WRAPPER.fullmatch(text)
        if unwrapped is None:
            break
        text = unwrapped.group(1).strip().replace("\\$", "").replace("$", "")
    is_percent = False
    match = _PERCENT.search(text)
    if match is not None:
        is_percent = True
        text = text[: match.start()].rstrip()
    else:
        text = _strip_units(text)
        if text is None:
            return None
        match = _DEGREES.search(text)
        if match is not None:
            text = text[: match.start()].rstrip()
    value = _number_or_fraction(text)
    if value is None:
        return None
    return value, is_percent


def numbers_equal(answer: tuple[Fraction, bool], gold: Fraction) -> bool:
    """Exact comparison; a percent answer matches either its number or its number / 100."""
    value, is_percent = answer
    if value == gold:
        return True
    return is_percent and value / 100 == gold


def _strip_delimiters(text: str) -> str:
    for left, right in _DELIMITERS:
        if len(text) > len(left) + len(right) and text.startswith(left) and text.endswith(right):
            inner = text[len(left) : len(text) - len(right)]
            if left == "$" and "$" in inner.replace("\\$", ""):
                continue  # "$5 and $6": not a single math span
            return inner.strip()
    return text


def _strip_units(text: str) -> str | None:
    """Remove trailing unit text; None when the trailing words could change the value."""
    # \text{ dollars} style groups, possibly several (\text{ m}\text{/s}).
    for _ in range(4):
        group = _UNIT_GROUP.search(text)
        if group is None or group.start() == 0:
            break
        if not _harmless_words(group.group(1)):
            return None
        text = _TRAILING_SPACE.sub("", text[: group.start()])
    # Plain words after the number, separated by whitespace: "18 dollars".
    head, sep, tail = _split_number_prefix(text)
    if sep and tail:
        if not _harmless_words(tail):
            return None
        text = head
    return text


def _split_number_prefix(text: str) -> tuple[str, str, str]:
    # Find the first whitespace followed by a letter; everything after it is unit words.
    match = re.search(r"\s+(?=[A-Za-z])", text)
    if match is None:
        return text, "", ""
    return text[: match.start()], match.group(), text[match.end() :]


def _harmless_words(words: str) -> bool:
    words = words.strip().rstrip(".")
    if not words:
        return True
    parts = words.split()
    if len(parts) > _MAX_UNIT_WORDS:
        return False
    for part in parts:
        if _UNIT_WORDS.fullmatch(part) is None:
            return False
        for piece in part.lower().split("/"):
            if len(piece) < 2 or piece in _VALUE_WORDS:
                return False
    return True


def _number_or_fraction(text: str) -> Fraction | None:
    fraction = _FRACTION.fullmatch(text)
    if fraction is None:
        slash = _SLASH.fullmatch(text)
        if slash is not None:
            num, den = _number(slash.group("num")), _number(slash.group("den"))
            if num is None or den is None or den == 0:
                return None
            return num / den
        return _number(text)
    num, den = _number(fraction.group("num")), _number(fraction.group("den"))
    if num is None or den is None or den == 0 or num < 0 or den < 0:
        return None
    value = num / den
    return -value if fraction.group("sign") in ("-", "\u2212") else value


def _number(text: str) -> Fraction | None:
    text = text.strip()
    match = _NUMBER.fullmatch(text)
    if match is None or (match.group("int") is None and match.group("frac") is None):
        return None
    whole = _GROUP_SEPARATORS.sub("", match.group("int") or "0")
    frac = match.group("frac") or ""
    value = Fraction(int(whole + frac), 10 ** len(frac))
    return -value if match.group("sign") in ("-", "\u2212") else value


def parse_gold(gold: str) -> Fraction | None:
    """A gold answer as an exact number (None if the gold is not a plain number)."""
    read = plain_number(gold)
    if read is None or read[1]:
        return None
    return read[0]


_POWER_TOWER = re.compile(r"\^\s*\{[^{}]*\^|\^\s*[^{\s]\s*\^|\^\s*\{\s*\{")
_EXPONENT_DIGITS = re.compile(r"\^\s*\{?\s*[-+]?\s*(\d+)")
_FACTORIAL = re.compile(r"(\d+)\s*!|[)}\]]\s*!")
_BIG_OPERATOR = re.compile(r"\\(?:sum|prod|binom|choose|int|lim|infty)")


def is_pathological(answer: str) -> bool:
    """True for answers that are far outside GSM8K and could stall a symbolic engine."""
    if len(answer) > MAX_ANSWER_CHARS:
        return True
    depth = 0
    deepest = 0
    for char in answer:
        if char == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif char == "}":
            depth -= 1
    if deepest > MAX_BRACE_DEPTH:
        return True
    if answer.count("^") > 4 or _POWER_TOWER.search(answer):
        return True
    for match in _EXPONENT_DIGITS.finditer(answer):
        if len(match.group(1)) > MAX_EXPONENT_DIGITS:
            return True
    for match in _FACTORIAL.finditer(answer):
        if match.group(1) is None or len(match.group(1)) > MAX_EXPONENT_DIGITS:
            return True
    return _BIG_OPERATOR.search(answer) is not None
