"""Cheap non-reading answerers that a fair task set must defeat.

* blind: answer with the most frequently mentioned entity of the type the question asks for,
  without looking for the evidence.
* grep: find the question's entity (or ID token) in the text with a regex and answer with the
  nearest candidate of the right type, voting over all mentions.

Both use only the question and the document, like a policy would; the answer type is read off
the question's wording.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass

from fathom_rlm.documents.document import Document
from fathom_rlm.documents.filler_tables import NUMBER_WORDS
from fathom_rlm.documents.tasks import QuestionParseError, parse_question
from fathom_rlm.documents.world import ROLES

ID_PATTERN = re.compile(r"\b[A-Z]{2}-\d{4}\b")
YEAR_PATTERN = re.compile(r"\b1[5-9]\d\d\b")
NUMBER_PATTERN = re.compile(r"\b(?:\d{1,2}|" + "|".join(NUMBER_WORDS[1:]) + r")\b")


def infer_answer_type(question: str) -> str:
    """The kind of answer a question asks for, from its wording alone: the question grammar's
    reading when the question is one of ours, else a keyword guess."""
    try:
        return parse_question(question).answer_type
    except QuestionParseError:
        pass
    q = question.lower()
    if q.startswith("how many") or "age gap" in q:
        return "number"
    if "year" in q:
        return "year"
    if "organisation" in q:
        return "organisation"
    if "post did" in q or "occupation" in q:
        return "role"
    if "object" in q or "item" in q:
        return "artefact"
    if "town" in q or "where" in q or "birthplace" in q:
        return "place"
    return "person"


@dataclass
class _Index:
    """Surface forms of every entity by type, and where each type's mentions are in the text."""

    surfaces: dict[str, dict[str, str]]  # type -> surface -> canonical
    positions: dict[str, tuple[list[int], list[str]]]  # type -> (sorted offsets, canonical)


_INDEX_CACHE: dict[int, tuple[Document, _Index]] = {}


def _index(doc: Document) -> _Index:
    cached = _INDEX_CACHE.get(id(doc))
    if cached is not None and cached[0] is doc:
        return cached[1]
    w = doc.world
    surfaces: dict[str, dict[str, str]] = {
        "person": {},
        "place": {},
        "organisation": {},
        "artefact": {},
        "role": {},
    }
    for p in w.people:
        surfaces["person"][p.name] = p.name
        surfaces["person"][p.formal] = p.name
    for pl in w.places:
        surfaces["place"][pl.name] = pl.name
    for g in w.organisations:
        surfaces["organisation"][f"{g.root} {g.kind}"] = g.name
    for a in w.artefacts:
        surfaces["artefact"][f"{a.root} {a.thing}"] = a.name
    for r in ROLES:
        surfaces["role"][r] = r
    positions: dict[str, tuple[list[int], list[str]]] = {}
    for kind, forms in surfaces.items():
        alternation = "|".join(re.escape(s) for s in sorted(forms, key=lambda s: (-len(s), s)))
        pattern = re.compile(r"\b(?:" + alternation + r")\b")
        offs, names = [], []
        for m in pattern.finditer(doc.text):
            offs.append(m.start())
            names.append(forms[m.group(0)])
        positions[kind] = (offs, names)
    for kind, pattern in (("year", YEAR_PATTERN), ("number", NUMBER_PATTERN)):
        offs, names = [], []
        for m in pattern.finditer(doc.text):
            offs.append(m.start())
            names.append(m.group(0))
        positions[kind] = (offs, names)
    index = _Index(surfaces, positions)
    _INDEX_CACHE.clear()  # one document at a time is enough for evaluation loops
    _INDEX_CACHE[id(doc)] = (doc, index)
    return index


def question_entities(doc: Document, question: str) -> list[str]:
    """Canonical names (and ID tokens) the question mentions, in order of appearance."""
    idx = _index(doc)
    found: list[tuple[int, str]] = [(m.start(), m.group(0)) for m in ID_PATTERN.finditer(question)]
    for kind in ("person", "place", "organisation", "artefact"):
        for surface, canon in idx.surfaces[kind].items():
            at = question.find(surface)
            if at >= 0 and re.search(r"\b" + re.escape(surface) + r"\b", question):
                found.append((at, canon))
    found.sort()
    out: list[str] = []
    for _, name in found:
        if name not in out:
            out.append(name)
    return out


def blind_answer(doc: Document, question: str) -> str:
    """The most mentioned entity of the asked-for type, without searching for evidence."""
    kind = infer_answer_type(question)
    _, names = _index(doc).positions[kind]
    if not names:
        return ""
    counts = Counter(names)
    return max(counts, key=lambda k: (counts[k], k))


def grep_answer(doc: Document, question: str, window: int = 600) -> str:
    """Regex for the question's first entity; vote over the nearest right-typed candidate."""
    kind = infer_answer_type(question)
    ents = question_entities(doc, question)
    if not ents:
        return ""
    key = ents[0]
    text = doc.text
    # Search every surface form of the key entity (full and formal name) like a careful grep.
    forms = [key]
    if key.startswith("the "):
        forms = [key[4:]]
    for p in doc.world.people:
        if p.name == key:
            forms.append(p.formal)
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(f) for f in forms) + r")\b")
    offs, names = _index(doc).positions[kind]
    votes: Counter[str] = Counter()
    excluded = set(ents)
    for m in pattern.finditer(text):
        at = m.start()
        i = bisect.bisect_left(offs, at)
        best, best_d = None, window + 1
        for j in range(max(0, i - 3), min(len(offs), i + 3)):
            d = abs(offs[j] - at)
            if d < best_d and names[j] not in excluded:
                best, best_d = names[j], d
        if best is not None:
            votes[best] += 1
    if not votes:
        return ""
    return max(votes, key=lambda k: (votes[k], k))
