"""Question families over a generated document, the question grammar and its parser.

A family proposes a question from the *world* (gold = world state), points at the needle spans
the renderer recorded, and words it with the templates of its relation for the document's split
(:mod:`.wordings`). :func:`parse_question` reads the same grammar back (:mod:`.intent`).
"""

from .core import (
    DEFAULT_FAMILY_MIX,
    OVERLAP_MAX,
    Evidence,
    Task,
    check_task,
    lexical_overlap,
    matches_gold,
    name_words,
    normalize_answer,
)
from .counting import COUNT_MAX, REGION_CHARS, count_max, region_bounds
from .intent import FAMILIES, QuestionIntent, QuestionParseError, parse_question
from .make import make_tasks, propose_tasks, task_objects
from .record import TaskRecord, TaskRecordError
from .wordings import ORDINALS, RELATIONS, TIMES, Relation

__all__ = [
    "COUNT_MAX",
    "DEFAULT_FAMILY_MIX",
    "FAMILIES",
    "ORDINALS",
    "OVERLAP_MAX",
    "REGION_CHARS",
    "RELATIONS",
    "TIMES",
    "Evidence",
    "QuestionIntent",
    "QuestionParseError",
    "Relation",
    "Task",
    "TaskRecord",
    "TaskRecordError",
    "check_task",
    "count_max",
    "lexical_overlap",
    "make_tasks",
    "matches_gold",
    "name_words",
    "normalize_answer",
    "parse_question",
    "propose_tasks",
    "region_bounds",
    "task_objects",
]
