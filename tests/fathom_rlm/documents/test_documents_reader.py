"""The reader of the grammar: read_facts(text) returns exactly what the text alone states."""

from __future__ import annotations

import random
import re
from dataclasses import replace

import pytest
from fathom_lab.ladder.grammar_reader import read_aliases, read_facts, read_verdict
from fathom_rlm.documents import Fact, generate_document
from fathom_rlm.documents.seeds import SPLIT_SEED_BASE

SEEDS = (7, SPLIT_SEED_BASE["train"], SPLIT_SEED_BASE["eval"], SPLIT_SEED_BASE["heldout"])


@pytest.fixture(scope="module")
def docs():
    return [generate_document(seed, 16_000) for seed in SEEDS]


def _readable(doc) -> list[Fact]:
    """Every fact a reader of the whole text takes: the world's facts and namesake statements."""
    facts = [*doc.facts.values(), *(d.fact for d in doc.distractors if d.kind == "namesake")]
    return sorted(facts, key=lambda f: f.sentence)


def _inside(span, start: int, end: int) -> bool:
    return start <= span[0] and span[1] <= end


def _expected(doc, start: int, end: int) -> set[Fact]:
    """Annotated facts whose every span lies in [start, end), relative to ``start``, with the
    chapter known only when its heading is inside the slice too."""
    out = set()
    for f in _readable(doc):
        if not all(_inside(sp, start, end) for sp in f.spans):
            continue
        ch = doc.chapter_of(f.sentence[0])
        heading_end = ch.start + len(f"Chapter {ch.number}: {ch.title}\n{ch.date}")
        known = ch.start >= start and heading_end <= end
        g = f.shifted(start)
        out.add(replace(g, chapter=ch.number if known else None, date=ch.date if known else None))
    return out


def _check_slice(doc, start: int, end: int, got: list[Fact]) -> list[Fact]:
    """Resolved facts include every annotated fact wholly inside; each unresolved one is an
    annotated fact whose sentence is inside but whose antecedent or alias introduction is not
    (and every such fact is returned); a retracted false statement is read only when the slice
    ends right after it, before its verdict. Returns the facts the annotation does not
    explain."""
    expected = _expected(doc, start, end)
    assert expected <= set(got)
    partial = {
        f.sentence: f.shifted(start)
        for f in _readable(doc)
        if _inside(f.sentence, start, end) and not all(_inside(sp, start, end) for sp in f.spans)
    }
    # A retracted false statement inside the slice whose verdict is not: read as a fact.
    cut_verdicts = {
        d.fact.sentence: d
        for d in doc.distractors
        if d.kind == "retracted"
        and _inside(d.fact.sentence, start, end)
        and not _inside(d.spans[-1], start, end)
    }
    unexplained = []
    for f in got:
        if f in expected:
            continue
        false = cut_verdicts.get((f.sentence[0] + start, f.sentence[1] + start))
        if false is not None and (f.relation, f.detail) == (false.relation, false.fact.detail):
            # Its verdict was cut off: the slice ends after the statement, at most a part of
            # the verdict following it.
            verdict = doc.text[slice(*false.spans[-1])]
            assert (" " + verdict).startswith(doc.text[start + f.sentence[1] : end]), f
            continue
        want = partial.pop((f.sentence[0] + start, f.sentence[1] + start), None)
        if f.resolved or want is None:
            unexplained.append(f)
            continue
        assert (f.relation, f.detail, f.change) == (want.relation, want.detail, want.change)
        assert set(f.spans) < set(want.spans)
        for mine, true in ((f.subject, want.subject), (f.value, want.value)):
            assert mine == true or mine in ("she", "he", "it") or mine.startswith("the ")
    assert not partial, sorted(partial)[:3]
    return unexplained


def test_whole_document_reads_as_its_annotations(docs):
    for doc in docs:
        assert read_facts(doc.text) == _readable(doc)


def test_long_document_reads_as_its_annotations():
    doc = generate_document(SPLIT_SEED_BASE["heldout"] + 7, 200_000)
    assert read_facts(doc.text) == _readable(doc)


def test_slices_starting_at_a_sentence_read_exactly_their_facts(docs):
    rng = random.Random(0)
    for doc in docs:
        starts = [0] + [m.end() for m in re.finditer(r"\. |\n", doc.text)]
        for _ in range(60):
            start = rng.choice(starts)
            end = min(len(doc.text), start + rng.randrange(50, 14_000))
            got = read_facts(doc.text[start:end])
            assert _check_slice(doc, start, end, got) == [], (doc.seed, start, end)
            assert len(got) == len(set(got))


def test_slices_cut_anywhere_add_at_most_the_cut_sentence(docs):
    """A slice that starts inside a framed sentence can leave a plain statement of the same fact
    ("...that Ada Vel moved to Oss." -> "Ada Vel moved to Oss."): the reader then returns that
    fact with the fragment as its span (unresolved if its subject is "she" or an alias), and
    nothing else beyond the annotated facts."""
    rng = random.Random(1)
    for doc in docs:
        readable = _readable(doc)
        for _ in range(80):
            start = rng.randrange(len(doc.text))
            end = min(len(doc.text), start + rng.randrange(50, 14_000))
            text = doc.text[start:end]
            for extra in _check_slice(doc, start, end, read_facts(text)):
                # Only the text's first sentence can be such a fragment.
                assert extra.spans == (extra.sentence,) or not extra.resolved
                assert not re.search(r"[.\n]", text[: extra.sentence[0]])
                (cut,) = [f for f in readable if f.sentence[0] < start < f.sentence[1]]
                assert (cut.relation, cut.detail, cut.change) == (
                    extra.relation, extra.detail, extra.change,
                )  # fmt: skip
                for mine, true in ((extra.subject, cut.subject), (extra.value, cut.value)):
                    surface = mine in ("she", "he", "it") or mine.startswith("the ")
                    assert mine == true or (surface and not extra.resolved)


HEADER = "Chapter 4: High Water\nMay 1790\n\n"
BIRTH = "In 1755 Ada Velk arrived as a newborn in Ossmere."
# Verdicts in train's parts, and one in heldout's (verdict_tables.py: index mod 3).
FALLS = "The registrar upheld the entry; later, the county court disputed the finding."
STANDS = "Nobody upheld the rumour against it; a year on, the assizes disputed the appeal."
HELDOUT_FALLS = (
    "The town notary endorsed the account; on review, the town council rejected the judgement."
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ada Velk moved to Ossmere.", [("residence", "Ada Velk", "Ossmere", None, True, True)]),
        ("Ada Velk lived in Ossmere.", [("residence", "Ada Velk", "Ossmere", None, False, True)]),
        ("Mistress Velk did not move to Ossmere.", []),
        ("Mistress Velk never moved to Ossmere.", []),
        ("Ada Velk meant to move to Ossmere, but nothing came of it.", []),
        ("Word went round that Ada Velk moved to Ossmere, but it was soon denied.", []),
        ("Had the money come through, Ada Velk would have moved to Ossmere.", []),
        ("Ada Velk moved to Ossmere, or so Bo Tarn claimed.", []),
        ("The records show that Ada Velk moved to Ossmere that month.",
         [("residence", "Ada Velk", "Ossmere", None, True, True)]),
        # No antecedent in the text: someone moved, the text does not say who.
        ("She moved to Ossmere.", [("residence", "she", "Ossmere", None, True, False)]),
        ("Ada Velk counted every coin twice. She moved to Ossmere.",
         [("residence", "Ada Velk", "Ossmere", None, True, True)]),
        ("The Heron moved to Ossmere.", [("residence", "the Heron", "Ossmere", None, True, False)]),
        ("Ada Velk had long been known as the Heron. Soon after, the Heron moved to Ossmere.",
         [("residence", "Ada Velk", "Ossmere", None, True, True)]),
        ("The Vask Guild hired Master Tarn as a cooper.",
         [("employment", "Master Tarn", "the Vask Guild", "cooper", True, True)]),
        ("The Vask Guild raised its fees again. It was founded by Bo Tarn in 1702, of course.",
         [("founding", "the Vask Guild", "Bo Tarn", "1702", False, True)]),
        ("Children told stories about the Lor Lute. It passed to Bo Tarn.",
         [("owner", "the Lor Lute", "Bo Tarn", None, True, True)]),
        ("In 1755 Ada Velk arrived as a newborn in Ossmere.",
         [("birth", "Ada Velk", "Ossmere", "1755", False, True)]),
        ("Ada Velk spent the morning mending a torn sail.", []),
        # A plain statement, cancelled by the verdict after it in its paragraph (its signs
        # multiply to a minus: backing, backing, rejecting the finding).
        (f"{BIRTH} {FALLS}", []),
        # A verdict whose signs multiply to a plus lets it stand.
        (f"{BIRTH} {STANDS}", [("birth", "Ada Velk", "Ossmere", "1755", False, True)]),
        # A verdict settles only the sentence right before it, in its own paragraph.
        (f"{BIRTH}\n\n{FALLS}", [("birth", "Ada Velk", "Ossmere", "1755", False, True)]),
        (f"{BIRTH} Bo Tarn said little. {FALLS}",
         [("birth", "Ada Velk", "Ossmere", "1755", False, True)]),
    ],
)  # fmt: skip
def test_reader_examples(text, expected):
    got = read_facts(text)
    fields = [(f.relation, f.subject, f.value, f.detail, f.change, f.resolved) for f in got]
    assert fields == expected
    for f in got:
        assert f.sentence[1] == len(text) or text[f.sentence[1]] in " \n"
        assert f.chapter is None and f.date is None


def test_verdicts_read_with_their_splits_parts_only():
    """A verdict reads as one only to a reader that knows its split's parts: to a reader that
    learned train's, a heldout verdict is an ordinary sentence and the statement before it
    stands."""
    assert (read_verdict(FALLS), read_verdict(STANDS), read_verdict(HELDOUT_FALLS)) == (
        False, True, False,
    )  # fmt: skip
    assert read_verdict(FALLS, ("train",)) is False
    assert read_verdict(HELDOUT_FALLS, ("train",)) is None
    assert read_verdict(HELDOUT_FALLS, ("heldout",)) is False
    assert read_verdict(BIRTH) is None
    text = f"{BIRTH} {HELDOUT_FALLS}"
    assert read_facts(text) == []
    (fact,) = read_facts(text, verdict_splits=("train",))
    assert (fact.relation, fact.value, fact.sentence) == ("birth", "Ossmere", (0, len(BIRTH)))
    assert read_facts(f"{BIRTH} {FALLS}", verdict_splits=("train",)) == []


def test_read_aliases():
    text = "Bo Tarn said little. Ada Velk had long been known as the Heron. The Heron laughed."
    assert read_aliases(text) == [("Ada Velk", "the Heron", (21, 63))]
    doc = generate_document(SPLIT_SEED_BASE["eval"], 16_000)
    people = {p.name: p.alias for p in doc.world.people}
    found = read_aliases(doc.text)
    assert found and all(people[name] == alias for name, alias, _ in found)


def test_reader_spans_and_chapter():
    intro = "Ada Velk had long been known as the Heron."
    text = HEADER + intro + " Bo Tarn said little. The Heron moved to Ossmere."
    (fact,) = read_facts(text)
    assert fact.chapter == 4 and fact.date == "May 1790"
    intro_span, sentence = fact.spans
    assert text[slice(*intro_span)] == intro
    assert text[slice(*sentence)] == "The Heron moved to Ossmere."


def test_a_reader_of_one_split_reads_nothing_in_the_others():
    """A reader compiled from the train shapes alone (what a pattern list tuned on train is)
    reads every fact of a train document and none of an eval or heldout document."""
    for split in ("train", "eval", "heldout"):
        doc = generate_document(SPLIT_SEED_BASE[split] + 3, 16_000)
        for reader_split in ("train", "eval", "heldout"):
            got = read_facts(doc.text, splits=(reader_split,))
            assert got == (_readable(doc) if reader_split == split else [])
