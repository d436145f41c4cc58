"""User records as a `datasets.Dataset` (the optional `hub` extra; imported only when asked),
from rows in any of the shapes a `datasets` user has them.

Every row carries every record field (`TaskRecord.to_json(all_fields=True)`), because a
dataset's columns are fixed; `TaskRecord.from_json` reads a row back. The documents stay in the
process's document store, never in a column.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from fathom_rlm.documents.tasks.record import TaskRecord
from fathom_rlm.userdata.errors import UserRowError
from fathom_rlm.userdata.rows import load_rows, records_from_rows

PARQUET_BATCH_ROWS = 256
"""Rows read from a parquet file at a time (the file is never read whole)."""


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise ImportError(
            "user rows as a dataset need the datasets package: pip install 'fathom-rlm[hub]'"
        ) from None
    return datasets


def load_records(
    source: Any, *, format: str = "native", split: str | None = None
) -> list[TaskRecord]:
    """The records of `source`: a JSONL file, a parquet file, a folder written by
    `Dataset.save_to_disk` or `DatasetDict.save_to_disk` (then `split` names the split), or
    rows in memory (a `datasets.Dataset`, a `DatasetDict` with `split`, or a list of dicts).
    Each row is checked as a JSONL row is; a `document_path` is relative to the file's folder
    (the current folder for rows in memory)."""
    if isinstance(source, str | Path):
        path = Path(source)
        if path.is_dir():
            return _rows_records(_from_disk(path, split), path, format, f"{path}: row")
        if path.suffix == ".parquet":
            return _rows_records(_parquet_rows(path), path.parent, format, f"{path}: row")
        if split is not None:
            raise UserRowError(f"{path}: split applies to a saved DatasetDict, not a JSONL file")
        return load_rows(path, format=format)
    return _rows_records(_pick_split(source, split, "the dataset"), Path("."), format, "row")


def _rows_records(rows: Iterable[Any], base: Path, format: str, where: str) -> list[TaskRecord]:
    # A columnar row has every column; a key its row lacks is there as None: left out, as a
    # JSONL row would leave it out.
    present = (
        {k: v for k, v in row.items() if v is not None} if isinstance(row, Mapping) else row
        for row in rows
    )
    return records_from_rows(present, base, format=format, where=where)


def _from_disk(path: Path, split: str | None) -> Any:
    datasets = _datasets()
    try:
        saved = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as exc:
        message = " ".join(str(exc).split())[:200]
        raise UserRowError(f"{path}: not a folder written by save_to_disk: {message}") from None
    return _pick_split(saved, split, str(path))


def _pick_split(data: Any, split: str | None, where: str) -> Any:
    """`data` itself, or its split `split` when it is a mapping of splits (a `DatasetDict`)."""
    if isinstance(data, Mapping):
        if split is None or split not in data:
            wanted = "name one with split" if split is None else f"no split {split!r}"
            raise UserRowError(f"{where}: holds the splits {', '.join(map(str, data))}: {wanted}")
        return data[split]
    if split is not None:
        raise UserRowError(f"{where}: split {split!r} given, but it holds one set of rows")
    return data


def _parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
        message = " ".join(str(exc).split())[:200]
        raise UserRowError(f"{path}: cannot read the parquet file: {message}") from None
    with handle:
        for batch in handle.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            yield from batch.to_pylist()


def records_dataset(records: Sequence[TaskRecord]) -> Any:
    """A `datasets.Dataset` with one row per record."""
    return _datasets().Dataset.from_list([r.to_json(all_fields=True) for r in records])
