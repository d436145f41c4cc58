"""A perfect reader's answer from facts: every generated question is answered from the
document's fact annotations, chains name their next hop, and nothing answers without facts."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from fathom_lab.ladder.answering import answer_from_facts, count_from_facts, next_hop
from fathom_rlm.documents import get_document, matches_gold, parse_question
from fathom_rlm.documents.tasks import task_objects

pytestmark = pytest.mark.xdist_group("test_documents_answering")

SEEDS = (1_000_000, 2_000_000, 3_000_000, 11)


@dataclass(frozen=True)
class _Fact:
    """A document fact plus whether it records a change (its world index is above 0)."""

    relation: str
    subject: str
    value: str
    detail: str | None
    chapter: int | None
    spans: tuple[tuple[int, int], ...]
    change: bool


def _annotated(doc) -> list[_Fact]:
    return [
        _Fact(f.relation, f.subject, f.value, f.detail, f.chapter, f.spans, key[2] > 0)
        for key, f in doc.facts.items()
    ]


@pytest.fixture(scope="module")
def questions():
    out = []
    for seed in SEEDS:
        doc = get_document(seed, 64_000)
        facts = _annotated(doc)
        out.extend((doc, facts, task) for task in task_objects(doc, 60))
    return out


def test_every_question_is_answered_from_all_facts(questions):
    families = set()
    for _, facts, task in questions:
        intent = parse_question(task.question)
        answer = answer_from_facts(intent, facts)
        assert answer is not None and matches_gold(answer, task.answer, task.aliases), (
            task.question,
            answer,
        )
        families.add(intent.family)
    assert len(families) == 6


def test_no_facts_no_answer(questions):
    for _, _, task in questions:
        intent = parse_question(task.question)
        if intent.family == "aggregation":
            assert count_from_facts(intent, []) == 0
        else:
            assert answer_from_facts(intent, []) is None


def test_chains_name_their_next_hop(questions):
    chains = [(f, t) for _, f, t in questions if parse_question(t.question).family == "multi_hop"]
    assert chains
    for facts, task in chains:
        intent = parse_question(task.question)
        # Nothing known: start from the entity the question names.
        assert next_hop(intent, []) == (intent.artefact or intent.org or intent.person)
        # Knowing only the first hop's fact: continue with the entity it leads to.
        first = task.evidence[0].span
        known = [f for f in facts if f.spans[-1] == first]
        hop = next_hop(intent, known)
        assert hop is not None and hop not in (intent.artefact, intent.org, intent.person)
        assert next_hop(intent, facts) is None


def test_counts_respect_the_chapter_range(questions):
    _, facts, task = next(q for q in questions if q[2].family == "aggregation")
    intent = parse_question(task.question)
    assert count_from_facts(intent, facts) == int(task.answer)
    first, last = intent.chapters
    outside = [f for f in facts if f.chapter is not None and not first <= f.chapter <= last]
    assert count_from_facts(intent, outside) == 0
    with pytest.raises(ValueError):
        count_from_facts(parse_question("Who was Vorold Bidishold's teacher?"), facts)


@pytest.mark.parametrize("split", ["train", "eval", "heldout"])
def test_reading_the_whole_run_gives_the_count(split):
    """What a reader of the counted chapters alone finds is the gold: no namesake arrival, no
    initial state and no hard negative in the run changes the count."""
    from fathom_lab.ladder.grammar_reader import read_facts
    from fathom_rlm.documents import split_tasks

    pairs = split_tasks(split, 20, doc_tokens=200_000, family_mix={"aggregation": 1.0})
    for doc, task in pairs:
        start, end = task.region
        intent = parse_question(task.question)
        assert count_from_facts(intent, read_facts(doc.text[start:end])) == int(task.answer)
