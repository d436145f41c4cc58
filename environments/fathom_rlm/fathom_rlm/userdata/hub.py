"""User records as a `datasets.Dataset` (the optional `hub` extra; imported only when asked).

Every row carries every record field (`TaskRecord.to_json(all_fields=True)`), because a
dataset's columns are fixed; `TaskRecord.from_json` reads a row back. The documents stay in the
process's document store, never in a column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fathom_rlm.documents.tasks.record import TaskRecord


def records_dataset(records: Sequence[TaskRecord]) -> Any:
    """A `datasets.Dataset` with one row per record."""
    try:
        import datasets
    except ImportError:
        raise ImportError(
            "user rows as a dataset need the datasets package: pip install 'fathom-rlm[hub]'"
        ) from None
    return datasets.Dataset.from_list([r.to_json(all_fields=True) for r in records])
