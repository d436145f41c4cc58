"""The relation grammar: shape counts, split-disjoint shapes, hard negatives, coreference."""

from __future__ import annotations

import re

import pytest
from fathom_lab.ladder.grammar_reader import SENTENCE, read_facts, read_verdict
from fathom_rlm.documents import generate_document, shape_counts
from fathom_rlm.documents.filler_tables import ACTIVITIES, FILLER, TITLE_PATTERNS
from fathom_rlm.documents.grammar import (
    ALL_INITIAL_PHRASES,
    ALL_VERB_PHRASES,
    RELATION_SLOTS,
    RELATIONS,
    RETRACTED,
    SPLITS,
    deal,
    shape_ids,
    split_grammar,
)
from fathom_rlm.documents.grammar_tables import (
    ADVERBIALS,
    ALIAS_INTROS,
    ASIDES,
    DISTRACTOR_WRAPPERS,
    FACT_FRAMES,
)
from fathom_rlm.documents.seeds import SPLIT_SEED_BASE
from fathom_rlm.documents.verdict_tables import VERDICT_TABLES
from fathom_rlm.documents.verdicts import verdict_parts

SHORT = 16_000
SPLIT_DOCS = {split: [base, base + 1] for split, base in SPLIT_SEED_BASE.items()}


@pytest.fixture(scope="module")
def docs():
    return {
        split: [generate_document(seed, SHORT) for seed in seeds]
        for split, seeds in SPLIT_DOCS.items()
    }


def test_every_relation_has_at_least_40_shapes_in_every_split():
    counts = shape_counts()
    assert set(counts) == set(SPLITS)
    for split in SPLITS:
        for relation in RELATIONS:
            assert counts[split][relation]["fact"] >= 40, (split, relation)
            assert counts[split][relation]["distractor"] >= 12, (split, relation)
        assert all(n >= 2 for n in counts[split]["filler"].values()), split


def test_splits_share_no_shape_id():
    ids = {split: shape_ids(split) for split in SPLITS}
    for a in SPLITS:
        for b in SPLITS:
            if a < b:
                assert not ids[a] & ids[b], (a, b)


def test_splits_share_no_phrase():
    """Every table is dealt, not sampled: no verb phrase, framing, adverbial, wrapper, alias
    introduction, verdict part or filler template belongs to two splits."""
    tables = [
        *ALL_VERB_PHRASES.values(),
        *ALL_INITIAL_PHRASES.values(),
        FACT_FRAMES,
        ADVERBIALS,
        ASIDES,
        *DISTRACTOR_WRAPPERS.values(),
        ALIAS_INTROS,
        *VERDICT_TABLES,
        *FILLER.values(),
        TITLE_PATTERNS,
    ]
    for table in tables:
        parts = [set(deal(tuple(table), split)) for split in SPLITS]
        assert all(parts), table
        assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
        assert set().union(*parts) == set(table)


def test_documents_use_only_their_split_shapes(docs):
    for split, split_docs in docs.items():
        allowed = shape_ids(split)
        for doc in split_docs:
            assert doc.split == split
            used = set(doc.shapes.values()) | {d.shape for d in doc.distractors}
            assert used <= allowed, sorted(used - allowed)[:5]
            # Enough variety to matter: many distinct shapes in one short document.
            assert len(set(doc.shapes.values())) >= 60
            # A retracted statement's shape is its verb phrase; its verdict is drawn afresh.
            retracted = {d.shape for d in doc.distractors if d.kind == "retracted"}
            assert retracted and all(
                re.fullmatch(r"(\w+)/vp\d+/retracted", s)[1] in RETRACTED for s in retracted
            ), sorted(retracted)[:5]


def _literal_chunks(template: str) -> list[str]:
    """The fixed words of a template between its slots (3+ words: distinctive phrases)."""
    chunks = re.split(r"\{\w+\}|\[[^\]]*\]", template)
    return [c.strip(" ,.") for c in chunks if len(c.strip(" ,.").split()) >= 3]


def _foreign_phrases(split: str) -> list[str]:
    """Distinctive fixed phrases of the shapes of the other two splits."""
    out: list[str] = []
    for other in SPLITS:
        if other == split:
            continue
        g = split_grammar(other)
        for vps in (*g.verb_phrases.values(), *g.initial_phrases.values()):
            for vp in vps:
                out += _literal_chunks(vp.pre + "[" + vp.past + "]" + vp.post)
                out.append(vp.core("PAST").split("{")[0] if not vp.pre.startswith("{") else "")
        out += [f.strip(" ,") for f in g.frames if f]
        out += [s.strip(" ,") for ws in g.wrappers.values() for p, s, _ in ws for s in (p, s)]
        out += [c for t in g.intros for c in _literal_chunks(t)]
        for templates in FILLER.values():
            out += [c for t in deal(templates, other) for c in _literal_chunks(t)]
        out += [part for table in vars(verdict_parts(other)).values() for part in table]
    return [p for p in out if len(p.split()) >= 3 and "{" not in p]


def _sign_words(split: str) -> set[str]:
    """The split's verdict words that carry a sign: its verbs, outcomes and challenges."""
    p = verdict_parts(split)
    return {w for part in (*p.backing, *p.rejecting, *p.outcomes, *p.challenges)
            for w in part.split() if w != "the"}  # fmt: skip


@pytest.mark.parametrize("split", SPLITS)
def test_no_fixed_phrase_of_another_split_appears_in_a_document(docs, split):
    """String level: the fixed words of another split's shapes never occur in this split's text
    (so a pattern list tuned on train finds nothing to match in heldout)."""
    phrases = sorted(set(_foreign_phrases(split)))
    assert len(phrases) > 150
    foreign_signs = set().union(*(_sign_words(s) for s in SPLITS if s != split))
    for doc in docs[split]:
        hits = [p for p in phrases if p in doc.text]
        assert not hits, hits[:5]
        # Nor does a verb, outcome or challenge of another split occur in its verdicts.
        verdicts = [m.group() for m in SENTENCE.finditer(doc.text)]
        verdicts = [v for v in verdicts if read_verdict(v) is not None]
        assert len(verdicts) == 6 * len(doc.world.contested.keys) > 0
        words = {w for v in verdicts for w in re.findall(r"[\w']+", v)}
        assert not words & foreign_signs, sorted(words & foreign_signs)[:5]


def _distractor_value_is_false(doc, d) -> bool:
    """The distractor's claim about a real subject is false at every time of the world."""
    w = doc.world
    people = {p.name: p for p in w.people} | {p.formal: p for p in w.people}
    arts = {a.name: a for a in w.artefacts}
    orgs = {g.name: g for g in w.organisations}
    places = {pl.name: pl.id for pl in w.places}
    rel, value = d.relation, d.value
    if rel == "residence":
        p = people[d.subject]
        return places[value] not in {pl for _, pl in p.residence} | {p.birthplace}
    if rel == "birth":
        p = people[d.subject]
        return places[value] != p.birthplace and (
            d.fact is None or d.fact.detail != str(p.birth_year)
        )
    if rel == "employment":
        p = people[d.subject]
        return orgs[value].id not in {g for _, g, _ in p.employment}
    if rel == "mentor":
        p = people[d.subject]
        return p.mentor is None or people[value].id != p.mentor
    if rel in ("permit", "mark"):
        return value not in {p.permit for p in w.people} | {a.mark for a in w.artefacts}
    if rel == "owner":
        return people[value].id not in {o for _, o in arts[d.subject].owners}
    if rel == "maker":
        return people[value].id != arts[d.subject].maker
    if rel == "founding":
        return people[value].id != orgs[d.subject].founder
    return places[value] != orgs[d.subject].seat  # seat


def test_distractors_are_false_and_read_as_nothing(docs):
    for split_docs in docs.values():
        for doc in split_docs:
            assert len(doc.distractors) > 0.4 * len(doc.facts)
            names = {p.name for p in doc.world.people} | {p.formal for p in doc.world.people}
            names |= {a.name for a in doc.world.artefacts} | {
                g.name for g in doc.world.organisations
            }
            for d in doc.distractors:
                start, end = d.spans[0][0], d.spans[-1][1]
                # Read the distractor with everything before it (aliases, antecedents).
                upto_end = read_facts(doc.text[:end])
                read = [f for f in upto_end if f.sentence == d.spans[-1]]
                if d.kind == "namesake":
                    assert d.subject not in names
                    assert read == [d.fact.shifted(0)] or read == [d.fact]
                elif d.kind == "retracted":
                    # No cue word in the statement: read alone it is a fact; with the
                    # verdict after it, nothing.
                    assert _distractor_value_is_false(doc, d), d
                    statement = d.fact.sentence
                    upto = [f for f in upto_end if f.sentence == statement]
                    assert upto == [], (d, doc.text[start:end])
                    alone = read_facts(doc.text[: statement[1]])
                    assert alone[-1] == d.fact, (d, doc.text[start:end])
                else:
                    assert _distractor_value_is_false(doc, d), d
                    assert read == [], (d, doc.text[start:end])


def test_subject_form_does_not_tell_a_fact_from_a_plain_negative():
    """Among plain statements (facts, retracted statements, near-namesakes: no cue word), the
    share of real facts is about the same whether the subject is a pronoun or alias or is named:
    "a statement whose subject is a pronoun is true" must not be a rule worth learning.
    Retracted statements use pronouns (after an antecedent) and aliases as facts do."""
    counts = {True: [0, 0], False: [0, 0]}  # pronoun or alias? -> [facts, negatives]
    retracted_pronouns = 0
    for seed in range(SPLIT_SEED_BASE["train"], SPLIT_SEED_BASE["train"] + 3):
        doc = generate_document(seed, 64_000)
        for form in doc.forms.values():
            counts[form in ("pronoun", "alias")][0] += 1
        for d in doc.distractors:
            if d.kind in ("retracted", "namesake"):
                counts[d.form in ("pronoun", "alias")][1] += 1
                retracted_pronouns += d.kind == "retracted" and d.form == "pronoun"
    share = {k: facts / (facts + negatives) for k, (facts, negatives) in counts.items()}
    assert retracted_pronouns > 20, counts
    assert abs(share[True] - share[False]) <= 0.08, share


def test_facts_are_spread_over_sentences():
    doc = generate_document(SPLIT_SEED_BASE["eval"], 64_000)
    forms = list(doc.forms.values())
    assert forms.count("pronoun") > 0.1 * len(forms)
    assert forms.count("alias") > 0.03 * len(forms)
    far = 0
    for key, form in doc.forms.items():
        spans = doc.support[key]
        if form in ("pronoun", "alias"):
            assert len(spans) >= 2
            # The relation sentence alone does not name its subject.
            subject = doc.facts[key].subject
            assert subject not in doc.text[spans[-1][0] : spans[-1][1]]
        if form == "alias":
            far += spans[-1][0] - spans[0][1] > 40_000  # ~10K tokens apart
    assert far >= 5


def _pattern(templates) -> re.Pattern:
    alts = [re.escape(a).replace(r"\{S\}", ".+").replace(r"\{N\}", ".+") for a in templates]
    alts = [a.replace(r"\{O\}", ".+").replace(r"\{G\}", ".+") for a in alts]
    return re.compile("|".join(alts), re.I)


def test_antecedent_sentences_name_the_subject():
    """A pronoun subject is preceded by one sentence naming only its referent: an activity for a
    person, an object or organisation filler sentence for "it"."""
    doc = generate_document(SPLIT_SEED_BASE["train"], SHORT)
    patterns = {
        "S": _pattern(ACTIVITIES), "O": _pattern(FILLER["object"]), "G": _pattern(FILLER["org"])
    }  # fmt: skip
    seen = set()
    for key, form in doc.forms.items():
        if form == "pronoun":
            slot = RELATION_SLOTS[key[0]][0]
            seen.add(slot)
            # The antecedent comes right before the sentence (an alias introduction for another
            # slot, if any, is further back).
            s, e = doc.support[key][-2]
            assert e + 1 == doc.support[key][-1][0]
            assert patterns[slot].fullmatch(doc.text[s:e])
            assert doc.facts[key].subject.lower() in doc.text[s:e].lower()
    assert seen == {"S", "O", "G"}


def test_initial_states_use_state_verbs():
    """The first home, post and owner are stated with initial-state phrases and read as no
    change; every later one is a change (so arrivals can be counted from the text)."""
    doc = generate_document(SPLIT_SEED_BASE["heldout"], 64_000)
    for key, fact in doc.facts.items():
        relation, _, index = key
        if relation in ("residence", "employment", "owner"):
            assert fact.change == (index > 0)
            assert ("/ivp" in doc.shapes[key]) == (index == 0)
        else:
            assert not fact.change
