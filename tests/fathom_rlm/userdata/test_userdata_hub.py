"""`load_dataset` takes rows in the shapes a `datasets` user has them: a `Dataset` in memory, a
folder written by `save_to_disk` (a `DatasetDict` with its split named), a parquet file, as well
as a JSONL file; each gives the records the same rows give from JSONL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pytest
from fathom_rlm.documents import TaskRecord, task_document
from fathom_rlm.userdata import UserRowError, load_dataset, load_rows

FIXTURES = Path(__file__).parent / "fixtures"
DOC = "The mill stood by the river. It was built in 1801 by Mara Quell. Its wheel had 24 paddles."
ROWS: list[dict[str, Any]] = [
    {"id": "who", "document": DOC, "question": "Who built the mill?", "answer": "Mara Quell"},
    {
        "id": "when",
        "document": DOC,
        "question": "When was the mill built?",
        "answer": "1801",
        "answer_kind": "year",
        "evidence": ["It was built in 1801 by Mara Quell."],
    },
    {"id": "paddles", "document": DOC, "question": "How many paddles?", "answer": "24"},
]


COLUMNS = sorted({key for row in ROWS for key in row})


def _columnar(rows: list[dict[str, Any]]) -> datasets.Dataset:
    """The rows as a dataset has them: every column in every row, None where a row lacks it."""
    return datasets.Dataset.from_list([{k: row.get(k) for k in COLUMNS} for row in rows])


def _jsonl(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _records(dataset: Any) -> list[TaskRecord]:
    return [TaskRecord.from_json(row) for row in dataset]


def test_a_dataset_in_memory_saved_to_disk_or_in_parquet_gives_the_jsonl_records(
    tmp_path: Path,
) -> None:
    expected = load_rows(_jsonl(tmp_path, ROWS))
    rows = _columnar(ROWS)
    rows.save_to_disk(str(tmp_path / "saved"))
    rows.to_parquet(str(tmp_path / "rows.parquet"))
    for source in (rows, tmp_path / "saved", str(tmp_path / "rows.parquet"), ROWS):
        assert _records(load_dataset(source)) == expected, type(source)


def test_a_saved_dataset_dict_needs_its_split(tmp_path: Path) -> None:
    splits = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list(ROWS[:2]),
            "test": datasets.Dataset.from_list(ROWS[2:]),
        }
    )
    splits.save_to_disk(str(tmp_path / "splits"))
    (paddles,) = _records(load_dataset(tmp_path / "splits", split="test"))
    assert paddles.row_id == "paddles" and task_document(paddles) == DOC
    for split, problem in ((None, "name one with split"), ("dev", "no split 'dev'")):
        with pytest.raises(UserRowError) as error:
            load_dataset(tmp_path / "splits", split=split)
        message = str(error.value)
        assert "\n" not in message and "holds the splits train, test" in message
        assert problem in message
    assert len(load_dataset(splits, split="train")) == 2


def test_a_public_format_and_document_paths_beside_the_saved_rows(tmp_path: Path) -> None:
    oolong = [json.loads(line) for line in (FIXTURES / "oolong_synth.jsonl").open()]
    from_hub = _records(load_dataset(datasets.Dataset.from_list(oolong), format="oolong"))
    assert from_hub == load_rows(FIXTURES / "oolong_synth.jsonl", format="oolong")
    folder = tmp_path / "saved"
    rows = [{"id": "a", "document_path": "mill.txt", "question": "Who?", "answer": "Mara Quell"}]
    datasets.Dataset.from_list(rows).save_to_disk(str(folder))
    (folder / "mill.txt").write_text(DOC, encoding="utf-8")
    (record,) = _records(load_dataset(folder))
    assert task_document(record) == DOC


def test_a_bad_source_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad.parquet").write_text("not parquet")
    bad_row = datasets.Dataset.from_list([{"document": DOC, "question": "q?"}])
    for source, problem in (
        (tmp_path / "empty", "not a folder written by save_to_disk"),
        (tmp_path / "bad.parquet", "cannot read the parquet file"),
        (bad_row, "row 1: answers"),
    ):
        with pytest.raises(UserRowError) as error:
            load_dataset(source)
        message = str(error.value)
        assert "\n" not in message and problem in message, message
