"""The per-document sign solver (fathom_lab.audit.sign_solver), handed the generator's grouping of
statements, is a working attack where a document contests every one-off fact (the
`fathom-docs-10` layout): it learns a held-out document's verdict signs from the document alone.
On the question plan's seven contested facts it stays near chance. The reward audit reports
both; this test fails if the instrument stops finding what it measures, or if the plan stops
holding it off."""

import re

from fathom_lab.audit.sign_solver import document_facts, known_signs, main, pick_accuracy, solve
from fathom_lab.audit.verdict_text import first_verb
from fathom_rlm.documents.verdicts import verdict_parts

SEEDS = range(3_000_000, 3_000_010)


def test_first_verb_skips_words_inside_the_ruling_subject():
    assert first_verb("Not one of the elders upheld the entry") == "upheld"
    assert first_verb("Neither the vicar nor the notary denied what the register said") == "denied"
    assert first_verb("The keeper of the rolls gainsaid that line of the record") == "gainsaid"


def _accuracy(every_fact: bool, known: dict[str, int] | None = None) -> tuple[float, float, int]:
    """(pick accuracy, chance, facts) over the held-out documents, one sign table each,
    ``known`` signs given."""
    hits = chance = n = 0.0
    for seed in SEEDS:
        ids: dict[str, int] = {}
        facts = document_facts(seed, 16_000, ids, every_fact=every_fact)
        given = {ids[w]: sign for w, sign in (known or {}).items() if w in ids}
        hits += pick_accuracy(facts, solve(facts, known=given)) * len(facts)
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


def test_known_signs_are_the_split_s_own_and_one_fixed_list():
    """The words handed to the search carry their true signs (a backing verb +1, a challenge
    -1), a share means that share of the words, and the list is the same on every call."""
    parts = verdict_parts("heldout")
    every = known_signs("heldout", 1.0, 1.0)
    backing = {w for phrase in parts.backing for w in phrase.split()}
    challenges = {phrase.split()[-1] for phrase in parts.challenges}
    assert every and all(
        sign == (1 if w[2:] in backing else -1) for w, sign in every.items() if w[:2] == "v:"
    )
    assert all(
        sign == (-1 if w[2:] in challenges else 1) for w, sign in every.items() if w[:2] == "o:"
    )
    half = known_signs("heldout", 0.5, 0.0)
    verbs = [w for w in every if w[:2] == "v:"]
    assert set(half) < set(verbs) and abs(2 * len(half) - len(verbs)) <= 1
    assert half == known_signs("heldout", 0.5, 0.0)
    assert not known_signs("heldout", 0.0, 0.0)


def test_the_verbs_signs_alone_let_the_search_read_the_plan():
    """What general English gives an attacker is enough: handed the signs of the split's verbs
    and nothing of its outcomes, the search finds the outcomes' signs from the seven contested
    facts of each document and picks the truth of most of them."""
    accuracy, chance, n = _accuracy(every_fact=False, known=known_signs("heldout", 1.0, 0.0))
    assert n == 70
    assert accuracy > chance + 0.4


def test_the_command_reports_the_pick_with_a_document_resampled_upper_end(capsys):
    """The command line: every sign handed over, the search reads two held-out documents'
    facts, and the printed upper end (documents resampled) sits between the pick and 1."""
    main(["--split", "heldout", "--docs", "2", "--known-verbs", "1", "--known-outcomes", "1"])
    line = capsys.readouterr().out
    found = re.search(r"(\d+) contested facts: pick accuracy ([\d.]+) \(95% upper ([\d.]+)", line)
    assert found and "documents resampled" in line, line
    facts, pick, upper = int(found[1]), float(found[2]), float(found[3])
    assert facts == 14 and pick >= 0.9 and pick <= upper <= 1.0
