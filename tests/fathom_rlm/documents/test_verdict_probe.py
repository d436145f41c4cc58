"""The design probe for world-grounded verdicts (envtools.policies.fathom.verdict_probe).

The probe stands for a generator that does not exist yet, so what is tested is that its claims
are what each design says (one true claim per group, read off the world; false ones really
false) and that its code reader is a real attack: a verdict grounded in where someone lived is
checked far better than chance, which is why that design is recorded as not closing the
group-constraint attack (environments/fathom_rlm/docs/reward_audit.md, "Group constraint").
"""

from __future__ import annotations

import random

import pytest
from fathom_rlm.documents import get_document, split_seeds

from envtools.policies.fathom import verdict_probe as vp

pytestmark = [pytest.mark.reward_audit, pytest.mark.xdist_group("test_verdict_probe")]

TOKENS = 16_000


@pytest.fixture(scope="module")
def heldout_doc():
    return get_document(split_seeds("heldout")[0], doc_tokens=TOKENS)


@pytest.mark.parametrize("design", vp.DESIGNS)
def test_each_group_holds_one_true_claim_read_off_the_world(heldout_doc, design):
    groups = vp.claim_groups(heldout_doc, design, random.Random(0))
    assert groups
    truth = vp.moves_before if design.endswith("moves") else vp.home_at
    for group in groups:
        assert len(group) == vp.GROUP
        assert [claim[3] for claim in group] == [True] + [False] * (vp.GROUP - 1)
        for person, chapter, value, true in group:
            assert vp.settled_in(heldout_doc, person, chapter)
            assert (truth(heldout_doc, person, chapter) == value) is true
        people = {claim[0] for claim in group}
        chapters = {claim[1] for claim in group}
        if design.startswith("witness"):
            assert len(people) == vp.GROUP and len(chapters) == 1
        else:
            assert len(people) == 1 and len(chapters) == vp.GROUP


def test_code_reader_checks_a_home_claim_far_better_than_chance():
    """Chance is one in six; grounding a verdict in where a witness lived does not hide it."""
    result = vp.probe(TOKENS, docs=6, designs=("witness_home",))
    assert result["witness_home"]["groups"] >= 100
    assert result["witness_home"]["pick_rate"] >= 0.35, result
