"""The slice reader: a scripted stand-in for the model as a reader of the text it was handed.

It answers a sub-question from the facts a perfect reader takes from that text alone and from
the quotes its caller passed down under "Known so far:" (they are text in its prompt too), and
says `not found` when those facts do not settle anything. It never consults the gold, the task
row, the world or any text outside its prompt.
"""

from __future__ import annotations

from envtools.policies.fathom import gold


def read_slice(prompt: str, text: str) -> str:
    """The reader's answer to `prompt` about `text` (see the module docstring)."""
    return gold.perfect_read(prompt, text)
