"""Where a task record's document comes from, for either source of tasks.

A synthetic record's document is regenerated from its seed (and cached by the generator). A
user record's document is the text the row loader put in the document store under its content
hash: records stay small (a key, never the text), and the same text loaded twice is stored once.
Every caller that needs a record's document goes through `task_document` (or `atask_document` on
an event loop), so it works for both sources.

The store keeps each text in a file of a folder shared by every process of the machine (named
by its hash, written once) and maps it read-only: the pages are the operating system's page
cache, held once however many processes serve the same rows (an env-server pool, the OpenEnv
server beside it), and a text is decoded from its pages when asked for (0.1 ms for 0.9 MB). With
no usable folder it keeps the texts in the process's memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import stat
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fathom_rlm.documents.tasks.record import TaskRecord

__all__ = [
    "DOCUMENTS",
    "DOCUMENT_DIR_VARIABLE",
    "MAX_STORED_CHARS",
    "DocumentStore",
    "DocumentStoreFullError",
    "UnknownDocumentError",
    "atask_document",
    "default_document_dir",
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


DOCUMENT_DIR_VARIABLE = "FATHOM_RLM_DOCUMENT_DIR"
"""Names the folder of stored texts; set to the empty string, texts stay in each process."""


def default_document_dir() -> Path | None:
    """`$FATHOM_RLM_DOCUMENT_DIR`, else ``fathom-rlm/documents`` in the user's cache folder
    (`$XDG_CACHE_HOME` or ``~/.cache``); None when the variable is set empty."""
    value = os.environ.get(DOCUMENT_DIR_VARIABLE)
    if value is not None:
        return Path(value) if value else None
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "fathom-rlm" / "documents"


def _private_folder(folder: Path) -> bool:
    """Make `folder` (mode 0700) if it is missing; True when it is a folder of this user that
    no one else can write, so no other account can put words in a model's document."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def _map_if_same(path: Path, data: bytes) -> mmap.mmap | None:
    """A read-only map of `path` if the file holds exactly `data`; None if it is missing, empty
    (an empty file cannot be mapped) or holds anything else."""
    try:
        with path.open("rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, prot=mmap.PROT_READ)
    except (OSError, ValueError):
        return None
    with memoryview(mapped) as view:
        same = view == data
    if not same:
        mapped.close()
    return mapped if same else None


def _map_text(folder: Path, key: str, data: bytes) -> mmap.mmap:
    """A read-only map of the file holding `data` in `folder`: the file another process wrote
    if its bytes are `data`, else one written now (a private temporary file renamed into place,
    so a reader never sees half a file; a truncated or altered file is replaced)."""
    path = folder / key.replace(":", "-")
    mapped = _map_if_same(path, data)
    if mapped is None:
        handle_fd, temporary = tempfile.mkstemp(dir=folder, prefix=".writing-")
        try:
            with os.fdopen(handle_fd, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        mapped = _map_if_same(path, data)
    if mapped is None:
        raise OSError(f"{path} does not hold the text written to it")
    return mapped


class DocumentStore:
    """Texts by content hash (thread-safe), at most `max_chars` characters in all: each one
    mapped from a file of `directory` (see the module's docstring) or, with no usable folder,
    held in memory.

    `directory` is a folder, None, or a function giving one (by default
    `default_document_dir`, called when the first text is stored)."""

    def __init__(
        self,
        max_chars: int = MAX_STORED_CHARS,
        directory: Path | Callable[[], Path | None] | None = default_document_dir,
    ) -> None:
        self._texts: dict[str, str | mmap.mmap] = {}
        self._lengths: dict[str, int] = {}
        self.max_chars = max_chars
        self._directory = directory
        self._lock = threading.Lock()

    @property
    def directory(self) -> Path | None:
        """The folder the texts are mapped from; None when they are held in memory."""
        if callable(self._directory):
            self._directory = self._directory()
            if self._directory is not None and not _private_folder(self._directory):
                self._keep_in_memory(f"{self._directory} is not a folder only this user can write")
        return self._directory

    def _keep_in_memory(self, why: str) -> None:
        warnings.warn(
            f"fathom-rlm keeps documents in each process's memory: {why} "
            f"(${DOCUMENT_DIR_VARIABLE} names another folder)",
            RuntimeWarning,
            stacklevel=3,
        )
        self._directory = None

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
            if self.chars + size > self.max_chars:
                raise DocumentStoreFullError(
                    f"the documents need {size:,} more characters beside the {self.chars:,} "
                    f"loaded, over the store's bound of {self.max_chars:,}"
                )
            stored: dict[str, str | mmap.mmap] = dict(new)
            if (folder := self.directory) is not None:
                try:
                    for key, text in new.items():
                        stored[key] = _map_text(folder, key, text.encode("utf-8"))
                except OSError as exc:  # a full or read-only disk: memory still works
                    self._keep_in_memory(f"{folder} cannot take them ({exc})")
                    stored = dict(new)
            self._texts.update(stored)
            self._lengths.update((k, len(t)) for k, t in new.items())

    @property
    def chars(self) -> int:
        """Characters stored."""
        return sum(self._lengths.values())

    def get(self, key: str) -> str:
        try:
            held = self._texts[key]
        except KeyError:
            raise UnknownDocumentError(
                f"document {key} is not loaded in this process: load its rows first "
                "(fathom_rlm.userdata.load_rows)"
            ) from None
        return held if isinstance(held, str) else str(held, "utf-8")

    def __contains__(self, key: object) -> bool:
        return key in self._texts

    def __len__(self) -> int:
        return len(self._texts)

    def discard(self, key: str) -> None:
        with self._lock:
            held = self._texts.pop(key, None)
            self._lengths.pop(key, None)
            if isinstance(held, mmap.mmap):
                with contextlib.suppress(BufferError):  # a reader still decoding: freed later
                    held.close()


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
