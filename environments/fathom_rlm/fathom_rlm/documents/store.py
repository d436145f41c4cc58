"""Where a task record's document comes from, for either source of tasks.

A synthetic record's document is regenerated from its seed (and cached by the generator). A
user record's document is the text the row loader put in this process's document store under its
content hash: records stay small (a key, never the text), and the same text loaded twice is
stored once. Every caller that needs a record's document goes through `task_document` (or
`atask_document` on an event loop), so it works for both sources.
"""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fathom_rlm.documents.tasks.record import TaskRecord

__all__ = [
    "DOCUMENTS",
    "MAX_STORED_CHARS",
    "DocumentStore",
    "DocumentStoreFullError",
    "UnknownDocumentError",
    "atask_document",
    "document_id",
    "task_document",
]


class UnknownDocumentError(KeyError):
    """A user record whose document is not in this process's store."""

    def __str__(self) -> str:  # KeyError would print the repr of its argument
        return str(self.args[0]) if self.args else ""


def document_id(text: str) -> str:
    """The key of a text: ``sha256:`` and the hex digest of its UTF-8 bytes."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


MAX_STORED_CHARS = 1_000_000_000
"""The most characters the process's store holds (about 1 GB of ASCII text, 250M tokens):
rows whose documents would take it over are refused when loaded, never half-stored."""


class DocumentStoreFullError(ValueError):
    """New texts would take the store over its bound; nothing of them was stored."""


class DocumentStore:
    """Process-local texts by content hash (thread-safe; texts are immutable strings), at most
    `max_chars` characters in all."""

    def __init__(self, max_chars: int = MAX_STORED_CHARS) -> None:
        self._texts: dict[str, str] = {}
        self._chars = 0
        self.max_chars = max_chars
        self._lock = threading.Lock()

    def put(self, text: str) -> str:
        """Store `text`; returns its key."""
        key = document_id(text)
        self.put_many({key: text})
        return key

    def put_many(self, texts: dict[str, str]) -> None:
        """Store every text under its key (`document_id(text)`, computed once by the caller),
        all or none: `DocumentStoreFullError` when the new ones would not fit."""
        with self._lock:
            new = {k: t for k, t in texts.items() if k not in self._texts}
            size = sum(len(t) for t in new.values())
            if self._chars + size > self.max_chars:
                raise DocumentStoreFullError(
                    f"the documents need {size:,} more characters beside the {self._chars:,} "
                    f"loaded, over the store's bound of {self.max_chars:,}"
                )
            self._texts.update(new)
            self._chars += size

    @property
    def chars(self) -> int:
        """Characters stored."""
        return self._chars

    def get(self, key: str) -> str:
        try:
            return self._texts[key]
        except KeyError:
            raise UnknownDocumentError(
                f"document {key} is not loaded in this process: load its rows first "
                "(fathom_rlm.userdata.load_rows)"
            ) from None

    def __contains__(self, key: object) -> bool:
        return key in self._texts

    def __len__(self) -> int:
        return len(self._texts)

    def discard(self, key: str) -> None:
        with self._lock:
            text = self._texts.pop(key, None)
            self._chars -= len(text) if text is not None else 0


DOCUMENTS = DocumentStore()
"""The store the row loader fills and `task_document` reads."""


def task_document(task: TaskRecord) -> str:
    """The record's document text: from the store for a user record, regenerated from the seed
    (cached) for a synthetic one."""
    if task.document_id is not None:
        return DOCUMENTS.get(task.document_id)
    from fathom_rlm.documents.document import get_document

    return get_document(task.seed, task.doc_tokens).text


async def atask_document(task: TaskRecord) -> str:
    """`task_document` for async callers: a synthetic document is built off the event loop,
    once for concurrent callers (`aget_document`); a stored text is returned at once."""
    if task.document_id is not None:
        return DOCUMENTS.get(task.document_id)
    from fathom_rlm.documents.inflight import aget_document

    return (await aget_document(task.seed, task.doc_tokens)).text
