"""The slice reader: a scripted stand-in for the model as a reader of the text it was handed.

It answers a sub-question from the facts a perfect reader takes from that text alone and from
the quotes its caller passed down under "Known so far:" (they are text in its prompt too), and
says `not found` when those facts do not settle anything. It never consults the gold, the task
row, the world or any text outside its prompt.
"""

from __future__ import annotations

import re

from envtools.policies.fathom import gold
from envtools.policies.fathom.protocol import _CHAPTERS, _ID_TOKEN


def required_depth(question: str) -> int:
    """The recursion depth the question's family needs, read off its wording."""
    try:
        from fathom_rlm.documents import parse_question  # type: ignore[attr-defined]

        return int(parse_question(question).depth)
    except Exception:  # an older generator without the parser
        if _ID_TOKEN.search(question):
            return 0
        return 2 if _CHAPTERS.search(question) and re.search(r"(?i)how many", question) else 1


def read_slice(prompt: str, text: str, *, complete: bool = False) -> str:
    """The reader's answer to `prompt` about `text` (see the module docstring). `complete`
    says the caller has read all there is, so the facts at hand must settle it."""
    return gold.perfect_read(prompt, text)
