"""The per-document sign solver (envtools.audit.sign_solver) is a working attack: it learns the
verdict parts' signs of a held-out document from the document alone and picks true statements far
above chance. The reward audit reports it as the open limit of the verdict design; this test
fails if the instrument stops finding what it measures."""

from envtools.audit.sign_solver import document_facts, first_verb, pick_accuracy, solve


def test_first_verb_skips_words_inside_the_ruling_subject():
    assert first_verb("Not one of the elders upheld the entry") == "upheld"
    assert first_verb("Neither the vicar nor the notary denied what the register said") == "denied"
    assert first_verb("The keeper of the rolls gainsaid that line of the record") == "gainsaid"


def test_the_solver_learns_a_held_out_document_s_signs():
    facts = document_facts(3_000_000, 16_000)
    assert len(facts) >= 25
    chance = sum(1 / len(f.parts) for f in facts) / len(facts)
    assert pick_accuracy(facts, solve(facts)) > chance + 0.3
