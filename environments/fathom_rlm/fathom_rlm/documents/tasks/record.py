"""The typed record of one question row, and its JSON form for framework boundaries.

Every layer (rewards, adapters, policies, evaluation) reads a task through the attributes of
:class:`TaskRecord`, so a renamed field is a type error, not a silent default. A task becomes a
plain dict only where a framework needs one (a verifiers or ``datasets`` row, a JSON line, an
OpenEnv message): :meth:`TaskRecord.to_json` on the way out, :meth:`TaskRecord.from_json` on the
way back in. The JSON form is the row the splits have always produced (same keys, same order,
lists for spans), so dataset columns and the pinned row hashes do not change.

A record has one of two sources. A *synthetic* record regenerates its document from ``seed``
and ``doc_tokens``. A *user* record (a row of the user's own JSONL, ``fathom_rlm.userdata``)
names its document by ``document_id``, the content hash under which the loader put the text in
the process-local document store (``fathom_rlm.documents.store``): the record stays small and
never holds the text. The fields a user record adds are left out of the JSON while they hold
their synthetic defaults, so a synthetic row's JSON is the same as before they existed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from numbers import Integral, Real
from typing import Any, Literal

__all__ = ["ANSWER_KINDS", "SOURCES", "TaskRecord", "TaskRecordError"]

SOURCES: tuple[str, ...] = ("synthetic", "user")
ANSWER_KINDS: tuple[str, ...] = ("text", "number", "year", "list", "choice", "comparison")
"""How an answer is graded (`fathom_rlm.userdata.grading`); synthetic rows are all "text"."""


class TaskRecordError(ValueError):
    """A JSON task row that does not have exactly the record's keys, or has a malformed value."""


@dataclass(frozen=True)
class TaskRecord:
    """One question about one generated document: what is asked, the gold answer, and the
    coordinates that regenerate the document (``seed``, ``doc_tokens``) and locate its support.

    ``spans`` are the character ranges [start, end) of the supporting sentences; ``region`` is
    the range the question asks about as a whole (the counted chapters of an aggregation), or
    None when the answer rests on the spans alone. ``depth`` is the recursion depth the family
    needs, which the reward's recursion term compares with the depth a rollout reached; a user
    row that states none has None, and the recursion term does not apply to it.

    The fields after ``region`` belong to user rows (their defaults are a synthetic row's):
    ``source``, ``document_id`` (the store key of the text), ``answer_kind``, ``tolerance``
    (kind "number": absolute), ``number_credit_base`` (kind "number": a near number earns
    ``base ** |error|`` as partial credit, OOLONG's 0.75; None: no partial credit),
    ``answer_lists`` (kind "list": every accepted set of items; ``answer`` then shows the first,
    comma-separated) and ``row_id`` (the row's own ``id``).
    """

    question: str
    answer: str
    aliases: tuple[str, ...]
    seed: int
    family: str
    depth: int | None
    spans: tuple[tuple[int, int], ...]
    doc_tokens: int
    region: tuple[int, int] | None
    source: Literal["synthetic", "user"] = "synthetic"
    document_id: str | None = None
    answer_kind: str = "text"
    tolerance: float = 0.0
    answer_lists: tuple[tuple[str, ...], ...] = ()
    row_id: str | None = None
    number_credit_base: float | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {self.source!r}")
        if self.answer_kind not in ANSWER_KINDS:
            raise ValueError(
                f"answer_kind must be one of {', '.join(ANSWER_KINDS)}, not {self.answer_kind!r}"
            )
        if (self.source == "user") != (self.document_id is not None):
            raise ValueError("a user record needs a document_id, and only a user record has one")
        if self.depth is None and self.source != "user":
            raise ValueError("a synthetic record needs a depth")

    def to_json(self, *, all_fields: bool = False) -> dict[str, Any]:
        """The JSON-safe row (key order and list shapes as the dataset columns have them); the
        user-row fields only when they differ from their synthetic defaults, unless
        `all_fields` (a table whose columns must be the same for every row)."""
        row = {
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
        extra = {
            "source": self.source,
            "document_id": self.document_id,
            "answer_kind": self.answer_kind,
            "tolerance": self.tolerance,
            "answer_lists": [list(items) for items in self.answer_lists],
            "row_id": self.row_id,
            "number_credit_base": self.number_credit_base,
        }
        row.update((k, v) for k, v in extra.items() if all_fields or v != _DEFAULTS[k])
        return row

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskRecord:
        """The record of a row made by :meth:`to_json`; a :class:`TaskRecordError` (one line)
        when a key is missing or unknown or a value has the wrong shape."""
        if not isinstance(data, Mapping):
            raise TaskRecordError(f"task row must be a JSON object, not {type(data).__name__}")
        missing = [k for k in REQUIRED_NAMES if k not in data]
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
                depth=None if data["depth"] is None else _integer(data["depth"], "depth"),
                spans=tuple(_pair(s, "spans") for s in _list(data["spans"], "spans")),
                doc_tokens=_integer(data["doc_tokens"], "doc_tokens"),
                region=None if data["region"] is None else _pair(data["region"], "region"),
                source=_text(data.get("source", "synthetic"), "source"),  # type: ignore[arg-type]
                document_id=_optional_text(data.get("document_id"), "document_id"),
                answer_kind=_text(data.get("answer_kind", "text"), "answer_kind"),
                tolerance=_number(data.get("tolerance", 0.0), "tolerance"),
                answer_lists=tuple(
                    tuple(_text(x, "answer_lists") for x in _list(items, "answer_lists"))
                    for items in _list(data.get("answer_lists", []), "answer_lists")
                ),
                row_id=_optional_text(data.get("row_id"), "row_id"),
                number_credit_base=_optional_number(
                    data.get("number_credit_base"), "number_credit_base"
                ),
            )
        except (TypeError, ValueError) as exc:
            raise TaskRecordError(f"task row: {exc}") from None


FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(TaskRecord))
_DEFAULTS: dict[str, Any] = {
    "source": "synthetic",
    "document_id": None,
    "answer_kind": "text",
    "tolerance": 0.0,
    "answer_lists": [],
    "row_id": None,
    "number_credit_base": None,
}
REQUIRED_NAMES: tuple[str, ...] = tuple(n for n in FIELD_NAMES if n not in _DEFAULTS)
"""The keys every JSON row has (a synthetic row has exactly these)."""


def _optional_text(value: Any, key: str) -> str | None:
    return None if value is None else _text(value, key)


def _optional_number(value: Any, key: str) -> float | None:
    return None if value is None else _number(value, key)


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{key} must be a number, not {type(value).__name__}")
    return float(value)


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
