"""Reading the final answer out of an assistant message.

Shared by the loop (to record the answer and to return a sub-call's answer to its caller) and by
the rewards (format gate, correctness), so both agree on what "the answer" is.
"""

from __future__ import annotations

import re

_OPEN = "<answer>"
_CLOSE = "</answer>"
_THINK_END = "</think>"
_OPEN_TAG = re.compile(re.escape(_OPEN), re.IGNORECASE)
_CLOSE_TAG = re.compile(re.escape(_CLOSE), re.IGNORECASE)


def visible_text(message: str | None) -> str:
    """The part of a reply that counts: the text after the last `</think>` if there is one."""
    if not message:
        return ""
    cut = message.rfind(_THINK_END)
    return message[cut + len(_THINK_END) :] if cut >= 0 else message


def answer_blocks(message: str | None) -> list[str]:
    """Every `<answer>…</answer>` block in the visible text, inner text stripped, in order: from
    each opening tag to the first closing tag after it. One pass over the text (a lazy regex
    scanned to the end once per opening tag: a reply of 40,000 opening tags took minutes)."""
    text = visible_text(message)
    blocks: list[str] = []
    position = 0
    while (start := _OPEN_TAG.search(text, position)) is not None:
        end = _CLOSE_TAG.search(text, start.end())
        if end is None:
            break  # no later opening tag can find a closing one either
        blocks.append(text[start.end() : end.start()].strip())
        position = end.end()
    return blocks


def single_answer(message: str | None) -> str | None:
    """The inner text iff the visible text has exactly one well-formed block and no stray tags.

    A stray `<answer>` or `</answer>` (unbalanced, nested) makes the format invalid: otherwise a
    model could hide a second candidate behind a broken tag.
    """
    text = visible_text(message)
    lowered = text.lower()
    if lowered.count(_OPEN) != 1 or lowered.count(_CLOSE) != 1:
        return None
    blocks = answer_blocks(text)
    return blocks[0] if len(blocks) == 1 else None


def sub_call_answer(message: str | None) -> str:
    """What a sub-call hands back to its caller: its answer block, else its whole visible text."""
    blocks = answer_blocks(message)
    if blocks:
        return blocks[-1]
    return visible_text(message).strip()
