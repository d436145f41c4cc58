"""User rows: a JSONL file of documents, questions and accepted answers, as task records.

One JSON object a line (blank lines are skipped)::

    {"id": "optional string",
     "document": "the text"            or  "document_path": "relative to the JSONL file",
     "question": "...",
     "answers": [accepted, ...]        or  "answer": accepted,
     "answer_kind": "text" | "number" | "year" | "list" | "choice" | "comparison",
                                       (default "text")
     "tolerance": 0.5,                 (kind "number": absolute, default 0)
     "number_credit_base": 0.75,       (kind "number": partial credit base ** |error|; none)
     "evidence": [{"start": 0, "end": 10}, ...] or ["a quoted passage", ...],
     "depth": 1}                       (the recursion depth the question needs)

Every row is checked before any is returned (nothing is half-loaded); the first bad row raises
a `UserRowError` whose one-line message names the file, the line and the field. A UTF-8
byte-order mark at the start of the file or of a document is dropped. A `document_path` is
relative to the rows file's folder and must stay inside it (no absolute paths, no "..", no
symlink out); a document is a regular file of at most `MAX_DOCUMENT_BYTES`. A row repeated
without an id (same document, question, answers and kind) is refused: it would count twice.
Loading puts each document in the process's document store (`fathom_rlm.documents.store`)
under its content hash, and each record carries only that key, so records stay small.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from fathom_rlm.documents.store import DOCUMENTS, DocumentStoreFullError, document_id
from fathom_rlm.documents.tasks.record import ANSWER_KINDS, TaskRecord
from fathom_rlm.tokens import CHARS_PER_TOKEN
from fathom_rlm.userdata.errors import RowFieldError, UserRowError
from fathom_rlm.userdata.formats import to_native
from fathom_rlm.userdata.grading import parse_accepted

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_LINE_CHARS",
    "MAX_RECORD_BYTES",
    "NATIVE_KEYS",
    "USER_FAMILY",
    "DocumentCache",
    "RowFieldError",
    "UserRowError",
    "load_rows",
    "parse_row",
    "records_from_rows",
]

NATIVE_KEYS = frozenset(
    {
        "id",
        "document",
        "document_path",
        "question",
        "answers",
        "answer",
        "answer_kind",
        "tolerance",
        "number_credit_base",
        "evidence",
        "depth",
    }
)
BOM = b"\xef\xbb\xbf"
USER_FAMILY = "user"
"""The `family` of every user record (reports group rows by family)."""
MAX_DOCUMENT_BYTES = 4_000_000
"""Largest document, in UTF-8 bytes (about a million tokens; the environment is built for
~200K): a larger one is an error, so that no row can make the token budget meaningless or
exhaust memory (`/dev/zero` as a path is refused, not read)."""
MAX_RECORD_BYTES = 8_000
"""Largest JSON form of one record: task rows travel whole through trainers (verifiers v1
keeps task data under 10 KB), so a question or answer list larger than this is an error."""


@dataclass(frozen=True)
class ParsedRow:
    """A checked row, its document read, not yet in the store."""

    row_id: str | None
    document: str
    document_key: str
    """`document_id(document)`."""
    question: str
    answers: tuple[str | tuple[str, ...], ...]
    answer_kind: str
    tolerance: float
    spans: tuple[tuple[int, int], ...]
    depth: int | None
    number_credit_base: float | None = None


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _answer_value(value: Any, kind: str, field: str) -> str | tuple[str, ...]:
    """An accepted answer as the grader reads it: a string (a JSON number becomes its text),
    or for kind "list" a tuple of strings."""
    if isinstance(value, bool) or value is None:
        raise RowFieldError(field, f"an accepted answer is a string or a number, not {value!r}")
    if isinstance(value, str):
        return value
    if isinstance(value, Real):
        number = float(value)
        if not math.isfinite(number):
            raise RowFieldError(field, f"an accepted answer must be a finite number, not {value}")
        return str(int(number)) if number.is_integer() else repr(number)
    if isinstance(value, Sequence):
        if kind != "list":
            raise RowFieldError(field, f"a list is an accepted answer only of kind list ({kind})")
        items = list(value)
        if not all(isinstance(x, str) for x in items):
            raise RowFieldError(field, "the items of a list answer must be strings")
        return tuple(items)
    raise RowFieldError(field, f"an accepted answer is a string, a number or a list, not {value!r}")


def _answers(row: Mapping[str, Any], kind: str) -> tuple[str | tuple[str, ...], ...]:
    if ("answers" in row) == ("answer" in row):
        raise RowFieldError("answers", "give exactly one of answers (a list) and answer")
    if "answer" in row:
        return (_answer_value(row["answer"], kind, "answer"),)
    values = row["answers"]
    if isinstance(values, str) or not isinstance(values, Sequence) or not values:
        raise RowFieldError("answers", "must be a non-empty list of accepted answers")
    if kind == "list" and all(isinstance(v, str) for v in values):
        raise RowFieldError(
            "answers", 'of a list row is a list of lists (or use "answer": [items])'
        )
    return tuple(_answer_value(v, kind, "answers") for v in values)


class DocumentCache:
    """The documents of one load: each file read and hashed once, each distinct text held once
    (a row that repeats a text gets the same string), so memory grows with documents, not
    rows."""

    def __init__(self) -> None:
        self._files: dict[Path, tuple[str, str]] = {}
        self.texts: dict[str, str] = {}
        """Key -> text of every document seen."""

    def file(self, name: Any, base: Path) -> tuple[str, str]:
        """(text, key) of the file `name` relative to `base` (see `_read_document`)."""
        path = _resolve(name, base)
        if path not in self._files:
            self._files[path] = self.text(_read_document(name, path))
        return self._files[path]

    def text(self, text: str) -> tuple[str, str]:
        """(the held copy of `text`, its key)."""
        key = document_id(text)
        return self.texts.setdefault(key, text), key


def _document(row: Mapping[str, Any], base: Path, cache: DocumentCache) -> tuple[str, str]:
    if ("document" in row) == ("document_path" in row):
        raise RowFieldError("document", "give exactly one of document and document_path")
    if "document" in row:
        text = row["document"]
        if not isinstance(text, str):
            raise RowFieldError("document", f"must be a string, not {type(text).__name__}")
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_DOCUMENT_BYTES:
            raise RowFieldError("document", f"{size:,} bytes, over the {MAX_DOCUMENT_BYTES:,} cap")
        text, key = cache.text(text)
    else:
        text, key = cache.file(row["document_path"], base)
    if not text.strip():
        raise RowFieldError("document_path" if "document_path" in row else "document", "empty")
    return text, key


def _resolve(name: Any, base: Path) -> Path:
    """`name` resolved against the rows file's folder `base`, which it must stay inside."""
    if not isinstance(name, str) or not name:
        raise RowFieldError("document_path", "must be a non-empty path string")
    folder = base.resolve()
    path = (folder / name).resolve()
    if not path.is_relative_to(folder):
        raise RowFieldError(
            "document_path", f"{name!r} is outside the rows file's folder (not allowed)"
        )
    return path


def _read_document(name: str, path: Path) -> str:
    """The text of the file `name` (resolved to `path`, inside the rows file's folder: a shared
    rows file must not be able to put "/etc/passwd" or "../.ssh/id_rsa" in a model's context):
    a regular UTF-8 file (a leading byte-order mark is dropped) of at most
    `MAX_DOCUMENT_BYTES`."""
    try:
        if not path.is_file():
            problem = "no such file" if not path.exists() else "not a regular file"
            raise RowFieldError("document_path", f"cannot read {name!r}: {problem}")
        with path.open("rb") as handle:
            data = handle.read(MAX_DOCUMENT_BYTES + 4)
        if len(data) > MAX_DOCUMENT_BYTES + 3 * data.startswith(BOM):
            raise RowFieldError(
                "document_path", f"{name!r} is over the {MAX_DOCUMENT_BYTES:,}-byte cap"
            )
        return data.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise RowFieldError("document_path", f"cannot read {name!r}: {_one_line(reason)}") from None


def _evidence(value: Any, document: str) -> tuple[tuple[int, int], ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise RowFieldError("evidence", "must be a list of {start, end} ranges or passages")
    spans: list[tuple[int, int]] = []
    for item in value:
        if isinstance(item, str):
            if not item.strip():
                raise RowFieldError("evidence", "an empty passage")
            start = document.find(item)
            if start < 0:
                raise RowFieldError("evidence", f"passage not in the document: {_one_line(item)!r}")
            span = (start, start + len(item))
        elif isinstance(item, Mapping):
            if set(item) != {"start", "end"}:
                raise RowFieldError("evidence", f"a range has exactly start and end: {item!r}")
            start, end = item["start"], item["end"]
            if any(isinstance(x, bool) or not isinstance(x, Integral) for x in (start, end)):
                raise RowFieldError("evidence", f"start and end must be integers: {item!r}")
            if not 0 <= start < end <= len(document):
                raise RowFieldError(
                    "evidence", f"range {start}:{end} is not inside the {len(document)} characters"
                )
            span = (int(start), int(end))
        else:
            raise RowFieldError("evidence", f"an item is a range or a passage, not {item!r}")
        if span not in spans:
            spans.append(span)
    return tuple(spans)


def parse_row(row: Any, base: Path, cache: DocumentCache | None = None) -> ParsedRow:
    """Check one native row (a JSON object); `base` is the folder `document_path` is relative
    to, `cache` the documents of the load it is part of. A `RowFieldError` names the first bad
    field."""
    if not isinstance(row, Mapping):
        raise RowFieldError("row", f"must be a JSON object, not {type(row).__name__}")
    unknown = sorted(str(k) for k in row if k not in NATIVE_KEYS)
    if unknown:
        raise RowFieldError(unknown[0], f"unknown key (known: {', '.join(sorted(NATIVE_KEYS))})")
    row_id = row.get("id")
    if row_id is not None and (isinstance(row_id, bool) or not isinstance(row_id, str | int)):
        raise RowFieldError("id", f"must be a string, not {type(row_id).__name__}")
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise RowFieldError("question", "missing or not a non-empty string")
    kind = row.get("answer_kind", "text")
    if kind not in ANSWER_KINDS:
        raise RowFieldError("answer_kind", f"must be one of {', '.join(ANSWER_KINDS)}: {kind!r}")
    answers = _answers(row, kind)
    problem = parse_accepted(kind, answers)
    if problem:
        raise RowFieldError("answers" if "answers" in row else "answer", problem)
    tolerance = row.get("tolerance", 0)
    if "tolerance" in row and kind != "number":
        raise RowFieldError("tolerance", f"applies to answer_kind number only, not {kind}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, Real) or not tolerance >= 0:
        raise RowFieldError("tolerance", f"must be a number >= 0, not {tolerance!r}")
    credit = row.get("number_credit_base")
    if credit is not None and kind != "number":
        raise RowFieldError("number_credit_base", f"applies to answer_kind number only, not {kind}")
    if credit is not None and (
        isinstance(credit, bool) or not isinstance(credit, Real) or not 0 < credit < 1
    ):
        raise RowFieldError("number_credit_base", f"must be a number between 0 and 1: {credit!r}")
    depth = row.get("depth")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, Integral)):
        raise RowFieldError("depth", f"must be an integer, not {depth!r}")
    if depth is not None and not 0 <= depth <= 8:
        raise RowFieldError("depth", f"must be from 0 to 8, not {depth}")
    document, key = _document(row, base, DocumentCache() if cache is None else cache)
    return ParsedRow(
        row_id=None if row_id is None else str(row_id),
        document=document,
        document_key=key,
        question=question,
        answers=answers,
        answer_kind=kind,
        tolerance=float(tolerance),
        spans=_evidence(row.get("evidence"), document),
        depth=None if depth is None else int(depth),
        number_credit_base=None if credit is None else float(credit),
    )


def _record(parsed: ParsedRow, key: str) -> TaskRecord:
    if parsed.answer_kind == "list":
        lists = tuple(a for a in parsed.answers if isinstance(a, tuple))
        answer, aliases = ", ".join(lists[0]), ()
    else:
        lists = ()
        texts = [a for a in parsed.answers if isinstance(a, str)]
        answer, aliases = texts[0], tuple(texts[1:])
    return TaskRecord(
        question=parsed.question,
        answer=answer,
        aliases=aliases,
        seed=0,
        family=USER_FAMILY,
        depth=parsed.depth,
        spans=parsed.spans,
        doc_tokens=math.ceil(len(parsed.document) / CHARS_PER_TOKEN),
        region=None,
        source="user",
        document_id=key,
        answer_kind=parsed.answer_kind,
        tolerance=parsed.tolerance,
        answer_lists=lists,
        row_id=parsed.row_id,
        number_credit_base=parsed.number_credit_base,
    )


def records_from_rows(
    rows: Iterable[Any], base: Path | str = ".", *, format: str = "native", where: str = "row"
) -> list[TaskRecord]:
    """Records of in-memory rows (`where` names them in errors: "row 3"); `format` names the
    row schema (`fathom_rlm.userdata.formats.FORMATS`)."""
    return _load(enumerate(rows, 1), Path(base), format, where, "no rows")


MAX_LINE_CHARS = 2 * MAX_DOCUMENT_BYTES
"""Longest line of a rows file (an inline document at the cap, with room for JSON escapes);
a longer one is an error read no further."""


def load_rows(
    path: Path | str, *, format: str = "native", limit: int | None = None
) -> list[TaskRecord]:
    """The records of a JSONL file of user rows (see the module docstring); `format` names a
    public row schema mapped onto the native row (`fathom_rlm.userdata.formats`); `limit`, when
    given, stops after that many rows (the rest of the file is not read). The file is read a
    line at a time."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8-sig")  # a BOM is no part of a row
    except OSError as exc:
        raise UserRowError(
            f"{path}: cannot read the rows: {_one_line(exc.strerror or exc)}"
        ) from None
    with handle:
        numbered = _json_lines(handle, path)
        return _load(numbered, path.parent, format, f"{path}: line", f"{path}: no rows", limit)


def _json_lines(handle: Any, path: Path) -> Iterator[tuple[int, Any]]:
    number = 0
    while True:
        number += 1
        try:
            line = handle.readline(MAX_LINE_CHARS + 1)
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise UserRowError(f"{path}: cannot read the rows: {_one_line(reason)}") from None
        if not line:
            return
        if len(line) > MAX_LINE_CHARS:
            raise UserRowError(
                f"{path}: line {number}: longer than {MAX_LINE_CHARS:,} characters (put a long "
                "document in a file and name it with document_path)"
            )
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            raise UserRowError(f"{path}: line {number}: not JSON: {_one_line(exc)}") from None


def _load(
    numbered: Iterable[tuple[int, Any]],
    base: Path,
    format: str,
    where: str,
    empty: str,
    limit: int | None = None,
) -> list[TaskRecord]:
    records: list[TaskRecord] = []
    cache = DocumentCache()
    ids: dict[str, int] = {}
    contents: dict[tuple[Any, ...], int] = {}
    for number, raw in numbered:
        try:
            row = parse_row(to_native(format, raw), base, cache)
            if row.row_id is not None and row.row_id in ids:
                raise RowFieldError("id", f"{row.row_id!r} repeats row {ids[row.row_id]}")
            # A row repeated without ids is most likely pasted twice: it would count double.
            content = (row.document_key, row.question, row.answers, row.answer_kind)
            if row.row_id is None and content in contents:
                raise RowFieldError(
                    "row",
                    f"repeats row {contents[content]} (same document, question and answers; "
                    "give each an id if the repeat is meant)",
                )
            record = _record(row, row.document_key)
            size = len(json.dumps(record.to_json()).encode("utf-8"))
            if size > MAX_RECORD_BYTES:
                raise RowFieldError(
                    "question",
                    f"the row's record is {size:,} bytes, over {MAX_RECORD_BYTES:,} (question "
                    "and answers travel in every task row; put long text in the document)",
                )
        except RowFieldError as exc:
            raise UserRowError(f"{where} {number}: {exc}") from None
        if row.row_id is not None:
            ids[row.row_id] = number
        else:
            contents.setdefault(content, number)
        records.append(record)
        if len(records) == limit:
            break  # the rest of the file is not read
    if not records:
        raise UserRowError(empty)
    # Only once every row is good do the documents enter the store, all or none.
    used = {r.document_id for r in records}
    try:
        DOCUMENTS.put_many({k: t for k, t in cache.texts.items() if k in used})
    except DocumentStoreFullError as exc:
        raise UserRowError(f"{where.removesuffix(': line')}: {exc}") from None
    return records
