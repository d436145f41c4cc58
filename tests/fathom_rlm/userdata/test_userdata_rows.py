"""User rows: the loader's records, its one-line errors (line and field) and the record's JSON.

Each bad row is written to a real JSONL file and loaded as a user would; nothing is mocked.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from fathom_rlm.documents import DOCUMENTS, TaskRecord, task_document
from fathom_rlm.documents.store import UnknownDocumentError, document_id
from fathom_rlm.userdata import UserRowError, load_dataset, load_rows, records_from_rows
from fathom_rlm.userdata.rows import MAX_DOCUMENT_BYTES, MAX_LINE_CHARS, DocumentCache

FIXTURES = Path(__file__).parent / "fixtures"
DOC = "The mill stood by the river. It was built in 1801 by Mara Quell. Its wheel had 24 paddles."


def _write(tmp_path: Path, rows: list[Any], name: str = "rows.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _row(**fields: Any) -> dict[str, Any]:
    return {"document": DOC, "question": "Who built the mill?", "answer": "Mara Quell"} | fields


def _many(**fields: Any) -> dict[str, Any]:
    """A row with `answers` (and no `answer`)."""
    return {"document": DOC, "question": "Who built the mill?"} | fields


def test_the_fixture_loads_into_small_user_records() -> None:
    records = load_rows(FIXTURES / "harbour.jsonl")
    text = (FIXTURES / "harbour.txt").read_text(encoding="utf-8")
    assert [r.row_id for r in records] == [
        "founder",
        "ships",
        "storm-year",
        "cargoes",
        "wall",
        "mason",
    ]
    assert [r.answer_kind for r in records] == ["text", "number", "year", "list", "choice", "text"]
    first = records[0]
    assert first.source == "user" and first.family == "user" and first.seed == 0
    assert first.document_id == document_id(text) and task_document(first) == text
    assert first.doc_tokens == math.ceil(len(text) / 4)
    assert first.answer == "Agnes Tolliver" and first.aliases == ("Tolliver",)
    assert first.depth == 1 and records[1].depth is None
    # A quoted passage becomes the span where it stands.
    ((start, end),) = first.spans
    assert text[start:end] == "The first harbourmaster was Agnes Tolliver"
    assert records[1].answer == "214" and records[1].spans == ()
    assert records[3].answer_lists == (("timber", "salt fish", "wool", "slate"),)
    assert records[3].answer == "timber, salt fish, wool, slate"
    for record in records:
        row = record.to_json()
        assert "document" not in json.dumps(row) or text not in json.dumps(row)
        assert len(json.dumps(row).encode()) < 10_000
        assert TaskRecord.from_json(json.loads(json.dumps(row))) == record


def test_a_synthetic_records_json_has_none_of_the_user_keys() -> None:
    record = TaskRecord("q?", "a", (), 7, "exact_id", 0, ((1, 2),), 16_000, None)
    assert list(record.to_json()) == [
        "question",
        "answer",
        "aliases",
        "seed",
        "family",
        "depth",
        "spans",
        "doc_tokens",
        "region",
    ]
    assert TaskRecord.from_json(record.to_json()) == record
    full = record.to_json(all_fields=True)
    assert full["source"] == "synthetic" and full["document_id"] is None
    assert TaskRecord.from_json(full) == record


def test_the_same_text_is_stored_once_and_a_missing_one_is_a_clear_error(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            _row(id="a"),
            _row(id="b", question="When was the mill built?", answer="1801", answer_kind="year"),
        ],
    )
    a, b = load_rows(path)
    assert a.document_id == b.document_id and task_document(b) == DOC
    orphan = TaskRecord(
        "q?",
        "a",
        (),
        0,
        "user",
        None,
        (),
        10,
        None,
        source="user",
        document_id=document_id("never loaded"),
    )
    with pytest.raises(UnknownDocumentError, match="not loaded in this process"):
        task_document(orphan)


def test_document_path_is_relative_to_the_jsonl_file(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "mill.txt").write_text(DOC, encoding="utf-8")
    row = {"document_path": "docs/mill.txt", "question": "Who built it?", "answer": "Mara Quell"}
    (record,) = load_rows(_write(tmp_path, ["", row, "   "]))
    assert task_document(record) == DOC


BAD_ROWS: dict[str, tuple[Any, str]] = {
    "missing question": ({"document": DOC, "answer": "x"}, "question"),
    "empty question": (_row(question="  "), "question"),
    "empty document": (_row(document=" \n "), "document"),
    "document and path": (_row(document_path="x.txt"), "document"),
    "no document": ({"question": "q?", "answer": "x"}, "document"),
    "unreadable path": (
        {"document_path": "nope.txt", "question": "q?", "answer": "x"},
        "document_path",
    ),
    "not UTF-8": (
        {"document_path": "latin1.txt", "question": "q?", "answer": "x"},
        "document_path",
    ),
    "no answer": ({"document": DOC, "question": "q?"}, "answers"),
    "both answers": (_row(answers=["x"]), "answers"),
    "answer is an object": (_row(answer={"text": "x"}), "answer"),
    "answer is null": (_row(answer=None), "answer"),
    "answer is a boolean": (_row(answer=True), "answer"),
    "empty answers": (_many(answers=[]), "answers"),
    "list answer of a text row": (_row(answer=["a", "b"]), "answer"),
    "bad kind": (_row(answer_kind="date"), "answer_kind"),
    "number that is no number": (_row(answer_kind="number"), "answer"),
    "year that is no year": (_row(answer="in the 1800s", answer_kind="year"), "answer"),
    "choice that is no letter": (_row(answer_kind="choice"), "answer"),
    "list row with flat answers": (
        {"document": DOC, "question": "q?", "answers": ["a", "b"], "answer_kind": "list"},
        "answers",
    ),
    "list items not strings": (_row(answer=["a", 2], answer_kind="list"), "answer"),
    "tolerance on a text row": (_row(tolerance=1), "tolerance"),
    "negative tolerance": (_row(answer="3", answer_kind="number", tolerance=-1), "tolerance"),
    "credit base on a text row": (_row(number_credit_base=0.75), "number_credit_base"),
    "credit base of 1": (
        _row(answer="3", answer_kind="number", number_credit_base=1),
        "number_credit_base",
    ),
    "comparison without a phrase": (_row(answer="fewer", answer_kind="comparison"), "answer"),
    "evidence not in the document": (_row(evidence=["built by Quell in 1801"]), "evidence"),
    "evidence range outside": (_row(evidence=[{"start": 5, "end": 5000}]), "evidence"),
    "evidence range with extra key": (_row(evidence=[{"start": 0, "end": 5, "x": 1}]), "evidence"),
    "evidence a string": (_row(evidence="The mill"), "evidence"),
    "depth not an integer": (_row(depth="1"), "depth"),
    "unknown key": (_row(context="x"), "context"),
    "id not a string": (_row(id=["a"]), "id"),
    "not an object": (["a list"], "row"),
    "huge question": (_row(question="Who built the mill? " * 600), "question"),
    "path outside the folder": (
        {"document_path": "../outside.txt", "question": "q?", "answer": "x"},
        "document_path",
    ),
    "absolute path": (
        {"document_path": "/dev/null", "question": "q?", "answer": "x"},
        "document_path",
    ),
    "path to a folder": ({"document_path": ".", "question": "q?", "answer": "x"}, "document_path"),
    "a repeat of row 1 without ids": (_row(), "row"),
    "document over the cap": (_row(document="x" * (MAX_DOCUMENT_BYTES + 1)), "document"),
}


@pytest.mark.parametrize("case", list(BAD_ROWS))
def test_a_bad_row_is_one_line_naming_its_line_and_field(tmp_path: Path, case: str) -> None:
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    bad, field = BAD_ROWS[case]
    first = _row() if case == "a repeat of row 1 without ids" else _row(id="good")
    path = _write(tmp_path, [first, "", bad])
    stored = len(DOCUMENTS)
    with pytest.raises(UserRowError) as error:
        load_rows(path)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: line 3: {field}: "), message
    # Nothing is half-loaded: the good first row's document did not enter the store either
    # (unless an earlier test put the same text there).
    assert len(DOCUMENTS) == stored


def test_a_byte_order_mark_is_accepted_in_rows_and_documents(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    (tmp_path / "mill.txt").write_bytes(bom + DOC.encode("utf-8"))
    rows = [_row(id="inline"), {"document_path": "mill.txt", "question": "Who?", "answer": "x"}]
    path = tmp_path / "rows.jsonl"
    path.write_bytes(bom + "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8"))
    inline, from_file = load_rows(path)
    assert inline.row_id == "inline" and task_document(from_file) == DOC


def test_rows_repeated_with_ids_or_differing_in_answers_are_kept(tmp_path: Path) -> None:
    rows = [_row(id="a"), _row(id="b"), _row(), _row(answer="Quell")]
    assert len(load_rows(_write(tmp_path, rows))) == 4


def test_a_device_or_an_oversized_file_is_one_line_never_read_whole(tmp_path: Path) -> None:
    (tmp_path / "zero").symlink_to("/dev/zero")  # inside the folder, but not a regular file
    big = tmp_path / "big.txt"
    with big.open("wb") as handle:  # sparse: over the cap without writing it
        handle.truncate(MAX_DOCUMENT_BYTES + 1)
    for name, problem in (
        ("zero", "outside the rows file's folder"),  # the link resolves to /dev/zero
        ("big.txt", f"over the {MAX_DOCUMENT_BYTES:,}-byte cap"),
    ):
        row = {"document_path": name, "question": "q?", "answer": "x"}
        with pytest.raises(UserRowError) as error:
            load_rows(_write(tmp_path, [row]))
        message = str(error.value)
        assert "\n" not in message and problem in message, message
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # a reader would block forever: refused before opening
    row = {"document_path": "pipe", "question": "q?", "answer": "x"}
    with pytest.raises(UserRowError, match="document_path: cannot read 'pipe': not a regular file"):
        load_rows(_write(tmp_path, [row]))


def test_a_file_is_read_and_hashed_once_per_load_and_its_text_held_once(tmp_path: Path) -> None:
    doc = tmp_path / "mill.txt"
    doc.write_text(DOC, encoding="utf-8")
    cache = DocumentCache()
    first = cache.file("mill.txt", tmp_path)
    doc.write_text("Changed after the first read.", encoding="utf-8")
    assert cache.file("./mill.txt", tmp_path) is first  # the same path is not read again
    rows = [
        {"id": f"r{i}", "document_path": "mill.txt", "question": f"Q{i}?", "answer": "x"}
        for i in range(3)
    ]
    stored = len(DOCUMENTS)
    records = load_rows(_write(tmp_path, [*rows, _row(id="inline", document=DOC + " More.")]))
    assert len({r.document_id for r in records[:3]}) == 1  # one key, stored once
    assert len(DOCUMENTS) <= stored + 2
    assert {task_document(r) for r in records[:3]} == {"Changed after the first read."}


def test_limit_stops_reading_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, [_row(id="a"), _row(id="b"), "{not json"])
    assert [r.row_id for r in load_rows(path, limit=2)] == ["a", "b"]
    with pytest.raises(UserRowError, match="line 3: not JSON"):
        load_rows(path)


def test_an_endless_line_is_one_error_read_no_further(tmp_path: Path) -> None:
    endless = tmp_path / "rows.jsonl"
    endless.symlink_to("/dev/zero")
    with pytest.raises(UserRowError) as error:
        load_rows(endless)
    message = str(error.value)
    assert "\n" not in message and f"line 1: longer than {MAX_LINE_CHARS:,}" in message


def test_the_store_is_bounded_and_never_half_filled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DOCUMENTS, "max_chars", DOCUMENTS.chars + 100)
    fits = _row(id="small", document="A short text about a mill.")
    too_much = _row(id="big", document="The mill wheel turned. " * 10)
    stored = len(DOCUMENTS)
    with pytest.raises(UserRowError) as error:
        load_rows(_write(tmp_path, [fits, too_much]))
    message = str(error.value)
    assert "\n" not in message and "over the store's bound" in message
    assert len(DOCUMENTS) == stored  # all or none: the small text did not go in either
    (record,) = load_rows(_write(tmp_path, [fits]))
    assert task_document(record) == "A short text about a mill."


def test_a_line_that_is_no_json_and_a_repeated_id_are_errors(tmp_path: Path) -> None:
    with pytest.raises(UserRowError, match=r"line 2: not JSON"):
        load_rows(_write(tmp_path, [_row(), "{oops"]))
    with pytest.raises(UserRowError, match=r"line 2: id: 'a' repeats row 1"):
        load_rows(_write(tmp_path, [_row(id="a"), _row(id="a")]))
    with pytest.raises(UserRowError, match="no rows"):
        load_rows(_write(tmp_path, ["", " "]))
    with pytest.raises(UserRowError, match="cannot read the rows"):
        load_rows(tmp_path / "absent.jsonl")
    with pytest.raises(UserRowError, match=r"^row 1: question"):
        records_from_rows([{"document": DOC, "answer": "x"}])


def test_numbers_lists_and_ranges_are_read_as_written(tmp_path: Path) -> None:
    rows = [
        _row(answer=3.5, answer_kind="number", tolerance=0.25),
        _many(answers=[1801, "1801 AD"], answer_kind="year"),
        _many(answers=[["wheel", "river"], ["wheel", "river", "mill"]], answer_kind="list"),
        _row(answer="(c)", answer_kind="choice", evidence=[{"start": 0, "end": 28}], depth=0),
    ]
    number, year, items, choice = load_rows(_write(tmp_path, rows))
    assert number.answer == "3.5" and number.tolerance == 0.25
    assert year.answer == "1801" and year.aliases == ("1801 AD",)
    assert items.answer_lists == (("wheel", "river"), ("wheel", "river", "mill"))
    assert choice.spans == ((0, 28),) and choice.depth == 0


def test_rows_as_a_datasets_dataset_read_back_into_the_same_records() -> None:
    path = FIXTURES / "harbour.jsonl"
    dataset = load_dataset(str(path))
    records = load_rows(path)
    assert len(dataset) == len(records)
    assert "document" not in dataset.column_names
    assert [TaskRecord.from_json(row) for row in dataset] == records
