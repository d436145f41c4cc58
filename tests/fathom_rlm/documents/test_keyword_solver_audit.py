"""Reward audit of the generator: the keyword solver (regexes, English cue words and word
weights learned on `train`, no `llm`) against the `heldout` questions at 16K tokens.

The bar is the same as for the code-only adversary: at most 0.30 correct on every family that
needs reading (every family but the ID lookup). Retracted false statements (plain statements in
the needles' own shapes, five per one-off fact, cancelled by the next sentence) keep the
solver under it (numbers in environments/fathom_rlm/docs/reward_audit.md; `uv run python -m
envtools.policies.fathom.keyword_solver --split heldout --doc-tokens 16000`).

The stronger variant (`--next-sentence-cues`) also drops every statement whose next sentence
holds an English word of correction, from a hand-written lexicon and from stems learned on
`train` annotations. True statements of the retracted relations are followed by a doubt in the
same words, dismissed, so that filter drops the true statement with the false ones.

The follower-frequency solver needs no word list: it counts how often the sentence after each
statement recurs in the document and prefers statements whose follower is a rare stock sentence.
It beat the bar on `fathom-docs-5`, where a retraction wording recurred four or five times as
often as a dismissal wording; since `fathom-docs-7` every follower of a document recurs exactly
once per fact (environments/fathom_rlm/docs/reward_audit.md, "Follower frequency").

The group-constraint solver reads no follower either: per document it finds the stock
sentences that hit every subject's group of statements exactly once. On `fathom-docs-6` that was
the dismissals alone and it beat the bar (single_hop 0.87); since `fathom-docs-7` every follower
of a document hits every group once, so it finds all six and must pick the dismissal by the
cheapest rule that does best on `train` (reward_audit.md, "Group constraint").

With the polarity rules of the class labeler (a sentence's sign as the product of its words'
signs, cue words from `train`'s tables) the pick is right in about a third of held-out documents
and the solver beats the bar: the two tests marked xfail (strict) say so, and start passing, so
that the marks must go, once the generator closes that attack (reward_audit.md, "Polarity of the
followers").
"""

from __future__ import annotations

import re

import pytest
from fathom_rlm.documents.grammar import split_grammar
from fathom_rlm.documents.tasks.intent import READING_FAMILIES

from envtools.policies.fathom import (
    class_labeler,
    follower_frequency,
    group_constraint,
    position_tell,
    value_tells,
)
from envtools.policies.fathom.keyword_solver import CORRECTION_CUES, accuracy_by_family

pytestmark = [pytest.mark.reward_audit, pytest.mark.xdist_group("test_keyword_solver_audit")]


@pytest.fixture(scope="module")
def heldout_accuracy() -> dict[str, float]:
    return accuracy_by_family("heldout", doc_tokens=16_000)


def test_keyword_solver_is_a_real_attack(heldout_accuracy):
    """The solver answers from the text: it gets single-hop questions right clearly more often
    than the blind baseline does (0.07 at 16K under `fathom-docs-7`, docs/questions.md), near the
    one in six it gets by picking among a fact's six statements (0.14 at 16K, 0.23 at 200K), so
    the bar below is not vacuous."""
    assert set(READING_FAMILIES) <= set(heldout_accuracy)
    assert heldout_accuracy["single_hop"] >= 0.12, heldout_accuracy


def test_keyword_solver_stays_below_the_bar_on_reading_families(heldout_accuracy):
    """Every family that needs its text read, whatever its depth label (single_hop is depth 0
    but a solver that skips meaning must still fail it)."""
    over = {f: a for f, a in heldout_accuracy.items() if f in READING_FAMILIES and a > 0.30}
    assert not over, over


@pytest.fixture(scope="module")
def heldout_accuracy_with_next_sentence_cues() -> dict[str, float]:
    return accuracy_by_family("heldout", doc_tokens=16_000, next_sentence_cues=True)


def test_correction_lexicon_catches_the_held_out_retractions():
    """The next-sentence filter is a real attack: its English lexicon flags most retraction
    sentences of the held-out split (wordings it was not learned on), so without the dismissed
    doubts it would drop most retracted statements."""
    retractions = split_grammar("heldout").retractions
    caught = [r for r in retractions if CORRECTION_CUES.search(r.lower())]
    assert len(caught) >= 0.75 * len(retractions), set(retractions) - set(caught)


def test_next_sentence_cues_stay_below_the_bar_on_reading_families(
    heldout_accuracy_with_next_sentence_cues,
):
    accuracy = heldout_accuracy_with_next_sentence_cues
    assert set(READING_FAMILIES) <= set(accuracy)
    over = {f: a for f, a in accuracy.items() if f in READING_FAMILIES and a > 0.30}
    assert not over, over


def test_follower_frequency_stays_below_the_bar_on_reading_families():
    accuracy = follower_frequency.accuracy_by_family("heldout", doc_tokens=16_000)
    assert set(READING_FAMILIES) <= set(accuracy)
    over = {f: a for f, a in accuracy.items() if f in READING_FAMILIES and a > 0.30}
    assert not over, over


def test_group_constraint_stays_below_the_bar_on_reading_families():
    accuracy = group_constraint.accuracy_by_family("heldout", doc_tokens=16_000)
    assert set(READING_FAMILIES) <= set(accuracy)
    over = {f: a for f, a in accuracy.items() if f in READING_FAMILIES and a > 0.30}
    assert not over, over


def test_group_constraint_finds_the_follower_classes_but_not_which_is_the_dismissal():
    """The counting half of the attack still works (the dismissal is among the classes it finds
    in nearly every document), so the bar above is not met by a broken search; the pick among
    the six is what fails: the rule chosen on `train` picks the dismissal about one time in six
    (reward_audit.md has the table)."""
    found = group_constraint.class_diagnostic("heldout", doc_tokens=16_000)
    assert found["dismissal_class_found"] >= 0.9, found
    assert found["dismissal_class_picked"] <= 0.30, found


@pytest.mark.parametrize("split", ["eval", "heldout"])
def test_no_counting_rule_picks_the_dismissal_much_above_chance(split):
    """From the tables alone: a document draws one dismissal and five retractions, and no rule
    of the class labeler (counts of negation, blame, praise, correction words, length, commas,
    ..., distance from the others, word weights learned on `train`) picks the dismissal in more
    than a quarter of documents (chance is one in six)."""
    rates = class_labeler.table_rates(split, draws=4000)
    assert len(rates) > 20
    assert max(rates.values()) <= 0.25, sorted(rates.items(), key=lambda kv: -kv[1])[:3]


def test_years_beside_a_name_do_not_tell_the_true_statements():
    """The values attack (`value_tells`): per follower class, the offsets between its statements'
    years and the years of other sentences naming the same people, weighed on `train`. On the
    draft of `fathom-docs-7` whose ordinary negatives put a false birth year 1-9 years before the
    true one it picked the dismissal in 0.76 of held-out documents; with those years drawn from
    the whole range it must stay near one in six."""
    rule = value_tells.learn_rule(16_000)
    assert value_tells.pick_rate("heldout", 16_000, rule) <= 0.30


def test_where_a_statement_sits_in_its_chapter_does_not_tell_the_true_one():
    """The position attack (`position_tell`): per follower class, the mean position of its
    statements in their chapters. Under `fathom-docs-7` true one-off statements kept story order
    among the chapter's needles, so the dismissal class sat later than the others: a gap of
    +0.010 (5 standard errors) over 600 held-out documents. Now the gap must be within noise and
    neither direction may pick the dismissal much above one time in six."""
    found = position_tell.position_gap("heldout", 16_000, docs=300)
    assert found["documents"] >= 280, found
    assert abs(found["gap"]) < 3 * found["se"], found
    assert max(found["latest"], found["earliest"]) <= 0.25, found


def test_polarity_cues_come_from_train_tables_only():
    """The polarity rules may read only what `train` shows: every cue word and every phrase that
    takes words out of scope occurs in `train`'s dismissals or retractions."""
    train = split_grammar("train")
    text = " ".join((*train.dismissals, *train.retractions)).lower()
    for kind, words in class_labeler.POLARITY_CUE_WORDS.items():
        missing = [w for w in words if not re.search(rf"\b(?:{w})\b", text)]
        assert not missing, (kind, missing)
    assert all(pattern.search(text) for pattern in class_labeler.OUT_OF_SCOPE)


def test_polarity_reads_a_negation_of_an_error_as_positive():
    """The sign is a product: a negation alone reads negative, a negation of a word of error
    positive, and a clause of time sets no sign; a learned sign needs two sentences' evidence."""
    signs = frozenset()
    assert class_labeler.sign_flips("Nobody could defend the entry.", signs) % 2 == 1
    assert class_labeler.sign_flips("Nobody ever found a mistake in that entry.", signs) % 2 == 0
    late = "Nobody could defend the entry once the error came to light."
    assert class_labeler.sign_flips(late, signs) == 1
    positive = ["The ledger agreed.", "Each ledger agreed."]
    negative = ["The ledger burnt.", "Each ledger burnt.", "The roll burnt."]
    assert class_labeler.learn_signs(positive, negative) == {"burnt"}
    assert class_labeler.learn_signs(positive, negative[:1]) == frozenset()


@pytest.mark.xfail(
    strict=True,
    reason="fathom-docs-9: the polarity rules pick the dismissal in 0.32-0.34 of eval and "
    "held-out documents from the tables alone (reward_audit.md, 'Polarity of the followers')",
)
@pytest.mark.parametrize("split", ["eval", "heldout"])
def test_no_polarity_rule_picks_the_dismissal_much_above_chance(split):
    rates = class_labeler.table_rates(split, draws=4000, with_polarity=True)
    polarity = {rule: rates[rule] for rule in class_labeler.POLARITY_RULES}
    assert max(polarity.values()) <= 0.25, polarity


@pytest.mark.xfail(
    strict=True,
    reason="fathom-docs-9: the group-constraint solver with the polarity labeler beats the bar "
    "on 1,000 held-out questions at 16K (single_hop 0.31, multi_hop 0.32; reward_audit.md, "
    "'Polarity of the followers')",
)
def test_group_constraint_with_polarity_stays_below_the_bar_on_reading_families():
    """The rule chosen on `train` among the counting and the polarity rules (the polarity one),
    1,000 held-out questions at 16K (the split's 500 and the next 50 documents of its seeds):
    every reading family at or under the bar, and the pick at or under 0.30 of the documents."""
    labeler = group_constraint.learn_group_labeler(16_000, with_polarity=True)
    right = group_constraint.answers_by_family(labeler, "heldout", 16_000, limit=1000)
    assert set(READING_FAMILIES) <= set(right)
    accuracy = {f: sum(v) / len(v) for f, v in right.items() if f in READING_FAMILIES}
    picked = group_constraint.class_diagnostic("heldout", 16_000, 100, labeler)
    over = {f: a for f, a in accuracy.items() if a > 0.30}
    assert not over and picked["dismissal_class_picked"] <= 0.30, (over, picked)
