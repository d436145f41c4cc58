"""Deterministic long documents and question families for fathom-rlm.

A seed gives a world (people, places, organisations, objects, and relations that change over
dated chapters); the world is rendered to narrative text of a chosen length; question families
read their gold answers from the world and point at the spans that support them.

Typical use::

    rows = build_split("train", 100, doc_tokens=16_000)
    doc = get_document(rows[0].seed, rows[0].doc_tokens)
"""

from .document import (
    CHARS_PER_TOKEN,
    GENERATOR_VERSION,
    Document,
    generate_document,
    get_document,
)
from .facts import Distractor, Fact, person_key
from .grammar import shape_counts
from .inflight import aget_document
from .render import Chapter
from .seeds import SPLIT_SEED_BASE, split_of_seed
from .splits import SPLIT_SIZES, build_split, split_seeds, split_tasks
from .store import DOCUMENTS, atask_document, task_document
from .tasks import (
    DEFAULT_FAMILY_MIX,
    FAMILIES,
    Evidence,
    QuestionIntent,
    QuestionParseError,
    Task,
    TaskRecord,
    TaskRecordError,
    check_task,
    make_tasks,
    matches_gold,
    normalize_answer,
    parse_question,
    propose_tasks,
)
from .world import World

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_FAMILY_MIX",
    "DOCUMENTS",
    "FAMILIES",
    "GENERATOR_VERSION",
    "SPLIT_SEED_BASE",
    "SPLIT_SIZES",
    "Chapter",
    "Distractor",
    "Document",
    "Evidence",
    "Fact",
    "QuestionIntent",
    "QuestionParseError",
    "Task",
    "TaskRecord",
    "TaskRecordError",
    "World",
    "aget_document",
    "atask_document",
    "build_split",
    "check_task",
    "generate_document",
    "get_document",
    "make_tasks",
    "matches_gold",
    "normalize_answer",
    "parse_question",
    "person_key",
    "propose_tasks",
    "shape_counts",
    "split_of_seed",
    "split_seeds",
    "split_tasks",
    "task_document",
]
