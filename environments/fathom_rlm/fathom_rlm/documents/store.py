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
    "DocumentStore",
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


class DocumentStore:
    """Process-local texts by content hash (thread-safe; texts are immutable strings)."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._lock = threading.Lock()

    def put(self, text: str) -> str:
        """Store `text`; returns its key."""
        key = document_id(text)
        with self._lock:
            self._texts.setdefault(key, text)
        return key

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
            self._texts.pop(key, None)


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
