"""Text helpers offered to sandboxed code in place of modules: regex, JSON, counting.

Each is a plain function that takes and returns plain data (str, int, tuple, list, dict or
None), never a module or an object whose attributes lead to one (a `re.Match` would). Like
restricted.py, this runs inside the isolated worker and imports only the standard library.
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

MAX_REGEX_PATTERN_CHARS = 2_000
MAX_REGEX_RESULTS = 100_000

_FLAG_LETTERS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


# `\bname\b` is how code usually searches for a name, and a leading `\b` keeps the regex
# engine from scanning for the literal first (about 40x slower over a long text). For a plain
# literal L (no metacharacters, escapes of ASCII punctuation only), `L(?<=\bL)` matches exactly
# the same spans at the same positions, with no group added, and starts with the literal.
_BOUNDED_LITERAL = re.compile(r"\\b((?:[^\\.^$*+?{}\[\]|()#\s]|\\[ -/:-@\[-`{-~])+)(\\b)?")


def scannable(pattern: str) -> str:
    m = _BOUNDED_LITERAL.fullmatch(pattern)
    if m is None:
        return pattern
    literal = m.group(1)
    return f"{literal}(?<=\\b{literal}){m.group(2) or ''}"


def _compile_pattern(pattern: Any, flags: Any) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise TypeError("regex pattern must be a str")
    if len(pattern) > MAX_REGEX_PATTERN_CHARS:
        raise ValueError(f"regex pattern longer than {MAX_REGEX_PATTERN_CHARS} chars")
    value = 0
    if isinstance(flags, str):
        for letter in flags.lower():
            if letter not in _FLAG_LETTERS:
                raise ValueError(f"unknown regex flag {letter!r}; use letters from 'imsx'")
            value |= _FLAG_LETTERS[letter]
    elif isinstance(flags, int) and not isinstance(flags, bool):
        value = flags & (re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE)
    else:
        raise TypeError("flags must be a str of letters from 'imsx' (e.g. 'i') or an int")
    try:
        return re.compile(scannable(pattern), value)
    except re.error as exc:
        raise ValueError(f"bad regex: {exc}") from None


def _text(value: Any, what: str = "text") -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    return value


def _match_tuple(m: re.Match[str]) -> tuple[int, int, str, tuple[Any, ...]]:
    return (m.start(), m.end(), m.group(0), m.groups())


def re_search(pattern: str, text: str, flags: Any = 0) -> tuple[Any, ...] | None:
    """First match as (start, end, matched_text, groups) or None."""
    m = _compile_pattern(pattern, flags).search(_text(text))
    return None if m is None else _match_tuple(m)


def re_match(pattern: str, text: str, flags: Any = 0) -> tuple[Any, ...] | None:
    """Match at the start of text as (start, end, matched_text, groups) or None."""
    m = _compile_pattern(pattern, flags).match(_text(text))
    return None if m is None else _match_tuple(m)


def re_findall(pattern: str, text: str, flags: Any = 0) -> list[Any]:
    """Like re.findall: list of strings, or of tuples when the pattern has several groups."""
    return _compile_pattern(pattern, flags).findall(_text(text))


def re_finditer(pattern: str, text: str, flags: Any = 0) -> list[tuple[Any, ...]]:
    """All matches as a list of (start, end, matched_text, groups)."""
    out = []
    for m in _compile_pattern(pattern, flags).finditer(_text(text)):
        out.append(_match_tuple(m))
        if len(out) >= MAX_REGEX_RESULTS:
            break
    return out


def re_count(pattern: str, text: str, flags: Any = 0) -> int:
    """Number of non-overlapping matches."""
    return len(_compile_pattern(pattern, flags).findall(_text(text)))


def re_split(pattern: str, text: str, maxsplit: int = 0, flags: Any = 0) -> list[Any]:
    """Like re.split."""
    return _compile_pattern(pattern, flags).split(_text(text), maxsplit=int(maxsplit))


def re_sub(pattern: str, repl: str, text: str, count: int = 0, flags: Any = 0) -> str:
    """Like re.sub with a string replacement (callables are refused: they would see Match)."""
    if not isinstance(repl, str):
        raise TypeError("re_sub replacement must be a str (group refs like \\1 work)")
    try:
        return _compile_pattern(pattern, flags).sub(repl, _text(text), count=int(count))
    except re.error as exc:
        raise ValueError(f"bad replacement: {exc}") from None


def re_escape(text: str) -> str:
    """Escape text for use inside a pattern."""
    return re.escape(_text(text))


def to_json(obj: Any, indent: Any = None) -> str:
    """JSON text of plain data (dict/list/str/int/float/bool/None); other objects via str()."""
    if indent is not None and not isinstance(indent, int):
        raise TypeError("indent must be an int or None")
    return json.dumps(obj, ensure_ascii=False, indent=indent, default=str)


def from_json(text: str) -> Any:
    """Parse JSON text into plain data."""
    return json.loads(_text(text))


def safe_map(func: Callable[..., Any], *iterables: Iterable[Any]) -> list[Any]:
    return list(map(func, *iterables))


def safe_filter(func: Callable[[Any], Any] | None, iterable: Iterable[Any]) -> list[Any]:
    return list(filter(func, iterable))


def _counter(iterable: Iterable[Any] = ()) -> dict[Any, int]:
    """Counts as a plain dict, most common first."""
    return dict(collections.Counter(iterable).most_common())


def _most_common(iterable: Iterable[Any], n: int = 10) -> list[tuple[Any, int]]:
    return collections.Counter(iterable).most_common(int(n))


# The names sandboxed code calls them by, in the order the sandbox's builtins list them.
TEXT_HELPERS: dict[str, Callable[..., Any]] = {
    "re_search": re_search,
    "re_match": re_match,
    "re_findall": re_findall,
    "re_finditer": re_finditer,
    "re_count": re_count,
    "re_split": re_split,
    "re_sub": re_sub,
    "re_escape": re_escape,
    "to_json": to_json,
    "from_json": from_json,
    "counter": _counter,
    "most_common": _most_common,
}
