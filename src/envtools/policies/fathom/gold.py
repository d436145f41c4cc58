"""Gold in hand: a lookup from question text to the task row. Only attacks that model a policy
which already holds the answer (or its evidence) use it; no honest policy imports this module.

`perfect_read` is the old oracle reader kept for those attacks: it answers the gold once a
supporting span is inside the text it was handed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fathom_rlm.documents import get_document

from envtools.policies.fathom.protocol import NOT_FOUND, _partial, _prefix, split_prompt


@dataclass
class TaskIndex:
    """Question text -> task row, for the perfect reader (never used to decide where to look)."""

    autoload_splits: tuple[str, ...] = ("eval", "train")
    """Standard splits regenerated (once) on the first unknown question."""
    autoload_doc_tokens: tuple[int, ...] = (200_000,)
    """Document lengths those splits are regenerated at (the environment's `doc_tokens`)."""
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    _loaded: bool = False

    def register(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.rows[_question_key(row["question"])] = row

    def lookup(self, question: str) -> dict[str, Any] | None:
        key = _question_key(question)
        if key not in self.rows and not self._loaded and self.autoload_splits:
            self._loaded = True
            from fathom_rlm.documents import build_split

            for doc_tokens in self.autoload_doc_tokens:
                for split in self.autoload_splits:
                    self.register(build_split(split, doc_tokens=doc_tokens))  # type: ignore[arg-type]
        return self.rows.get(key)


def _question_key(question: str) -> str:
    return " ".join(question.split())


TASKS = TaskIndex()
register_tasks = TASKS.register


def _next_entity(row: dict[str, Any], span: list[int]) -> str | None:
    """The person a multi-hop chain reaches through the hop whose evidence is `span`."""
    document = get_document(int(row["seed"]), int(row["doc_tokens"]))
    key = next((k for k, s in document.spans.items() if list(s) == list(span)), None)
    if key is None:
        return None
    kind, subject, _ = key
    world = document.world
    if kind == "maker":
        return world.people[world.artefacts[subject].maker].name
    if kind == "founding":
        return world.people[world.organisations[subject].founder].name
    if kind == "mentor":
        mentor = world.people[subject].mentor
        return None if mentor is None else world.people[mentor].name
    return None


def perfect_read(prompt: str, shown: str, index: TaskIndex = TASKS) -> str:
    """What a perfect reader of `shown` answers to `prompt` (see the module docstring)."""
    question, known_text = split_prompt(prompt)
    row = index.lookup(question)
    if row is None:
        return NOT_FOUND
    text = get_document(int(row["seed"]), int(row["doc_tokens"])).text
    spans = [list(s) for s in row["spans"]]
    quotes = [text[s:e] for s, e in spans]
    in_shown = [q in shown for q in quotes]
    if row["family"] == "aggregation":
        return str(sum(in_shown))
    in_known = [q in known_text for q in quotes]
    known = [a or b for a, b in zip(in_shown, in_known, strict=True)]
    if row["family"] == "multi_hop":
        before, after = _prefix(in_known), _prefix(known)
        if after == len(quotes):
            return str(row["answer"])
        if after > before:
            return _partial(quotes[before:after], _next_entity(row, spans[after - 1]))
        return NOT_FOUND
    if all(known):
        return str(row["answer"])
    new = [q for q, a, b in zip(quotes, in_shown, in_known, strict=True) if a and not b]
    return _partial(new, None) if new else NOT_FOUND
