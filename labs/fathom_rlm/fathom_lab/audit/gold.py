"""Gold in hand: a lookup from question text to the task row. Only attacks that model a policy
which already holds the answer (or its evidence) use it; no honest policy imports this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from fathom_rlm.documents import TaskRecord
from fathom_rlm.tokens import CHARS_PER_TOKEN
from fathom_rlm.userdata.grading import task_question


@dataclass
class TaskIndex:
    """Question text -> task row, for attacks that hold the gold."""

    autoload_splits: tuple[str, ...] = ("eval", "train")
    """Standard splits regenerated (once) on the first unknown question."""
    autoload_doc_tokens: tuple[int, ...] = (200_000,)
    """Document lengths those splits are regenerated at (the environment's `doc_tokens`)."""
    rows: dict[str, TaskRecord] = field(default_factory=dict)
    _loaded: bool = False
    _loaded_lengths: set[int] = field(default_factory=set)

    def register(self, rows: Iterable[TaskRecord]) -> None:
        for row in rows:
            # Keyed by the question as the model is asked it (a user row's answer line too).
            self.rows[_question_key(task_question(row))] = row

    def lookup(self, question: str) -> TaskRecord | None:
        key = _question_key(question)
        if key not in self.rows and not self._loaded and self.autoload_splits:
            self._loaded = True
            from fathom_rlm.documents import build_split

            for doc_tokens in self.autoload_doc_tokens:
                for split in self.autoload_splits:
                    self.register(build_split(split, doc_tokens=doc_tokens))  # type: ignore[arg-type]
        return self.rows.get(key)

    def require(self, question: str, doc_chars: int) -> TaskRecord:
        """The row of a root question, loading the standard splits at the length of the request's
        document if needed; UnknownTaskError (a refusal the server answers with 422) otherwise.

        An attack without its row could only answer "unknown", which would look like a reward of
        0 rather than a misconfigured run.
        """
        row = self.lookup(question)
        if row is None and self.autoload_splits:
            from fathom_rlm.documents import build_split

            for doc_tokens in document_length_guesses(doc_chars):
                if doc_tokens not in self._loaded_lengths:
                    self._loaded_lengths.add(doc_tokens)
                    for split in self.autoload_splits:
                        self.register(build_split(split, doc_tokens=doc_tokens))  # type: ignore[arg-type]
                row = self.rows.get(_question_key(question))
                if row is not None:
                    break
        if row is None:
            served = sorted({r.doc_tokens for r in self.rows.values()})
            raise UnknownTaskError(
                "the gold-in-hand fathom attacks know no task with this question for a document "
                f"of {doc_chars:,} characters (about {doc_chars // CHARS_PER_TOKEN:,} tokens; "
                "rows known at "
                f"doc_tokens {served or 'none'}). They serve the eval and train splits at whole "
                "hundreds of tokens; start the policy server with --fathom-doc-tokens set to "
                "the run's doc_tokens."
            )
        return row


class UnknownTaskError(ValueError):
    """No task row for a question: the attack refuses instead of answering "unknown"."""


def document_length_guesses(doc_chars: int) -> list[int]:
    """`doc_tokens` values a document of `doc_chars` characters was probably generated at: the
    generator lands a few dozen characters past doc_tokens x 4, so round down to hundreds, then
    thousands."""
    tokens = doc_chars // CHARS_PER_TOKEN
    guesses = [tokens // 100 * 100, tokens // 1000 * 1000]
    return [g for i, g in enumerate(guesses) if g > 0 and g not in guesses[:i]]


def _question_key(question: str) -> str:
    return " ".join(question.split())


TASKS = TaskIndex()
register_tasks = TASKS.register
