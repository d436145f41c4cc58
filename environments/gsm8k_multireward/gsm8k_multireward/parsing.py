"""Answer extraction: the last ``\\boxed{...}`` after the reasoning block.

Rules (one left-to-right regex pass, so linear in the completion length):

* If the completion contains ``</think>``, only the text after the LAST ``</think>`` counts.
  A ``<think>`` without a later ``</think>`` is an unfinished reasoning block: there is no
  answer (``None``), even when a box appears inside it.
* A completion with no think tags at all is read whole.
* The answer is the content of the last top-level ``\\boxed{...}``; braces nest, ``\\{`` and
  ``\\}`` are literal braces and do not count. ``\\boxed {x}`` (spaces before the brace) is
  accepted, like TeX does. If the last box is never closed (a truncated completion) there is
  no answer: an earlier box is not promoted to the final answer.
* An empty or whitespace-only box is no answer. ``\\boxed{\\boxed{18}}`` yields ``18``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

# Order matters: a box opener must win over the generic escape, and an escape (``\\{``,
# ``\\}``, ``\\\\``) must be consumed before its brace is seen as structure.
_TOKENS = re.compile(r"\\boxed\s*\{|\\.|[{}]", re.DOTALL)
_BOX_OPEN = re.compile(r"\\boxed\s*\{")
# Searches over a long completion go in steps of this many characters: on a worker thread, each
# step is one call that holds the interpreter lock, so other threads (a server's event loop) get
# it back between steps instead of after a single scan of megabytes.
_STEP = 1 << 20


def _find(text: str, needle: str) -> int:
    """``text.find(needle)``, in steps."""
    for start in range(0, len(text), _STEP):
        found = text.find(needle, start, start + _STEP + len(needle) - 1)
        if found >= 0:
            return found
    return -1


def _rfind(text: str, needle: str) -> int:
    """``text.rfind(needle)``, in steps from the end."""
    for end in range(len(text), 0, -_STEP):
        found = text.rfind(needle, max(0, end - _STEP - len(needle) + 1), end)
        if found >= 0:
            return found
    return -1


_TOKEN_STEP = 1 << 16


def _tokens(text: str, step: int = _TOKEN_STEP) -> Iterator[re.Match[str]]:
    """The matches of `_TOKENS` in `text`, as one `finditer` pass would give them, found window
    by window: the regex engine walks a long stretch without a token in one call that holds the
    interpreter lock (a 15 MB reply of plain prose held it ~170 ms, stalling a server's event
    loop), so no call gets more than `step` characters. Only a token that starts with a
    backslash can cross a window's end, and only from the window's last run of backslashes
    (a box opener holds no other backslash); an odd run's last backslash starts such a token,
    so the window ends before it, and a window that would be empty matches that token alone."""
    pos, size = 0, len(text)
    while pos < size:
        end = min(size, pos + step)
        if end < size:
            last = text.rfind("\\", pos, end)
            if last >= 0:
                window = text[pos : last + 1]
                if (len(window) - len(window.rstrip("\\"))) % 2:
                    end = last
        if end == pos:
            match = _TOKENS.match(text, pos)
            if match is None:  # a backslash that ends the text
                return
            yield match
            pos = match.end()
            continue
        yield from _TOKENS.finditer(text, pos, end)
        pos = end


def answer_region(completion: str) -> str | None:
    """The part of the completion that may hold the final answer, or None if unfinished."""
    cut = _rfind(completion, THINK_CLOSE)
    tail = completion if cut < 0 else completion[cut + len(THINK_CLOSE) :]
    if _find(tail, THINK_OPEN) >= 0:
        # A reasoning block opened and never closed: the model did not finish thinking.
        return None
    return tail


def last_boxed(text: str) -> str | None:
    """Content of the last top-level ``\\boxed{...}`` in ``text`` (None when absent/unclosed).

    A content that is exactly one more box (``\\boxed{\\boxed{18}}``) is unwrapped.
    """
    depth = 0
    opened: list[int] = []  # content start of each open box (only boxes are tracked)
    box_depths: list[int] = []  # brace depth at which each open box was opened
    box_close: dict[int, int] = {}  # content start -> position of its closing brace
    last: tuple[int, int] | None = None
    for match in _tokens(text):
        token = match.group()
        if token[-1] == "{" and token.startswith("\\boxed"):
            depth += 1
            opened.append(match.end())
            box_depths.append(depth)
        elif token == "{":
            if opened:
                depth += 1
        elif token == "}" and opened:
            if box_depths[-1] == depth:
                start = opened.pop()
                box_depths.pop()
                box_close[start] = match.start()
                if not opened:
                    last = (start, match.start())
            depth -= 1
        # Any other token is an escape (``\\x``) and is skipped.
    if opened:
        return None  # the final box never closes
    if last is None:
        return None
    start, end = last
    # Each step moves both ends inwards, so unwrapping stays linear even for deep nesting.
    while True:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        inner = _BOX_OPEN.match(text, start, end)
        if inner is None or box_close.get(inner.end()) != end - 1:
            break
        start, end = inner.end(), end - 1
    return text[start:end]


def extract_answer(completion: str) -> str | None:
    """The model's final answer: the last boxed content after the reasoning, or None."""
    if not completion:
        return None
    region = answer_region(completion)
    if region is None:
        return None
    content = last_boxed(region)
    if content is None:
        return None
    return content or None
