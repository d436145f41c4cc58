"""Reward audit of the generator against code-only solvers: the keyword solver and the verdict
attacks (`envtools.policies.fathom.verdict_attacks`), everything learned on `train`, answering
the first held-out questions at 16K tokens.

The bar is the code-only adversary's: at most 0.30 correct on every family the solver answers
that needs reading (every family but the ID lookup), and a verdict attack picks the true
statement of at most 0.30 of the one-off facts (one in six is chance). The full measurement
(1,000 and more held-out questions at 16K and 200K, with 95% intervals) is in
environments/fathom_rlm/docs/reward_audit.md (`uv run python -m
envtools.policies.fathom.verdict_audit --split heldout --n 1000 --doc-tokens 16000`).

Each attack is also run where it must win, so that a broken attack cannot pass for a strong
environment: the lexicon on the `train` documents it was fitted on, the one-pick rules on
documents whose true verdicts were made rarer, or given a part of their own.

The sign-system attack is open: it finds every verb's and outcome's sign per document and reads
every verdict (reward_audit.md, "Sign system"). Its bar test is an expected failure, strict, so
that it fails the day the generator closes the attack and the page must be rewritten.
"""

from __future__ import annotations

import dataclasses

import pytest
from fathom_rlm.documents.tasks.intent import READING_FAMILIES

from envtools.audit.grammar_reader import read_verdict
from envtools.policies.fathom import position_tell, value_tells, verdict_audit
from envtools.policies.fathom.verdict_attacks import (
    OnePickRater,
    document_picks,
    verdicts_of,
)
from envtools.policies.fathom.verdict_text import documents, labelled_groups

pytestmark = [pytest.mark.reward_audit, pytest.mark.xdist_group("test_keyword_solver_audit")]

TOKENS = 16_000
TRAIN_DOCS = 20
HELDOUT_QUESTIONS = 200
BAR = 0.30


@pytest.fixture(scope="module")
def fitted() -> verdict_audit.Fitted:
    return verdict_audit.fit(TOKENS, train_docs=TRAIN_DOCS)


@pytest.fixture(scope="module")
def heldout(fitted) -> dict:
    return verdict_audit.measure(fitted, "heldout", HELDOUT_QUESTIONS, TOKENS).summary()


@pytest.fixture(scope="module")
def train_in_sample(fitted) -> dict:
    """The questions of the `train` documents the attacks were fitted on."""
    return verdict_audit.measure(fitted, "train", 10 * TRAIN_DOCS, TOKENS).summary()


def _over_the_bar(rows: dict) -> dict[str, float]:
    return {
        f: r["correct"] for f, r in rows.items() if f in READING_FAMILIES and r["correct"] > BAR
    }


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_verdicts_are_found_by_their_shape(split):
    """Code finds the verdicts with no table of the generator: every sentence the grammar reader
    reads as a verdict, and nothing else, with the statement before it."""
    ((document, doc),) = documents(split, 1, TOKENS)
    found = verdicts_of(doc)
    read = {i - 1 for i, (_, s) in enumerate(doc.sentences) if read_verdict(s) is not None}
    assert len(found) > 100 and set(found) == read
    truth = {i: true for g in labelled_groups(document, doc) for i, true in g}
    assert set(truth) == set(found)


def test_keyword_solver_is_a_real_attack(heldout):
    """The solver answers from the text: single-hop questions right clearly more often than the
    blind baseline (0.07 at 16K, docs/questions.md), so the bars below are not vacuous."""
    assert set(READING_FAMILIES) <= set(heldout["keyword"])
    assert heldout["keyword"]["single_hop"]["correct"] >= 0.12, heldout["keyword"]


@pytest.mark.parametrize("attack", ["keyword", "lexicon", "one-pick"])
def test_code_only_attack_stays_below_the_bar_on_reading_families(heldout, attack):
    """Every family that needs its text read, whatever its depth label."""
    rows = heldout[attack]
    assert set(READING_FAMILIES) <= set(rows)
    assert not _over_the_bar(rows), rows


@pytest.mark.parametrize("attack", ["lexicon", "one-pick"])
def test_verdict_attack_picks_the_truth_about_one_time_in_six(heldout, attack):
    pick = heldout[attack]["pick"]
    assert pick["facts"] >= 500, pick
    assert pick["share"] <= BAR, pick


def test_lexicon_reads_the_verdicts_it_was_fitted_on(fitted, train_in_sample):
    """On `train` the lexicon knows every verb and outcome: it picks the true statement of
    nearly every fact and answers far above the bar, so its held-out failure is the split's
    own words, not a broken rule."""
    assert fitted.notes["lexicon pick on train (in-sample)"] >= 0.95, fitted.notes
    rows = train_in_sample["lexicon"]
    assert rows["pick"]["share"] >= 0.95, rows
    assert rows["single_hop"]["correct"] >= BAR + 0.2, rows


def _rewritten(pair, rewrite) -> dict:
    """The document's verdicts with ``rewrite(verdict, is_true, k)`` applied to the k-th
    statement of every one-off fact (from the annotations: a fixture, not an attack)."""
    document, doc = pair
    verdicts = dict(verdicts_of(doc))
    for group in labelled_groups(document, doc):
        for k, (i, true) in enumerate(group):
            verdicts[i] = rewrite(verdicts[i], true, k)
    return verdicts


@pytest.fixture(scope="module")
def heldout_docs():
    return documents("heldout", 5, TOKENS)


def _picked(rule: str, docs, rewrite) -> float:
    total = n = 0.0
    for pair in docs:
        verdicts = _rewritten(pair, rewrite)
        ratings = OnePickRater(rule).ratings(pair[1], verdicts)
        got, facts = document_picks(ratings, *pair)
        total, n = total + got, n + facts
    return total / n


def test_one_pick_finds_the_truth_when_its_verdicts_are_rarer(heldout_docs):
    """The counting rules work: with one stock verdict per false statement's rank (the
    `fathom-docs-9` design) and a fresh one for each true statement, the rarest sentence is
    the truth's."""

    def rewrite(v, true, k):
        return dataclasses.replace(v, sentence=f"fresh {v.statement}" if true else f"stock {k}")

    assert _picked("rarest sentence", heldout_docs, rewrite) >= 0.95


def test_one_pick_finds_a_part_that_means_stands(heldout_docs):
    """The part rule works: when the true statements' verdicts alone end in one outcome, the
    document's one decision finds it from the subject groups code forms."""

    def rewrite(v, true, k):
        return dataclasses.replace(v, outcome="vindication") if true else v

    assert _picked("one part", heldout_docs, rewrite) >= 0.9


def test_one_decision_settles_few_questions(heldout):
    """No verdict sentence or triple settles more than a few questions of a document, while
    several of its questions rest on one-off statements (a shared verdict settled them all)."""
    settled = heldout["settled"]
    assert settled["sentence"]["max"] <= 3 and settled["triple"]["max"] <= 3, settled
    assert settled["one_off"]["mean"] >= 3, settled


def test_sign_system_reads_every_verdict(heldout):
    """The open attack is real: per document, the signs under which the fewest verdicts stand
    are the generator's, so it picks the truth of (nearly) every fact."""
    assert heldout["sign-system"]["pick"]["share"] >= 0.95, heldout["sign-system"]


@pytest.mark.xfail(strict=True, reason="open: the sign-system attack (reward_audit.md)")
def test_sign_system_stays_below_the_bar_on_reading_families(heldout):
    assert not _over_the_bar(heldout["sign-system"]), heldout["sign-system"]


def test_years_beside_a_name_do_not_tell_the_true_statements():
    """The values tell (`value_tells`): per statement, the offsets between its year and the
    years of other sentences naming the same people, weighed on `train`. On the draft of
    `fathom-docs-7` whose ordinary negatives put a false birth year 1-9 years before the true
    one it picked the truth in 0.76 of held-out documents; now it must stay near one in six."""
    rule = value_tells.learn_rule(TOKENS)
    found = value_tells.pick_rate("heldout", TOKENS, rule, docs=40)
    assert found["facts"] >= 400, found
    assert found["pick"] <= 0.25, found


def test_where_a_statement_sits_in_its_chapter_does_not_tell_the_true_one():
    """The position tell (`position_tell`): under `fathom-docs-7` true one-off statements kept
    story order among the chapter's needles and sat later than the retracted ones. Now the gap
    must be within noise and neither direction may pick the truth much above one time in six."""
    found = position_tell.position_gap("heldout", TOKENS, docs=100)
    assert found["facts"] >= 3000, found
    assert abs(found["gap"]) < 3 * found["se"], found
    assert max(found["latest"], found["earliest"]) <= 0.25, found
