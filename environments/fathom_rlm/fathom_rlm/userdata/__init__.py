"""Tasks from the user's own documents: rows of a JSONL file as task records.

A user row is a document, a question, accepted answers, an optional answer kind, optional
evidence and an optional depth (`rows.py`); public row schemas map onto it (`formats.py`);
answers are graded by kind (`grading.py`). The records are the same `TaskRecord` the synthetic
splits produce, so the sandbox, tools, caps, rewards and adapters take either.

    records = load_rows("my_rows.jsonl")
    text = task_document(records[0])       # fathom_rlm.documents.task_document
"""

from fathom_rlm.userdata.formats import FORMATS, to_native
from fathom_rlm.userdata.grading import Grade, grade_answer, task_question
from fathom_rlm.userdata.rows import (
    USER_FAMILY,
    UserRowError,
    load_rows,
    records_from_rows,
)

__all__ = [
    "FORMATS",
    "USER_FAMILY",
    "Grade",
    "UserRowError",
    "grade_answer",
    "load_dataset",
    "load_rows",
    "records_from_rows",
    "task_question",
    "to_native",
]


def load_dataset(source: object, *, format: str = "native", split: str | None = None) -> object:
    """The rows of `source` as a `datasets.Dataset` of task-record columns (the `hub` extra:
    `pip install 'fathom-rlm[hub]'`); `TaskRecord.from_json` reads a row back. `source` is a
    JSONL or parquet file, a folder written by `save_to_disk` (`split` names the split of a
    saved `DatasetDict`), or rows in memory: a `datasets.Dataset` whose rows carry the text, a
    `DatasetDict` with `split`, a list of dicts (`fathom_rlm.userdata.hub.load_records`)."""
    from fathom_rlm.userdata.hub import load_records, records_dataset

    return records_dataset(load_records(source, format=format, split=split))
