"""Question families: gold from the world, evidence in the spans, checks that reject."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

import pytest
from fathom_lab.ladder.answering import answer_from_facts, count_from_facts
from fathom_lab.ladder.grammar_reader import read_facts
from fathom_rlm.documents import (
    FAMILIES,
    Evidence,
    check_task,
    make_tasks,
    matches_gold,
    normalize_answer,
)
from fathom_rlm.documents.contested import CHAINS, PAIRS, SINGLES
from fathom_rlm.documents.filler_tables import NUMBER_WORDS
from fathom_rlm.documents.tasks import count_max, parse_question, region_bounds

# ------------------------------------------------------------------ an independent world oracle


def _by_name(world):
    out = {}
    for kind, items in (
        ("person", world.people),
        ("town", world.places),
        ("org", world.organisations),
        ("artefact", world.artefacts),
    ):
        out[kind] = {x.name: x for x in items}
    return out


def _arrivals(w, town, first, last):
    return sum(
        1
        for p in w.people
        for i in range(1, len(p.residence))
        if p.residence[i][1] == town.id and first - 1 <= int(p.residence[i][0]) <= last - 1
    )


def world_answer(doc, intent) -> str:
    """Answer a parsed question from the world state alone (never from the text or the task)."""
    w = doc.world
    names = _by_name(w)
    person = names["person"].get(intent.person)
    other = names["person"].get(intent.person2)
    art = names["artefact"].get(intent.artefact)
    org, org2 = names["org"].get(intent.org), names["org"].get(intent.org2)
    rel = intent.relation
    if rel == "permit_holder":
        return next(p.name for p in w.people if p.permit == intent.token)
    if rel == "marked_object":
        return next(a.name for a in w.artefacts if a.mark == intent.token)
    if rel == "arrivals":
        return str(_arrivals(w, names["town"][intent.town], *intent.chapters))
    if rel in ("older_birth_year", "younger_birth_year", "age_gap"):
        y = sorted((person.birth_year, other.birth_year))
        return str({"older_birth_year": y[0], "younger_birth_year": y[1]}.get(rel, y[1] - y[0]))
    if rel in ("older_org_year", "org_year_gap"):
        y = sorted((org.founded_year, org2.founded_year))
        return str(y[0] if rel == "older_org_year" else y[1] - y[0])
    if rel == "home_after_moves":
        return w.places[person.residence[intent.nth][1]].name
    if rel == "home_before_town":
        town = names["town"][intent.town]
        i = next(i for i, (_, pl) in enumerate(person.residence) if pl == town.id and i)
        return w.places[person.residence[i - 1][1]].name
    if rel == "owner_before_person":
        i = next(i for i, (_, o) in enumerate(art.owners) if o == person.id and i)
        return w.people[art.owners[i - 1][1]].name
    if rel == "owner_after_transfers":
        return w.people[art.owners[intent.nth][1]].name
    if rel in ("employer_after_changes", "post_after_changes"):
        _, g, role = person.employment[intent.nth]
        return w.organisations[g].name if rel == "employer_after_changes" else role
    if rel == "seat":
        return w.places[org.seat].name
    if rel == "founded_year":
        return str(org.founded_year)
    # Chains: start from the named entity, then follow the relation's hops.
    cur = w.people[art.maker] if art else w.people[org.founder] if org else person
    if rel in ("maker", "founder"):
        return cur.name
    if rel in ("mentor", "maker_mentor", "founder_mentor") or "mentor_" in rel:
        cur = w.people[cur.mentor]
    if rel.endswith("birth_year"):
        return str(cur.birth_year)
    if rel.endswith("birthplace"):
        return w.places[cur.birthplace].name
    return cur.name


# ------------------------------------------------------------------------ a reader with spans


def _with_spans(fact, spans):
    return fact._replace(spans=spans) if hasattr(fact, "_replace") else replace(fact, spans=spans)


def span_reader(doc, task) -> str | None:
    """Read only the supporting spans, the way sub-calls over them would: the text reader
    turns each fact's spans into facts, and the question's intent is answered from those."""
    intent = parse_question(task.question)
    by_sentence = {f.sentence: f for f in doc.facts.values()}
    facts = []
    for ev in task.evidence:
        # A count does not need who moved, but the reader resolves the subject before it
        # reports a fact: give it the fact's antecedent or alias introduction too.
        spans = by_sentence[ev.span].spans if intent.family == "aggregation" else ev.spans
        chunk = " ".join(doc.text[s:e] for s, e in spans)
        # Absolute spans again, so story order holds across separately read facts.
        facts.extend(_with_spans(f, spans) for f in read_facts(chunk))
    if intent.family == "aggregation":
        return str(count_from_facts(replace(intent, chapters=(0, 10**6)), facts))
    return answer_from_facts(intent, facts)


# ------------------------------------------------------------------------------------ tests


def test_every_family_has_tasks(family_tasks, short_docs):
    """Eight of each family per document, but the families that ask one-off facts ask only the
    world's plan (contested.py): most of its items, never more."""
    planned = {"single_hop": SINGLES, "multi_hop": CHAINS, "comparison": PAIRS}
    for family in FAMILIES:
        if family in planned:
            most = planned[family] * len(short_docs)
            assert 0.8 * most <= len(family_tasks[family]) <= most, family
        else:
            assert len(family_tasks[family]) >= 16, family


@pytest.mark.parametrize("family", list(FAMILIES))
def test_gold_matches_world_state(family_tasks, family):
    for doc, task in family_tasks[family]:
        assert world_answer(doc, parse_question(task.question)) == task.answer, task.question


@pytest.mark.parametrize("family", list(FAMILIES))
def test_spans_contain_the_evidence(family_tasks, family):
    for doc, task in family_tasks[family]:
        row = task.record(doc)
        assert row.spans
        texts = [" ".join(doc.text[s:e] for s, e in ev.spans) for ev in task.evidence]
        for ev, text in zip(task.evidence, texts, strict=True):
            for group in ev.required:
                assert any(x.lower() in text.lower() for x in group), (task.question, text)
        forms = [task.answer, *task.aliases]
        if family == "aggregation":
            assert len(task.evidence) == int(task.answer)
        elif family == "comparison":
            assert all(re.search(r"\b1[5-9]\d\d\b", t) for t in texts)
        else:
            # The answer (or an alias, articles dropped) is written in the evidence.
            assert any(f.removeprefix("the ") in " ".join(texts) for f in forms), task.question
        for s, e in row.spans:
            assert 0 <= s < e <= len(doc.text)
            assert e - s < 600  # a sentence, not a chapter


@pytest.mark.parametrize("family", list(FAMILIES))
def test_reachable_by_reading_the_spans(family_tasks, family):
    for doc, task in family_tasks[family]:
        answer = span_reader(doc, task)
        assert answer is not None and matches_gold(answer, task.answer, task.aliases), (
            task.question,
            answer,
        )


def test_multi_hop_hops_are_far_apart(short_docs):
    from fathom_rlm.documents import get_document, propose_tasks

    long_doc = get_document(31, 120_000)
    for doc, gap in ((short_docs[0], len(short_docs[0].text) // 4), (long_doc, 80_000)):
        for task in propose_tasks(doc, "multi_hop", 6):
            starts = [ev.span[0] for ev in task.evidence]
            assert len(starts) >= 2
            assert all(abs(b - a) >= gap for a, b in itertools.pairwise(starts))


def test_aggregation_region_and_counts(family_tasks):
    for doc, task in family_tasks["aggregation"]:
        a, b = parse_question(task.question).chapters
        region = doc.chapters[b - 1].end - doc.chapters[a - 1].start
        lo, hi = region_bounds(len(doc.text))
        assert lo <= region <= hi
        # The row carries the counted chapters' exact character range (the reward's oracle
        # reads it), and every counted span lies inside it.
        assert task.region == (doc.chapters[a - 1].start, doc.chapters[b - 1].end)
        assert task.record(doc).region == (doc.chapters[a - 1].start, doc.chapters[b - 1].end)
        assert all(
            task.region[0] <= s and e <= task.region[1]
            for s, e in (ev.span for ev in task.evidence)
        )
        assert 1 <= int(task.answer) <= count_max(len(doc.text))
        assert task.aliases == (NUMBER_WORDS[int(task.answer)],)


def test_answers_are_open_vocabulary(family_tasks):
    for tasks in family_tasks.values():
        for _, task in tasks:
            assert normalize_answer(task.answer) not in {"yes", "no", "true", "false"}
            assert " or " not in task.question


def test_gold_never_in_question(family_tasks):
    for tasks in family_tasks.values():
        for _, task in tasks:
            q = f" {normalize_answer(task.question)} "
            for form in (task.answer, *task.aliases):
                assert f" {normalize_answer(form)} " not in q


# ------------------------------------------------------------------------- the checks reject


def _one(family_tasks, family):
    doc, task = family_tasks[family][0]
    assert check_task(doc, task) is None
    return doc, task


def test_check_rejects_non_unique_gold(family_tasks):
    doc, task = _one(family_tasks, "temporal")
    bad = replace(task, gold_values=(task.answer, "Somewhere Else"))
    assert check_task(doc, bad) == "gold_not_unique"


def test_check_rejects_gold_in_question(family_tasks):
    doc, task = _one(family_tasks, "single_hop")
    bad = replace(task, question=f"{task.question} Is it {task.answer}?")
    assert check_task(doc, bad) == "gold_in_question"


def test_check_rejects_missing_or_wrong_span(family_tasks):
    doc, task = _one(family_tasks, "multi_hop")
    assert check_task(doc, replace(task, evidence=())) == "span_missing"
    out_of_range = Evidence((len(doc.text) - 5, len(doc.text) + 50), task.evidence[0].required)
    assert check_task(doc, replace(task, evidence=(out_of_range,))) == "span_missing"
    moved = Evidence((0, 40), task.evidence[0].required)  # the chapter heading
    assert check_task(doc, replace(task, evidence=(moved,))) == "span_without_evidence"


def test_check_rejects_lexical_overlap(family_tasks):
    doc, task = _one(family_tasks, "single_hop")
    needle = doc.text[slice(*task.evidence[-1].span)]
    parroted = needle.replace(task.answer, "what").rstrip(".") + "?"
    assert check_task(doc, replace(task, question=parroted)) in (
        "lexical_overlap",
        "gold_in_question",
    )
    # A depth-0 family is allowed to share words with its needle (that is the point of it).
    doc0, id_task = _one(family_tasks, "exact_id")
    quoted = replace(id_task, question=doc0.text[slice(*id_task.evidence[0].span)][:10] + "?")
    assert check_task(doc0, quoted) != "lexical_overlap"


@pytest.mark.parametrize("family", ["single_hop", "multi_hop", "temporal", "comparison"])
def test_every_reading_question_needs_coreference(family_tasks, family):
    for _, task in family_tasks[family]:
        # At least one fact names its subject outside the sentence stating it.
        assert any(ev.support for ev in task.evidence), task.question
    doc, task = family_tasks[family][0]
    # The same facts stated in one sentence each are refused.
    flat = tuple(replace(ev, support=(), required=()) for ev in task.evidence)
    assert check_task(doc, replace(task, evidence=flat)) == "single_line"


def test_make_tasks_rows_and_mix(short_docs):
    doc = short_docs[1]
    rows = make_tasks(doc, 20, {"exact_id": 1, "comparison": 1}, rng_seed=3)
    assert len(rows) == 20
    assert {r.family for r in rows} == {"exact_id", "comparison"}
    assert rows == make_tasks(doc, 20, {"exact_id": 1, "comparison": 1}, rng_seed=3)
    assert rows != make_tasks(doc, 20, {"exact_id": 1, "comparison": 1}, rng_seed=4)
    assert len({r.question for r in rows}) == 20
    for r in rows:
        assert r.depth == FAMILIES[r.family] and r.seed == doc.seed
    with pytest.raises(ValueError):
        make_tasks(doc, 3, {"trivia": 1.0})


def test_normalize_answer():
    assert normalize_answer("  The Velmor-Lantern! ") == "velmor lantern"
    assert normalize_answer("An Archivist") == "archivist"
    assert matches_gold("mistress vantry.", "Orsel Vantry", ["Mistress Vantry"])
    assert not matches_gold("", "x")
    assert not matches_gold("Orsel Vantry or Pell Oskary", "Orsel Vantry")
