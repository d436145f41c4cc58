"""Reward audit of the generator: the keyword solver (regexes, English cue words and word
weights learned on `train`, no `llm`) against the `heldout` questions at 16K tokens.

The bar is the same as for the code-only adversary: at most 0.30 correct on every family that
needs reading (depth >= 1). Retracted false statements (plain statements in the needles' own
shapes, cancelled by the next sentence) bring the solver under the bar at 200K tokens (numbers in
environments/fathom_rlm/docs/reward_audit.md), but at 16K, where chapters have little room for
them, single_hop stays above it (0.38; `uv run python -m envtools.policies.fathom.
keyword_solver --split heldout --doc-tokens 16000`), so the bar test is a strict xfail: it
starts failing loudly the day the generator gets under the bar here too, and the marker must go.
"""

from __future__ import annotations

import pytest
from fathom_rlm.documents.tasks.intent import READING_FAMILIES

from envtools.policies.fathom.keyword_solver import accuracy_by_family

pytestmark = pytest.mark.reward_audit

# Every family that needs its text read, whatever its depth label (single_hop is depth 0 but
# stays under the bar: a reader that skips meaning must still fail it).
DEPTH_ONE_FAMILIES = READING_FAMILIES


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
    reason="generator: at 16K tokens single_hop is still above the 0.30 bar (0.38); "
    "at 200K every reading family is under it",
)
def test_keyword_solver_stays_below_the_bar_on_reading_families(heldout_accuracy):
    over = {f: a for f, a in heldout_accuracy.items() if f in DEPTH_ONE_FAMILIES and a > 0.30}
    assert not over, over
