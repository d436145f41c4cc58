"""The calls every adapter makes into the core: rows, the document of a row, the scores."""

from __future__ import annotations

from fathom_rlm.adapters.arguments import FathomArguments, source_rows
from fathom_rlm.agent import RolloutRecord
from fathom_rlm.documents.tasks.record import TaskRecord
from fathom_rlm.rewards import REWARD_NAME, SCORE_NAMES, RewardConfig, score_rollout

__all__ = [
    "REWARD_NAME",
    "SCORE_NAMES",
    "build_rows",
    "document_text",
    "gold_problems",
    "load_document",
    "score",
]


def build_rows(args: FathomArguments) -> list[TaskRecord]:
    """The split's tasks, or the first `num_examples` rows of the `source` file (small records,
    never the document; `TaskRecord.to_json` makes the dataset row)."""
    from fathom_rlm.documents import build_split

    if args.source is not None:
        return source_rows(args.source, args.source_format, args.num_examples)

    return build_split(
        args.split,
        args.num_examples,
        doc_tokens=args.doc_tokens,
        family_mix=args.family_mix,
    )


def load_document(task: TaskRecord) -> str:
    """The task's document: regenerated from its seed (the core caches recent seeds), or a user
    row's text from the process's document store (`fathom_rlm.documents.store`)."""
    from fathom_rlm.documents.store import task_document

    return task_document(task)


async def document_text(task: TaskRecord) -> str:
    """`load_document` for async callers: a synthetic document is built off the event loop,
    once for concurrent callers (`fathom_rlm.documents.aget_document`)."""
    from fathom_rlm.documents.store import atask_document

    return await atask_document(task)


def reward_config(args: FathomArguments) -> RewardConfig:
    """The reward config of these arguments' rollout caps, so the scorer and the prompt agree."""
    return RewardConfig.from_caps(args.caps())


def score(
    record: RolloutRecord | None, task: TaskRecord, args: FathomArguments
) -> dict[str, float]:
    """`score_rollout` under the names in `SCORE_NAMES`. A rollout that left no record (it was
    stopped before the loop returned) scores as an empty one: no answer, no tool use."""
    return score_rollout(record or RolloutRecord(ended_by="stopped"), task, reward_config(args))


def gold_problems(task: TaskRecord, args: FathomArguments) -> list[str]:
    """What stops the task's gold answer from being gradable (empty when nothing does): a
    supporting span missing from the regenerated document, or a rollout that was shown every
    span and answered the gold not scoring as a correct, well-formed answer."""
    document = load_document(task)
    spans = task.spans
    problems = [
        f"supporting span {start}:{end} is not inside the {len(document)}-character document"
        for start, end in spans
        if not 0 <= start < end <= len(document) or not document[start:end].strip()
    ]
    if problems:
        return problems
    record = RolloutRecord(
        final_message=f"<answer>{task.answer}</answer>", touched_document=True, ended_by="answer"
    )
    for start, end in spans:
        record.show_range(start, end)
    scores = score_rollout(record, task, reward_config(args), document=document)
    # A row without evidence (a user row may have none) has no evidence to have seen.
    checked = ("format_gate", "correctness", "evidence_seen")[: 3 if spans else 2]
    return [
        f"the gold answer {task.answer!r} scores {name}={scores[name]}, not 1"
        for name in checked
        if scores[name] != 1.0
    ]
