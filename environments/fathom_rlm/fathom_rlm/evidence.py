"""What of a task's supporting text entered a model's context during a rollout.

The reward's evidence veto (`evidence_seen`), evidence recall and the depth the recursion term
credits (`reading_depth`) read the rollout record against the task's supporting spans.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fathom_rlm.agent.record import RolloutRecord


def evidence_recall(record: RolloutRecord, spans: Sequence[Sequence[int]], document: str) -> float:
    """Share of supporting spans shown anywhere: inside a shown document range, or verbatim
    inside a text a tool returned or a sub-call was shown. 1.0 when the task has no spans."""
    if not spans:
        return 1.0
    texts = "\x00".join(record.shown_texts)
    hit = 0
    for s, e in spans:
        s, e = int(s), int(e)
        in_range = any(a <= s and e <= b for a, b in record.shown_ranges)
        if in_range or (texts and document[s:e] in texts):
            hit += 1
    return hit / len(spans)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def support_pieces(spans: Sequence[Sequence[int]], document: str) -> list[str]:
    """The sentences (20+ characters) of the supporting spans."""
    pieces = (p.strip() for s, e in spans for p in _SENTENCE_END.split(document[int(s) : int(e)]))
    return [p for p in pieces if len(p) >= 20]


def reading_depth(record: RolloutRecord, spans: Sequence[Sequence[int]], document: str) -> int:
    """Deepest level at which a sub-call read a supporting sentence of its own text (the depth
    the recursion term credits). A level whose sub-call read only other text (60 characters of
    chapter 1 handed down to count as a level) earns nothing. Without spans (nothing to
    support), every level that read text counts (`RolloutRecord.depth_used`)."""
    pieces = support_pieces(spans, document)
    if not pieces:
        return record.depth_used
    depth = 0
    for sub in record.sub_calls:
        if sub.depth > depth and sub.read_chars > 0:
            read = "\x00".join(sub.read_texts)
            if any(p in read for p in pieces):
                depth = sub.depth
    return depth


def evidence_seen(record: RolloutRecord, spans: Sequence[Sequence[int]], document: str) -> bool:
    """Whether any supporting span was at least partly shown: a shown range covering half of it,
    or one of its sentences (20+ characters) verbatim in a shown text. Lenient on purpose: it
    only separates answers backed by some reading from guesses that never met the evidence."""
    if not spans:
        return True
    texts = "\x00".join(record.shown_texts)
    for s, e in spans:
        s, e = int(s), int(e)
        for a, b in record.shown_ranges:
            if min(b, e) - max(a, s) >= (e - s) / 2:
                return True
        pieces = (p.strip() for p in _SENTENCE_END.split(document[s:e]))
        if texts and any(len(p) >= 20 and p in texts for p in pieces):
            return True
    return False
