"""Verdicts: every statement of a contested fact is followed by its own verdict (verdicts.py).

A verdict lets its statement stand when the signs of its first verb, its second verb and its
outcome multiply to a plus. These tests check that every contested statement has one and that
it reads as its class, that the other one-off facts are told once with none, that no verdict
sentence is shared between facts, that no part and no pair of parts carries the class on its
own, and that what is learnable from `train`'s verdicts is worth nothing on `heldout`'s.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
from fathom_lab.audit.verdict_lexicon import (
    NaiveBayes,
    SignLexicon,
    score,
    sign_counts,
    verdict_groups,
    verdict_parts_of,
)
from fathom_lab.ladder.grammar_reader import SENTENCE, compiled_grammar, read_verdict
from fathom_rlm.documents import generate_document
from fathom_rlm.documents.grammar import RETRACTED, SPLITS
from fathom_rlm.documents.render import MAX_RETRACTED_PER_FACT, retractions_per_fact
from fathom_rlm.documents.seeds import SPLIT_SEED_BASE
from fathom_rlm.documents.verdict_tables import BACKING, CHALLENGES, OUTCOMES, REJECTING
from fathom_rlm.documents.verdicts import draw_verdict, verdict_parts

SHORT, LONG = 16_000, 200_000
CORPUS_DOCS = 160  # 16K documents per split: seven contested facts each, six verdicts per fact
SLOTS_ALL = ("who", "verb", "what", "verb2", "end")
FEATURES = (
    "nobody", "verb1 backs", "verb2 backs", "outcome",
    "verb1 = verb2", "verb1 = outcome", "verb2 = outcome", "nobody = verb1",
)  # fmt: skip


@pytest.fixture(scope="module")
def corpus():
    """split -> its first CORPUS_DOCS 16K documents."""
    return {
        split: [generate_document(SPLIT_SEED_BASE[split] + i, SHORT) for i in range(CORPUS_DOCS)]
        for split in ("train", "heldout")
    }


@pytest.fixture(scope="module")
def long_doc():
    return generate_document(SPLIT_SEED_BASE["heldout"] + 1, LONG)


def _contested_statements(doc):
    """(statement span, verdict span, stands) of every statement of a contested fact."""
    out = []
    for key in doc.world.contested.keys:
        fact = doc.facts[key]
        m = SENTENCE.match(doc.text, fact.sentence[1] + 1)
        out.append((fact.sentence, (m.start(), m.end()), True))
    for d in doc.distractors:
        if d.kind == "retracted":
            out.append((d.fact.sentence, d.spans[-1], False))
    return out


@pytest.mark.parametrize("split", SPLITS)
def test_every_contested_statement_is_followed_by_its_verdict(split):
    """Right after each statement of a contested fact, one space on in its paragraph, a verdict
    of the document's split that reads as its class; another split's verdict parts read nothing
    in it. Every verdict of the text is one of these, each contested fact has five retracted
    statements, and every other one-off fact is told once with no verdict after it."""
    others = tuple(s for s in SPLITS if s != split)
    for doc in (
        generate_document(SPLIT_SEED_BASE[split] + i, n) for i, n in ((0, SHORT), (1, LONG))
    ):
        assert retractions_per_fact(doc.world, len(doc.text)) == MAX_RETRACTED_PER_FACT
        statements = _contested_statements(doc)
        contested = doc.world.contested.keys
        assert len(contested) == 7
        assert len(statements) == len(contested) * (1 + MAX_RETRACTED_PER_FACT)
        for statement, verdict, stands in statements:
            assert statement[1] + 1 == verdict[0] and doc.text[statement[1]] == " "
            sentence = doc.text[slice(*verdict)]
            assert read_verdict(sentence, (split,)) is stands, sentence
            assert read_verdict(sentence, others) is None, sentence
        in_text = [m.group() for m in SENTENCE.finditer(doc.text)]
        assert sum(read_verdict(s) is not None for s in in_text) == len(statements)
        plain = [f for k, f in doc.facts.items() if k[0] in RETRACTED and k not in contested]
        assert len(plain) > len(contested)
        for fact in plain:
            m = SENTENCE.match(doc.text, fact.sentence[1] + 1)
            assert m is None or read_verdict(m.group()) is None
        retracted = [d for d in doc.distractors if d.kind == "retracted"]
        assert len(retracted) == len(contested) * MAX_RETRACTED_PER_FACT


def test_drawn_verdicts_read_as_drawn_and_every_sign_is_even():
    """In either class each sign-bearing part (first verb, second verb, outcome or challenge)
    is a plus as often as a minus, and so is every pair of them; "who" and "what" always carry
    the same sign (a negation comes with a doubt), half of the time a minus."""
    n = 20_000
    for split in SPLITS:
        rnd, parts = random.Random(split).random, verdict_parts(split)
        grammar = compiled_grammar((split,))
        for stands in (True, False):
            shares: Counter[str] = Counter()
            for _ in range(n):
                sentence = draw_verdict(rnd, parts, stands)
                assert read_verdict(sentence, (split,)) is stands
                m = grammar.verdict.fullmatch(sentence)
                sign = {slot: grammar.verdict_signs[m[slot]] > 0 for slot in SLOTS_ALL}
                assert sign["who"] == sign["what"]
                assert (sign["verb"] == sign["verb2"]) == (sign["end"] == stands)
                shares.update(k for k, v in _sign_features(sign).items() if v)
            for feature in FEATURES:
                assert abs(shares[feature] / n - 0.5) < 0.02, (split, stands, feature)


def _sign_features(sign: dict[str, bool]) -> dict[str, bool]:
    """Single signs and pairs of signs of a verdict (True: plus, or the pair agrees)."""
    return {
        "nobody": not sign["who"],
        "verb1 backs": sign["verb"],
        "verb2 backs": sign["verb2"],
        "outcome": sign["end"],
        "verb1 = verb2": sign["verb"] == sign["verb2"],
        "verb1 = outcome": sign["verb"] == sign["end"],
        "verb2 = outcome": sign["verb2"] == sign["end"],
        "nobody = verb1": sign["who"] == sign["verb"],
    }  # the keys of FEATURES


def test_signs_are_even_in_each_class_of_the_documents(corpus):
    """Counted over the verdicts of the documents (about 1,100 true statements per split):
    backing first verbs, backing second verbs, outcomes (against challenges) and negations
    (with their doubts) each in half of either class."""
    for split, docs in corpus.items():
        counts = sign_counts(g for doc in docs for g in verdict_groups(doc))
        for stands in (True, False):
            for slot in ("who", "verb", "verb2", "end"):
                plus, minus = counts[stands, slot, 1], counts[stands, slot, -1]
                assert plus + minus > 1_000
                assert abs(plus / (plus + minus) - 0.5) < 0.05, (split, stands, slot)


def test_no_verdict_sentence_recurs_within_a_document(corpus, long_doc):
    """No verdict sentence follows two statements of a document, at 16K or at 200K (a verdict
    shared by every true statement would answer every contested question at once)."""
    for doc in [*corpus["train"][:10], *corpus["heldout"][:10], long_doc]:
        groups = verdict_groups(doc)
        every = Counter(v for g in groups for v, _ in g)
        assert len(groups) == 7 and max(every.values()) == 1, (doc.seed, len(doc.text))


def _sign_words(split: str) -> list[str]:
    p = verdict_parts(split)
    return [*p.backing, *p.rejecting, *(o[4:] for o in p.outcomes), *(c[4:] for c in p.challenges)]


def test_sign_bearing_parts_are_words_of_their_own():
    """Verbs are single words (one eval verb with its particle, "sided with"), outcomes and
    challenges "the" and one word; none of those words occurs in any other verdict part of any
    split, and no `heldout` one shares its first five letters with a `train` one, so neither a
    word nor a stem learned on train carries a sign over to heldout."""
    p = [verdict_parts(split) for split in SPLITS]
    every_part = [part for parts in p for table in vars(parts).values() for part in table]
    words = Counter(w.lower() for part in every_part for w in re.findall(r"[\w']+", part))
    for part in (*BACKING, *REJECTING):
        assert 1 <= len(part.split()) <= 2 and all(words[w] == 1 for w in part.split()), part
    for part in (*OUTCOMES, *CHALLENGES):
        article, word = part.split()
        assert article == "the" and words[word] == 1, part
    train_stems = {w[:5] for w in _sign_words("train")}
    assert not [w for w in _sign_words("heldout") if w[:5] in train_stems]


def test_a_lexicon_learned_on_train_is_at_chance_on_heldout(corpus):
    """Two learners fit on train's verdicts with their annotated classes: word weights (naive
    Bayes over the whole sentence) and a sign per part solved exactly from the labels, its
    unknown parts given the sign of the train part with the most character trigrams in common.
    The sign lexicon is right on every train verdict; on heldout both are at chance, per
    verdict (balanced accuracy 0.5) and per fact (picking the true statement among six: 1/6)."""
    train = [g for doc in corpus["train"] for g in verdict_groups(doc)]
    heldout = [g for doc in corpus["heldout"] for g in verdict_groups(doc)]
    assert len(train) > 1_000 and len(heldout) > 1_000
    assert {len(g) for g in heldout} == {1 + MAX_RETRACTED_PER_FACT}
    lexicon = SignLexicon(train)
    assert score(lexicon, train) == (1.0, 1.0)
    for learner in (lexicon, NaiveBayes(train)):
        balanced, pick = score(learner, heldout)
        assert abs(balanced - 0.5) < 0.04, (type(learner).__name__, balanced)
        assert abs(pick - 1 / 6) < 0.04, (type(learner).__name__, pick)


def test_verdict_parts_of_reads_every_split():
    for split in SPLITS:
        sentence = draw_verdict(random.Random(0).random, verdict_parts(split), True)
        parts = verdict_parts_of(sentence)
        assert parts is not None and parts["verb"] in sentence
    assert verdict_parts_of("Ada Velk moved to Ossmere.") is None
