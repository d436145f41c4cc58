"""GSM8K rows from the Hugging Face hub or a local JSONL file, and chat prompts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gsm8k_multireward.config import DEFAULT_SYSTEM_PROMPT, GSM8KConfig
from gsm8k_multireward.grading import gold_from_solution


def load_examples(config: GSM8KConfig | None = None, *, path: str | None = None) -> list[dict]:
    """Rows ``{"question", "answer" (gold number string), "solution" (full solution text)}``.

    Reads a local JSONL file when ``path`` is given or ``config.dataset_name`` ends in
    ``.jsonl``; a directory stands for ``<dir>/<dataset_split>.jsonl``. Otherwise it loads
    ``dataset_name``/``dataset_subset`` split ``dataset_split`` with ``datasets``.
    ``config.num_examples`` keeps the first N rows.
    """
    config = config or GSM8KConfig()
    local = _local_file(path, config, "path") if path is not None else None
    if local is None and _looks_local(config.dataset_name):
        local = _local_file(config.dataset_name, config, "dataset_name")
    if local is not None:
        records: Iterable[Mapping[str, Any]] = _read_jsonl(local, config.num_examples)
        source = str(local)
    else:
        records = _load_hub(config)
        source = f"{config.dataset_name}/{config.dataset_subset}:{config.dataset_split}"
    rows = []
    for index, record in enumerate(records):
        if config.num_examples is not None and len(rows) >= config.num_examples:
            break
        rows.append(_to_row(record, f"{source} row {index + 1}"))
    return rows


def build_prompt(question: str, system_prompt: str | None) -> list[dict]:
    """Chat messages for one question: a system message, then the user turn.

    ``None`` uses ``DEFAULT_SYSTEM_PROMPT``; an empty string leaves the system message out.
    """
    if system_prompt is None:
        system_prompt = DEFAULT_SYSTEM_PROMPT
    messages: list[dict] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": question})
    return messages


def _looks_local(name: str) -> bool:
    return name.endswith(".jsonl") or Path(name).is_dir()


ACCEPTS = (
    "a GSM8K .jsonl file, a directory holding <dataset_split>.jsonl, or a Hugging Face Hub "
    "dataset id such as openai/gsm8k (needs `datasets` and the network)"
)
"""What `dataset_name` takes, as the errors say it."""


def _local_file(name: str, config: GSM8KConfig, argument: str) -> Path:
    """A JSONL file, or ``<dir>/<dataset_split>.jsonl`` when ``name`` is a directory.

    FileNotFoundError in one line naming ``argument`` and what it takes: the verifiers CLIs print
    the exception's traceback, and its last line is this message."""
    candidate = Path(name)
    if candidate.is_dir():
        candidate = candidate / f"{config.dataset_split}.jsonl"
    if not candidate.is_file():
        raise FileNotFoundError(
            f"{argument}={name!r}: GSM8K JSONL file not found: {candidate}; "
            f"{argument} takes {ACCEPTS}"
        )
    return candidate


def _read_jsonl(path: Path, limit: int | None) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"GSM8K JSONL file not found: {path}")
    records = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if limit is not None and len(records) >= limit:
                break
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} line {number}: not valid JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise ValueError(f"{path} line {number}: expected a JSON object")
            records.append(record)
    return records


def _load_hub(config: GSM8KConfig) -> Iterable[Mapping[str, Any]]:
    # Imported here so the core stays importable (and fast to import) without datasets.
    try:
        from datasets import load_dataset
    except ImportError as exc:
        raise ImportError(
            f"loading {config.dataset_name!r} from the Hugging Face Hub needs `datasets`: "
            "pip install 'gsm8k-multireward[hub]' (or pass a local .jsonl path as dataset_name)"
        ) from exc

    try:
        dataset = load_dataset(
            config.dataset_name, config.dataset_subset, split=config.dataset_split
        )
    except Exception as exc:  # unreachable hub, unknown id, bad split: one clear line
        where = f"{config.dataset_name!r} (subset {config.dataset_subset!r}, split "
        raise FileNotFoundError(
            f"dataset_name={where}{config.dataset_split!r}) cannot be loaded from the Hugging "
            f"Face Hub ({type(exc).__name__}: {' '.join(str(exc).split())}); dataset_name "
            f"takes {ACCEPTS}"
        ) from None
    if config.num_examples is not None:
        dataset = dataset.select(range(min(config.num_examples, len(dataset))))
    return dataset


def _to_row(record: Mapping[str, Any], where: str) -> dict:
    question, solution = record.get("question"), record.get("answer")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"{where}: missing or empty 'question' field")
    if not isinstance(solution, str) or not solution.strip():
        raise ValueError(f"{where}: missing or empty 'answer' field (the GSM8K solution)")
    try:
        gold = gold_from_solution(solution)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from exc
    return {"question": question, "answer": gold, "solution": solution}
