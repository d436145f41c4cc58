"""The question grammar: the parser reads back every generated question, wordings are
split-disjoint, aggregation counts cannot be guessed from the question, and aggregation runs
are sized against the rollout caps."""

from __future__ import annotations

import itertools
import re

import pytest
from fathom_lab.audit.predictability import count_rows, report
from fathom_rlm.agent.caps import RolloutCaps
from fathom_rlm.documents import FAMILIES, QuestionParseError, parse_question, split_tasks
from fathom_rlm.documents.tasks import RELATIONS, TaskRecord, region_bounds
from fathom_rlm.documents.tasks.intent import intent_from_slots, template_pattern
from fathom_rlm.documents.tasks.wordings import ORDINALS, TIMES

SPLITS = ("train", "eval", "heldout")
_SLOT = re.compile(r"\{(\w+)\}")
_EXAMPLE = {
    "person": "Vorold Bidishold",
    "person2": "Hozi Pojozeld",
    "artefact": "the Shoujith Map Case",
    "org": "the Fatand Trading House",
    "org2": "the Dibes Compact",
    "town": "Pevomarsh",
    "token": "ZC-5627",
    "ord": ORDINALS[3],
    "times": TIMES[3],
    "poss": "her",
    "pron": "she",
    "first": "41",
    "last": "67",
}


def _meaning(template: str) -> set[str]:
    slots = set(_SLOT.findall(template)) - {"poss", "pron"}
    return {"nth" if s in ("ord", "times") else s for s in slots}


def _template_of(question: str) -> tuple[str, str]:
    hits = [
        (rel.name, t)
        for rel in RELATIONS.values()
        for t in rel.templates
        if template_pattern(t).fullmatch(question)
    ]
    assert len(hits) == 1, (question, hits)
    return hits[0]


def test_every_template_reads_back_to_its_relation_and_slots():
    for rel in RELATIONS.values():
        assert len(rel.templates) >= 4 or rel.family == "multi_hop", rel.name
        for template in rel.templates:
            question = template.format(**_EXAMPLE)
            slots = {k: v for k, v in _EXAMPLE.items() if "{" + k + "}" in template}
            expected = intent_from_slots(rel.name, slots)
            assert parse_question(question) == expected, question
            assert expected.family == rel.family and expected.depth == FAMILIES[rel.family]


def test_wordings_of_a_relation_share_one_meaning():
    for rel in RELATIONS.values():
        meanings = {frozenset(_meaning(t)) for t in rel.templates}
        assert len(meanings) == 1, rel.name


def test_wordings_are_split_disjoint():
    for rel in RELATIONS.values():
        sets = {s: set(rel.wordings(s)) for s in SPLITS}
        assert all(sets.values()), rel.name
        assert not sets["train"] & sets["eval"] and not sets["train"] & sets["heldout"]
        assert not sets["eval"] & sets["heldout"]
        assert set(rel.wordings(None)) == set().union(*sets.values())


def test_questions_outside_the_grammar_are_refused():
    for question in (
        "Who is the mayor of Pevomarsh?",
        "Is Vorold Bidishold older than Hozi Pojozeld?",
        "Who was vorold bidishold's teacher?",
        "",
    ):
        with pytest.raises(QuestionParseError):
            parse_question(question)
    # Whitespace is not meaning.
    assert parse_question("Who  was Vorold Bidishold's\nteacher?").person == "Vorold Bidishold"


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("doc_tokens,n", [(16_000, 80), (200_000, 40)])
def test_parser_recovers_every_generated_question(split, doc_tokens, n):
    seen_relations = set()
    for _, task in split_tasks(split, n, doc_tokens=doc_tokens):  # type: ignore[arg-type]
        intent = parse_question(task.question)
        assert intent == task.intent, task.question
        relation, template = _template_of(task.question)
        assert relation == intent.relation
        # The wording comes from this split's share of the relation's templates only.
        assert template in RELATIONS[relation].wordings(split), (split, task.question)
        seen_relations.add(relation)
    # A few 200K-token documents may miss the rarest family; the 16K sample has them all.
    families = {RELATIONS[r].family for r in seen_relations}
    assert len(families) >= (len(FAMILIES) if doc_tokens == 16_000 else len(FAMILIES) - 1)


def test_aggregation_runs_need_more_than_eight_slices_and_fit_the_budget():
    caps = RolloutCaps()
    lo, hi = region_bounds(200_000 * 4)
    assert lo > 8 * caps.max_slice_chars
    # Depth 1 can cover the run: one sub-call per slice, with one sub-call to spare. Deeper
    # calls draw on the same budget and see no more than their parent's slice, so depth 2
    # cannot cover more; the family is labelled depth 1 (docs/documents.md, "Depth").
    assert hi <= (caps.max_sub_calls - 1) * caps.max_slice_chars
    assert FAMILIES["aggregation"] == 1
    rows = [
        task.record(doc)
        for doc, task in split_tasks(
            "train", 40, doc_tokens=200_000, family_mix={"aggregation": 1.0}
        )
    ]
    for row in rows:
        assert row.region is not None
        start, end = row.region
        assert lo <= end - start <= hi
        assert len(row.spans) == int(row.answer)


@pytest.mark.slow
def test_counts_are_not_predictable_from_the_question():
    """Cross-validated mode accuracy of the count per bucket of visible features stays <= 0.10
    on train questions (aggregation only, 1,500 of them: on 1,200, the finer buckets hold a
    dozen questions each and the shuffled chance level alone is 0.09), and no count is more
    common than 10% in the train split itself."""
    aggregation = split_tasks("train", 1500, doc_tokens=200_000, family_mix={"aggregation": 1.0})
    split = split_tasks("train")  # the same seeds in the same order, ten rows each
    rows: dict[str, list[TaskRecord]] = {"aggregation": [], "split": []}
    # In step, so each 200K-token document is generated once and met again in the cache.
    for pair in itertools.zip_longest(aggregation, split):
        for kind, doc_task in zip(rows, pair, strict=True):
            if doc_task is not None:
                rows[kind].append(doc_task[1].record(doc_task[0]))
    assert len(rows["aggregation"]) == 1500
    for name, entry in report(count_rows(rows["aggregation"])).items():
        assert entry["loo"] <= 0.10, (name, entry)
        assert entry["top_share"] <= 0.10, (name, entry)
    split_counts = count_rows(rows["split"])
    assert len(split_counts) >= 100
    assert report(split_counts)["relation"]["top_share"] <= 0.10


def test_counts_are_dealt_evenly_over_a_split():
    from fathom_rlm.documents.tasks.make import balanced_count

    for position in (0, 1):
        dealt = [balanced_count(1_000_000 + i, position, 15) for i in range(30)]
        assert sorted(dealt) == sorted(list(range(1, 16)) * 2)
    assert balanced_count(2_000_000, 0, 15) in range(1, 16)
