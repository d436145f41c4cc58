"""The typed record of one question row, and its JSON form for framework boundaries.

Every layer (rewards, adapters, policies, evaluation) reads a task through the attributes of
:class:`TaskRecord`, so a renamed field is a type error, not a silent default. A task becomes a
plain dict only where a framework needs one (a verifiers or ``datasets`` row, a JSON line, an
OpenEnv message): :meth:`TaskRecord.to_json` on the way out, :meth:`TaskRecord.from_json` on the
way back in. The JSON form is the row the splits have always produced (same keys, same order,
lists for spans), so dataset columns and the pinned row hashes do not change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from numbers import Integral
from typing import Any

__all__ = ["TaskRecord", "TaskRecordError"]


class TaskRecordError(ValueError):
    """A JSON task row that does not have exactly the record's keys, or has a malformed value."""


@dataclass(frozen=True)
class TaskRecord:
    """One question about one generated document: what is asked, the gold answer, and the
    coordinates that regenerate the document (``seed``, ``doc_tokens``) and locate its support.

    ``spans`` are the character ranges [start, end) of the supporting sentences; ``region`` is
    the range the question asks about as a whole (the counted chapters of an aggregation), or
    None when the answer rests on the spans alone. ``depth`` is the recursion depth the family
    needs, which the reward's recursion term compares with the depth a rollout reached.
    """

    question: str
    answer: str
    aliases: tuple[str, ...]
    seed: int
    family: str
    depth: int
    spans: tuple[tuple[int, int], ...]
    doc_tokens: int
    region: tuple[int, int] | None

    def to_json(self) -> dict[str, Any]:
        """The JSON-safe row (key order and list shapes as the dataset columns have them)."""
        return {
            "question": self.question,
            "answer": self.answer,
            "aliases": list(self.aliases),
            "seed": self.seed,
            "family": self.family,
            "depth": self.depth,
            "spans": [list(span) for span in self.spans],
            "doc_tokens": self.doc_tokens,
            "region": None if self.region is None else list(self.region),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskRecord:
        """The record of a row made by :meth:`to_json`; a :class:`TaskRecordError` (one line)
        when a key is missing or unknown or a value has the wrong shape."""
        if not isinstance(data, Mapping):
            raise TaskRecordError(f"task row must be a JSON object, not {type(data).__name__}")
        missing = [k for k in FIELD_NAMES if k not in data]
        unknown = sorted(str(k) for k in data if k not in FIELD_NAMES)
        if missing or unknown:
            parts = [f"missing keys {missing}"] if missing else []
            parts += [f"unknown keys {unknown}"] if unknown else []
            raise TaskRecordError(f"task row: {'; '.join(parts)}")
        try:
            return cls(
                question=_text(data["question"], "question"),
                answer=_text(data["answer"], "answer"),
                aliases=tuple(_text(a, "aliases") for a in _list(data["aliases"], "aliases")),
                seed=_integer(data["seed"], "seed"),
                family=_text(data["family"], "family"),
                depth=_integer(data["depth"], "depth"),
                spans=tuple(_pair(s, "spans") for s in _list(data["spans"], "spans")),
                doc_tokens=_integer(data["doc_tokens"], "doc_tokens"),
                region=None if data["region"] is None else _pair(data["region"], "region"),
            )
        except (TypeError, ValueError) as exc:
            raise TaskRecordError(f"task row: {exc}") from None


FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(TaskRecord))


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{key} must be a string, not {type(value).__name__}")
    return value


def _integer(value: Any, key: str) -> int:
    # Integral, not int: a dataset column may hand back numpy integers.
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{key} must be an integer, not {type(value).__name__}")
    return int(value)


def _list(value: Any, key: str) -> Sequence[Any]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{key} must be a list, not {type(value).__name__}")
    return value


def _pair(value: Any, key: str) -> tuple[int, int]:
    items = _list(value, key)
    if len(items) != 2:
        raise ValueError(f"{key} needs [start, end] pairs, got {list(items)!r}")
    return (_integer(items[0], key), _integer(items[1], key))
