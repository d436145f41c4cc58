"""What a sentence asserts: the annotation of a document and the output of the reader."""

from __future__ import annotations

from dataclasses import dataclass, replace

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Fact:
    """One relation the text asserts, with every span needed to read it.

    ``subject`` and ``value`` are surfaces as the text names them (a pronoun or alias resolved
    to the name its antecedent or introduction gives); organisations and objects start with a
    lowercase "the". ``detail`` is the bare role of an employment and the year of a birth or a
    founding. ``chapter``/``date`` come from the chapter heading above the sentence when that
    heading is part of the text read. ``spans`` are sorted (antecedent or alias introduction
    first, the relation sentence last). ``change`` is True for a move, a new post or a change of
    hands, False for the state a changing relation starts in ("lived in") and for timeless
    relations. ``resolved`` is False when the text read names the subject or value only by a
    pronoun or alias whose antecedent or introduction is outside it: that field then holds the
    surface as written, lowercased ("she", "it", "the lame fiddler").
    """

    relation: str
    subject: str
    value: str
    detail: str | None
    chapter: int | None
    date: str | None
    spans: tuple[Span, ...]
    change: bool = False
    resolved: bool = True

    @property
    def sentence(self) -> Span:
        """The span of the sentence stating the relation."""
        return self.spans[-1]

    def shifted(self, offset: int) -> Fact:
        """The same fact with spans relative to a text starting at ``offset``."""
        spans = tuple((s - offset, e - offset) for s, e in self.spans)
        return replace(self, spans=spans)


@dataclass(frozen=True, slots=True)
class Distractor:
    """A sentence in a relation's own shape that is not a fact of the world.

    ``kind`` is negated, planned, rumoured, corrected, hypothetical, quoted or namesake; the
    value is false for the subject in the world. A namesake sentence is a plain statement about
    a name one edit away from a real entity; no entity of the world has that name, and
    ``fact`` is what a reader takes from it.
    """

    kind: str
    relation: str
    subject: str
    value: str
    shape: str
    spans: tuple[Span, ...]
    fact: Fact | None = None
    form: str = "name"
    """How the statement names its subject: "name", "formal", "pronoun" or "alias"."""
    key: tuple[str, int, int] | None = None
    """For a retracted statement, the key of the contested fact it states falsely."""


def person_key(surface: str) -> str:
    """Identity of a person surface: family names are unique within a world."""
    return surface.rsplit(" ", 1)[-1].lower()
