"""The per-document sign solver (envtools.audit.sign_solver), handed the generator's grouping of
statements, is a working attack where a document contests every one-off fact (the
`fathom-docs-10` layout): it learns a held-out document's verdict signs from the document alone.
On the question plan's seven contested facts it stays near chance. The reward audit reports
both; this test fails if the instrument stops finding what it measures, or if the plan stops
holding it off."""

from envtools.audit.sign_solver import document_facts, pick_accuracy, solve
from envtools.policies.fathom.verdict_text import first_verb

SEEDS = range(3_000_000, 3_000_010)


def test_first_verb_skips_words_inside_the_ruling_subject():
    assert first_verb("Not one of the elders upheld the entry") == "upheld"
    assert first_verb("Neither the vicar nor the notary denied what the register said") == "denied"
    assert first_verb("The keeper of the rolls gainsaid that line of the record") == "gainsaid"


def _accuracy(every_fact: bool) -> tuple[float, float, int]:
    """(pick accuracy, chance, facts) over the held-out documents, one sign table each."""
    hits = chance = n = 0.0
    for seed in SEEDS:
        facts = document_facts(seed, 16_000, every_fact=every_fact)
        hits += pick_accuracy(facts, solve(facts)) * len(facts)
        chance += sum(1 / len(f.parts) for f in facts)
        n += len(facts)
    return hits / n, chance / n, int(n)


def test_the_solver_reads_a_document_that_contests_every_fact():
    accuracy, chance, n = _accuracy(every_fact=True)
    assert n >= 300
    assert accuracy > chance + 0.5


def test_the_question_plan_keeps_the_solver_near_chance():
    accuracy, chance, n = _accuracy(every_fact=False)
    assert n == 70
    assert accuracy < chance + 0.1
