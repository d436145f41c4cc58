"""Reward audit of the generator: the keyword solver (regexes, English cue words and word
weights learned on `train`, no `llm`) against the `heldout` questions at 16K tokens.

The bar is the same as for the code-only adversary: at most 0.30 correct on every family that
needs reading (depth >= 1). The generator does not meet it yet (single_hop 0.53, comparison 0.49,
multi_hop 0.31 at 16K; 0.29 / 0.33 / 0.14 at 200K), so that test is a strict xfail: it starts
failing loudly the day a generator change makes the solver lose, and the marker must go.
"""

from __future__ import annotations

import pytest

from envtools.policies.fathom.keyword_solver import accuracy_by_family

pytestmark = pytest.mark.reward_audit

DEPTH_ONE_FAMILIES = ("single_hop", "multi_hop", "temporal", "aggregation", "comparison")


@pytest.fixture(scope="module")
def heldout_accuracy() -> dict[str, float]:
    return accuracy_by_family("heldout", doc_tokens=16_000)


def test_keyword_solver_is_a_real_attack(heldout_accuracy):
    """The solver answers from the text: it gets a real share of single-hop questions right (a
    broken solver would make the bar below vacuous)."""
    assert set(DEPTH_ONE_FAMILIES) <= set(heldout_accuracy)
    assert heldout_accuracy["single_hop"] >= 0.2, heldout_accuracy


@pytest.mark.xfail(
    strict=True,
    reason="generator defect: affirmative facts and hard negatives differ by cue words in the "
    "same sentence, and a static fact's subject has few false statements of its relation",
)
def test_keyword_solver_stays_below_the_bar_on_reading_families(heldout_accuracy):
    over = {f: a for f, a in heldout_accuracy.items() if f in DEPTH_ONE_FAMILIES and a > 0.30}
    assert not over, over
