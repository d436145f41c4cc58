"""Gold in hand: a lookup from question text to the task row. Only attacks that model a policy
which already holds the answer (or its evidence) use it; no honest policy imports this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TaskIndex:
    """Question text -> task row, for attacks that hold the gold."""

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
