"""What code sees of the verdicts: the sentence after each statement of a contested fact.

Every statement of a contested fact (a one-off fact a question asks: birth, teacher, maker,
founding, seat; contested.py in the generator), the true one and each retracted false one, is
followed in its paragraph by a verdict of its own (verdicts.py in the generator):
``{who} {verb} {what}; {then}, {court} {verb} {outcome}.`` Code finds them by that shape alone,
the same in every split: a clause, a semicolon, an adverbial and a comma, and a clause that ends
in a verb and "the" plus one word. The words of the second verb's slot are the document's verdict
verbs; the first verb is the first of them in the first clause, else the word before the first
clause's object. Nothing here reads a table of the generator: a verdict of any split is found,
and its parts are words.

`labelled_groups` is the other half, for fitting on `train` and for checking an attack after the
fact: the generator's annotations say which statements belong to one fact and which is true. No
attack reads it on the split it is evaluated on.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from fathom_lab.audit.keyword_solver import SENTENCE_STARTS, YEAR, Text

if TYPE_CHECKING:
    from fathom_rlm.documents import Document

VERDICT_SHAPE = re.compile(r"[A-Z][^;]*; [^,;]+, [^;,]+ ([a-z]+) the ([a-z]+)\.")
"""A whole verdict sentence: the second verb and the outcome are its two groups."""
_WORD = re.compile(r"[a-z']+")
# Words that sit before "the" inside the first ruling's subject ("Not one of the elders").
_NOT_VERBS = frozenset({"of", "at", "in", "nor", "neither", "what"})
# Mentions, overlapping ("The Modae Circle" holds "The Modae" and "Modae Circle").
_MENTION = re.compile(
    r"(?=\b(?:[Tt]he ([A-Z][a-z]+ [A-Z][a-z]+(?: [A-Z][a-z]+)?)\b"
    r"|((?:Master|Mistress) [A-Z][a-z]+)\b|([A-Z][a-z]+ [A-Z][a-z]+)\b))"
)
_SUBJECT_PRONOUN = re.compile(r"\b(?:he|she|it|they)\b", re.I)
# "It was recorded that ...", "as it turned out": an "it" that stands for no one.
_EXPLETIVE = re.compile(
    r"\bit (?:(?:was|is)(?: \w+){0,3} that|turned out|seems|seemed|so happened|happened|were)\b",
    re.I,
)


@dataclass(frozen=True)
class Verdict:
    """One verdict: its sentence, the statement it follows (a sentence index of the document's
    `Text`) and its three sign-bearing parts (first verb, second verb, outcome)."""

    sentence: str
    statement: int
    first: str
    second: str
    outcome: str

    @property
    def triple(self) -> tuple[str, str, str]:
        return (self.first, self.second, self.outcome)

    @property
    def words(self) -> list[str]:
        return _WORD.findall(self.sentence.lower())


def first_verb(first_ruling: str) -> str | None:
    """The first ruling's verb: the word right before its object ("the ...", "that ...",
    "what ..."), skipping words that sit inside the ruling's subject."""
    words = first_ruling.split()
    for here, after in itertools.pairwise(words[1:]):
        if after in ("the", "that", "what") and here.lower() not in _NOT_VERBS:
            return here
    return None


def find_verdicts(doc: Text) -> dict[int, Verdict]:
    """Statement index -> the verdict after it in its paragraph, for every verdict-shaped
    sentence: its first verb is the first of the document's second-slot verbs in its first
    clause, else the word before the first clause's object (`first_verb`)."""
    shaped: list[tuple[int, str, re.Match[str]]] = []
    for i, (_, sentence) in enumerate(doc.sentences):
        m = VERDICT_SHAPE.fullmatch(sentence)
        if m and i > 0 and doc.next_in_paragraph(i - 1) == sentence:
            shaped.append((i, sentence, m))
    verbs = {m.group(1) for _, _, m in shaped}
    out: dict[int, Verdict] = {}
    for i, sentence, m in shaped:
        first_clause = _WORD.findall(sentence.split(";", 1)[0].lower())[1:]
        first = next((w for w in first_clause if w in verbs), None)
        first = first or first_verb(sentence.split(";", 1)[0])
        if first is not None:
            out[i - 1] = Verdict(sentence, i - 1, first, m.group(1), m.group(2))
    return out


@cache
def _alias_pattern(alias: str) -> re.Pattern[str]:
    """An alias as whole words, in any case: "the record" is not "The records"."""
    return re.compile(rf"\b{re.escape(alias)}\b", re.I)


def _mentions(doc: Text, sentence: str) -> list[tuple[int, str, bool]]:
    """(offset, canonical name, is a thing) of the people, things and aliases a sentence
    names; a thing ("the Ketrex Guild", "the Magreld Sextant") is an organisation or object."""
    out = []
    for m in _MENTION.finditer(sentence):
        thing, honorific, name = m.groups()
        if thing:
            out.append((m.start(), thing, True))
        elif honorific:
            out.append((m.start(), doc.canonical(honorific) or honorific, False))
        elif name and not {*name.split()} & SENTENCE_STARTS:
            out.append((m.start(), name, False))
    low = sentence.lower()
    for alias, name in doc.aliases.items():
        if alias in low:
            out += [(m.start(), name, False) for m in _alias_pattern(alias).finditer(sentence)]
    return sorted(out)


GrammarSubject = Callable[[str, list[tuple[int, str]]], str | None]
"""A rule that names a sentence's subject from its grammar, given the sentence and the people it
names (offset, canonical name), or says nothing (None)."""


def statement_subjects(doc: Text, grammar: GrammarSubject | None = None) -> list[str | None]:
    """Each sentence's subject: a thing it names (a founding, seat or maker is told of an
    organisation or object, the people in it are values), else the person ``grammar`` names,
    else the previous subject when a pronoun comes first, else the first person it names."""
    out: list[str | None] = []
    previous = None
    for _, sentence in doc.sentences:
        mentions = _mentions(doc, sentence)
        things = [name for _, name, thing in mentions if thing]
        plain = _EXPLETIVE.sub(lambda m: "x" * len(m.group()), sentence)
        pronoun = _SUBJECT_PRONOUN.search(plain)
        people = [(at, name) for at, name, thing in mentions if not thing]
        named = grammar(sentence, people) if grammar is not None and not things else None
        if things:
            subject: str | None = things[0]
        elif named is not None:
            subject = named
        elif pronoun and (not mentions or pronoun.start() < mentions[0][0]):
            subject = previous
        else:
            subject = mentions[0][1] if mentions else None
        out.append(subject)
        previous = subject or previous
    return out


def statement_groups(
    doc: Text, verdicts: dict[int, Verdict], grammar: GrammarSubject | None = None
) -> list[list[int]]:
    """The statements before verdicts grouped as code can: by their subject
    (`statement_subjects`, ``grammar`` its optional rule) and by whether they hold a year (birth
    and founding do; teacher, maker and seat do not). A group is one fact's statements when the
    subject is found."""
    subjects = statement_subjects(doc, grammar)
    groups: dict[tuple[str, bool], list[int]] = defaultdict(list)
    for i in sorted(verdicts):
        subject = subjects[i]
        if subject is not None:
            groups[subject, bool(YEAR.search(doc.sentences[i][1]))].append(i)
    return list(groups.values())


def sentence_starts(doc: Text) -> dict[int, int]:
    """The offset of each sentence's first character -> its index in ``doc.sentences``."""
    out = {}
    for i, (at, _) in enumerate(doc.sentences):
        while at < len(doc.text) and doc.text[at].isspace():
            at += 1
        out[at] = i
    return out


def labelled_groups(document: Document, doc: Text) -> list[list[tuple[int, bool]]]:
    """Per contested fact of ``document``: (sentence index, is true) of its true statement and of
    each retracted one, read from the generator's annotations (for `train` and for checks
    after the fact only). Facts whose true statement the text does not hold are left out."""
    starts = sentence_starts(doc)
    groups: dict[tuple[str, int, int], list[tuple[int, bool]]] = defaultdict(list)
    for key in sorted(document.world.contested.keys):
        fact = document.facts[key]
        if fact.sentence[0] in starts:
            groups[key].append((starts[fact.sentence[0]], True))
    for d in document.distractors:
        if d.kind == "retracted" and len(d.spans) >= 2 and d.spans[-2][0] in starts:
            assert d.key is not None
            groups[d.key].append((starts[d.spans[-2][0]], False))
    return [sorted(g) for g in groups.values() if sum(t for _, t in g) == 1 and len(g) > 1]


def documents(split: str, docs: int, doc_tokens: int) -> list[tuple[Document, Text]]:
    """The first ``docs`` documents of ``split``, each with its `Text`."""
    from fathom_rlm.documents import get_document, split_seeds
    from fathom_rlm.documents.splits import QUESTIONS_PER_DOCUMENT

    seeds = split_seeds(split, docs * QUESTIONS_PER_DOCUMENT)  # type: ignore[arg-type]
    return [(d, Text(d.text)) for d in (get_document(s, doc_tokens) for s in seeds)]
