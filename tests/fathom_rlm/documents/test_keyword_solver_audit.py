"""Reward audit of the generator against code-only solvers: the keyword solver and the verdict
attacks (`fathom_lab.audit.verdict_attacks`), everything learned on `train`, answering
the first held-out questions at 16K tokens.

The bar is the code-only adversary's: at most 0.30 correct on every family the solver answers
that needs reading (every family but the ID lookup), and a verdict attack picks the true
statement of at most 0.30 of the contested facts (one in six is chance). The full measurement
(1,000 held-out questions at 16K and 200K, with 95% intervals) is in
environments/fathom_rlm/docs/reward_audit.md (`uv run python -m
fathom_lab.audit.verdict_audit --split heldout --n 1000 --doc-tokens 16000`).

Each attack is also run where it must win, so that a broken attack cannot pass for a strong
environment: the lexicon on the `train` documents it was fitted on, the one-pick rules on
documents whose true verdicts were made rarer, or given a part of their own, the sign searches
on documents that contest every one-off fact (the `fathom-docs-10` layout), where they read
nearly every verdict, and the English reader on `train` documents, with its word lists and
with every outcome forgotten.

The attacks that bring the verdict words' English polarity from outside ((e) and (f)) are not
held to the bar: the verdicts are English, and code that knows English reads them
(reward_audit.md, "Code that knows English"). Their held-out strength is asserted instead, so
the documented limit stays measured.
"""

from __future__ import annotations

import dataclasses

import pytest
from fathom_lab.audit import position_tell, value_tells, verdict_audit
from fathom_lab.audit.english_reader import EnglishReader
from fathom_lab.audit.english_signs import english_sign
from fathom_lab.audit.keyword_solver import Text
from fathom_lab.audit.verdict_attacks import (
    GroupSignRater,
    OnePickRater,
    SignSystemRater,
    document_picks,
    pick_share,
    verdicts_of,
)
from fathom_lab.audit.verdict_text import documents, labelled_groups
from fathom_lab.ladder.grammar_reader import read_verdict
from fathom_rlm.documents.tasks.intent import READING_FAMILIES

# The held-out fixture measures every attack on 300 questions: 40-80 s on a quiet 2-core machine,
# so the default 300 s per test (fixture included) failed it on a machine four times as busy. The
# timeout here only stops a hang.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.reward_audit,
    pytest.mark.xdist_group("test_keyword_solver_audit"),
    pytest.mark.timeout(1200),
]

TOKENS = 16_000
TRAIN_DOCS = 60
HELDOUT_QUESTIONS = 300
BAR = 0.30


@pytest.fixture(scope="module")
def fitted() -> verdict_audit.Fitted:
    return verdict_audit.fit(TOKENS, train_docs=TRAIN_DOCS)


@pytest.fixture(scope="module")
def heldout(fitted) -> dict:
    return verdict_audit.measure(fitted, "heldout", HELDOUT_QUESTIONS, TOKENS).summary()


@pytest.fixture(scope="module")
def train_in_sample(fitted) -> dict:
    """The questions of half the `train` documents the attacks were fitted on (30 of 60), for
    the two attacks whose in-sample strength is asserted."""
    attacks = ("lexicon", "english-reader")
    return verdict_audit.measure(fitted, "train", 5 * TRAIN_DOCS, TOKENS, attacks=attacks).summary()


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
    assert len(found) == 6 * len(document.world.contested.keys) and set(found) == read
    truth = {i: true for g in labelled_groups(document, doc) for i, true in g}
    assert set(truth) == set(found)


def test_keyword_solver_is_a_real_attack(heldout):
    """The solver answers from the text: the state questions (no verdict to read) right clearly
    more often than never, so the bars below are not vacuous."""
    assert set(READING_FAMILIES) <= set(heldout["keyword"])
    assert heldout["keyword"]["temporal"]["correct"] >= 0.08, heldout["keyword"]


ENGLISH_ATTACKS = ("english-signs", "english-reader")
"""The attacks that bring the verdict words' English polarity: not held to the bar
(reward_audit.md, "Code that knows English"), measured as a rung and held to their documented
strength below."""
HELD_OFF = [a for a in verdict_audit.ATTACKS if a not in ENGLISH_ATTACKS]


@pytest.mark.parametrize("attack", HELD_OFF)
def test_code_only_attack_stays_below_the_bar_on_reading_families(heldout, attack):
    """Every family that needs its text read, whatever its depth label."""
    rows = heldout[attack]
    assert set(READING_FAMILIES) <= set(rows)
    assert not _over_the_bar(rows), rows


@pytest.mark.parametrize("attack", ["lexicon", "one-pick", "sign-system", "sign-groups"])
def test_verdict_attack_picks_the_truth_about_one_time_in_six(heldout, attack):
    pick = heldout[attack]["pick"]
    assert pick["facts"] >= 200, pick
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
def every_fact_contested():
    """Held-out 16K documents with every one-off fact contested (about 40 each): where the
    per-document rules have enough facts to find their decision."""
    from fathom_rlm.documents import generate_document, split_seeds

    return [
        (document, Text(document.text))
        for document in (
            generate_document(seed, TOKENS, contest_every_fact=True)
            for seed in split_seeds("heldout", 30)
        )
    ]


def _picked(rule: str, docs, rewrite) -> float:
    total = n = 0.0
    for pair in docs:
        verdicts = _rewritten(pair, rewrite)
        ratings = OnePickRater(rule).ratings(pair[1], verdicts)
        got, facts = document_picks(ratings, *pair)
        total, n = total + got, n + facts
    return total / n


def test_one_pick_finds_the_truth_when_its_verdicts_are_rarer(every_fact_contested):
    """The counting rules work: with one stock verdict per false statement's rank (the
    `fathom-docs-9` design) and a fresh one for each true statement, the rarest sentence is
    the truth's."""

    def rewrite(v, true, k):
        return dataclasses.replace(v, sentence=f"fresh {v.statement}" if true else f"stock {k}")

    assert _picked("rarest sentence", every_fact_contested[:5], rewrite) >= 0.95


def test_one_pick_finds_a_part_that_means_stands(every_fact_contested):
    """The part rule works: when the true statements' verdicts alone end in one outcome, the
    document's one decision finds it from the subject groups code forms."""

    def rewrite(v, true, k):
        return dataclasses.replace(v, outcome="vindication") if true else v

    assert _picked("one part", every_fact_contested[:5], rewrite) >= 0.9


def test_one_decision_settles_few_questions(heldout):
    """No verdict sentence or triple settles more than one question of a document (a contested
    fact serves one question), while several of its questions rest on contested statements (a
    shared verdict would settle them all)."""
    settled = heldout["settled"]
    assert settled["sentence"]["max"] == 1 and settled["triple"]["max"] == 1, settled
    assert settled["one_off"]["mean"] >= 3, settled


ENGLISH = GroupSignRater(name="english-signs", known=english_sign)


@pytest.mark.parametrize(
    "rater", [SignSystemRater(), GroupSignRater(), ENGLISH, EnglishReader()], ids=lambda r: r.name
)
def test_sign_searches_read_the_verdicts_when_every_fact_is_contested(every_fact_contested, rater):
    """The sign searches are real attacks: on documents that contest every one-off fact they
    find the verbs' and outcomes' signs and pick the truth of most facts. The question plan
    (seven contested facts) is what keeps them at chance above."""
    assert pick_share(rater, every_fact_contested) >= 0.6


def test_english_signs_lift_the_search_off_chance(heldout):
    """What English says of the verdict words (an off-the-shelf sentiment lexicon) lifts the
    grouped sign search well above its blind pick on held-out documents (0.31 against 0.15 on
    these questions): the documented strength of attack (e). Should a change of the verdicts
    take it away, this fails and the audit's "Code that knows English" must be re-measured."""
    english, blind = heldout["english-signs"]["pick"], heldout["sign-groups"]["pick"]
    assert english["share"] >= blind["share"] + 0.08, (english, blind)


def test_english_reader_reads_the_train_verdicts(train_in_sample):
    """The English reader (attack (f)) is a real attack: on `train` documents, whose verdict
    words its lists know, it picks the true statement of nearly every fact and answers far above
    the bar."""
    rows = train_in_sample["english-reader"]
    assert rows["pick"]["share"] >= 0.95, rows
    assert rows["single_hop"]["correct"] >= BAR + 0.2, rows


def test_english_reader_finds_the_words_its_lists_do_not_know():
    """Its sign search is real too: made to forget every outcome of the `train` documents it
    reads, so that the lists sign only their verbs, it finds the outcomes' signs from the facts
    and still picks the truth of most of them."""
    docs = documents("train", 20, TOKENS)
    outcomes = frozenset(v.outcome for _, doc in docs for v in verdicts_of(doc).values())
    assert pick_share(EnglishReader(forget=outcomes), docs) >= 0.9


def test_english_reader_reads_the_heldout_verdicts(heldout):
    """Read as the English it is, a held-out verdict gives its statement away to code that knows
    English: the English reader picks the truth of nearly every held-out fact (0.998 of 210 on
    these questions) and answers single_hop over the bar. That is the documented limit of the
    code-only bar (reward_audit.md, "Code that knows English"); this keeps it measured."""
    rows = heldout["english-reader"]
    assert rows["pick"]["share"] >= 0.9, rows["pick"]
    assert rows["single_hop"]["correct"] > BAR, rows


def test_years_beside_a_name_do_not_tell_the_true_statements():
    """The values tell (`value_tells`): per statement, the offsets between its year and the
    years of other sentences naming the same people, weighed on `train`. On the draft of
    `fathom-docs-7` whose ordinary negatives put a false birth year 1-9 years before the true
    one it picked the truth in 0.76 of held-out documents; now it must stay near one in six."""
    rule = value_tells.learn_rule(TOKENS)
    found = value_tells.pick_rate("heldout", TOKENS, rule, docs=120)
    assert found["facts"] >= 500, found
    assert found["pick"] <= 0.25, found


def test_where_a_statement_sits_in_its_chapter_does_not_tell_the_true_one():
    """The position tell (`position_tell`): under `fathom-docs-7` true one-off statements kept
    story order among the chapter's needles and sat later than the retracted ones. Now the gap
    must be within noise and neither direction may pick the truth much above one time in six."""
    found = position_tell.position_gap("heldout", TOKENS, docs=450)
    assert found["facts"] >= 3000, found
    assert abs(found["gap"]) < 3 * found["se"], found
    assert max(found["latest"], found["earliest"]) <= 0.25, found
