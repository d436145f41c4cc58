"""The compositional grammar of relation sentences, and the filler templates, dealt to the splits.

A relation sentence is composed from independent choices: a verb phrase of its relation (with
its own clause order), a framing, a time adverbial and its placement (front, end or none), and
the form of the subject (name, formal name, pronoun after an antecedent, alias introduced
elsewhere). Hard negatives reuse the same verb phrases under a distractor wrapper (negated,
planned and cancelled, rumoured and denied, corrected, hypothetical, quoted) or state a plain
fact about a near-namesake.

Each list of the tables is dealt to ``train`` / ``eval`` / ``heldout`` round-robin, so the
splits share no verb phrase, framing, adverbial, wrapper, alias introduction or filler template
(:func:`split_tables`). The split of a document is a function of its seed
(:func:`split_of_seed`); seeds outside every split use the train subset. :func:`shape_counts`
reports how many shapes each split has per relation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, cached_property

from .filler_tables import FILLER, TITLE_PATTERNS
from .grammar_tables import (
    ADVERBIALS,
    ALIAS_INTROS,
    ASIDES,
    DISTRACTOR_WRAPPERS,
    FACT_FRAMES,
    INITIAL_VERB_PHRASES,
    VERB_PHRASES,
)
from .seeds import split_of_seed

SPLITS = ("train", "eval", "heldout")
RELATIONS = tuple(VERB_PHRASES)
DISTRACTOR_KINDS = (*DISTRACTOR_WRAPPERS, "namesake")
# Relation -> (subject slot, value slot, detail slot or None).
RELATION_SLOTS: dict[str, tuple[str, str, str | None]] = {
    "residence": ("S", "P", None),
    "employment": ("S", "G", "R"),
    "owner": ("O", "Y", None),
    "maker": ("O", "M", None),
    "mentor": ("S", "M", None),
    "birth": ("S", "P", "Y4"),
    "founding": ("G", "F", "Y4"),
    "seat": ("G", "P", None),
    "permit": ("S", "ID", None),
    "mark": ("O", "ID", None),
}
PERSON_SLOTS = frozenset({"S", "Y", "M", "F", "X"})
# Relations that happen at a time take time adverbials ("that month"); the others take asides
# ("for the record"), placed at the front or, after a comma, at the end.
TIMED = frozenset({"residence", "employment", "owner"})
# "meant to be born" says nothing sensible; births have no planned distractor.
NO_PLANNED = frozenset({"birth"})
# Relations that hold once per subject and are asked by reading questions (IDs are matched
# exactly, not read): each needle of these brings false statements in its own
# shapes, each cancelled by the verdict after it (so no cue word sits in the statement); the
# true statement's verdict lets it stand (verdicts.py).
RETRACTED = frozenset({"birth", "mentor", "maker", "founding", "seat"})

_VP = re.compile(
    r"^(?P<pre>.*?)\[(?P<past>[^/\]]+)/(?P<base>[^/\]]+)/(?P<pp>[^/\]]+)\](?P<post>.*)$"
)
_SLOT = re.compile(r"\{(\w+)\}")


def deal(items: tuple, split: str) -> tuple:
    """The items of ``split``: index mod 3 gives train, eval, heldout."""
    k = SPLITS.index(split)
    return tuple(x for i, x in enumerate(items) if i % 3 == k)


def grammar_split(seed: int) -> str:
    """The split whose shapes a document of ``seed`` is rendered with."""
    return split_of_seed(seed) or "train"


def to_mapping(template: str) -> str:
    """``{X}`` slots as ``%(X)s`` (``%`` with a dict is about twice as fast as ``format``)."""
    return _SLOT.sub(r"%(\1)s", template.replace("%", "%%"))


@dataclass(frozen=True)
class VerbPhrase:
    relation: str
    index: int  # position in VERB_PHRASES[relation]; the split is index mod 3
    pre: str
    past: str
    base: str
    pp: str
    post: str
    initial: bool = False  # an initial-state phrase ("lived in"), not a change ("moved to")

    @cached_property
    def tag(self) -> str:
        """Its part of a shape id: ``vp3`` (change or timeless fact) or ``ivp3`` (initial)."""
        return f"ivp{self.index}" if self.initial else f"vp{self.index}"

    @property
    def is_be(self) -> bool:
        return self.base == "be"

    @cached_property
    def subject_first(self) -> bool:
        """The core opens with the relation's subject, so the subject may be a pronoun."""
        return self.pre == "{" + RELATION_SLOTS[self.relation][0] + "} "

    def verb(self, form: str) -> str:
        """The verb group for a form: PAST, NOT, NEVER, PLAN:<modal>, HYP:<modal>."""
        if form == "PAST":
            return self.past
        if form == "NOT":
            return f"{self.past} not" if self.is_be else f"did not {self.base}"
        if form == "NEVER":
            return f"{self.past} never" if self.is_be else f"never {self.past}"
        kind, _, modal = form.partition(":")
        return f"{modal} {self.base}" if kind == "PLAN" else f"{modal} {self.pp}"

    def core(self, form: str = "PAST") -> str:
        return self.pre + self.verb(form) + self.post

    def slots(self) -> tuple[str, ...]:
        return tuple(_SLOT.findall(self.pre + self.post))


def _parse_vp(relation: str, index: int, text: str, initial: bool = False) -> VerbPhrase:
    m = _VP.match(text)
    if m is None:
        raise ValueError(f"verb phrase without [past/base/pp]: {text!r}")
    return VerbPhrase(relation, index, m["pre"], m["past"], m["base"], m["pp"], m["post"], initial)


ALL_VERB_PHRASES: dict[str, tuple[VerbPhrase, ...]] = {
    rel: tuple(_parse_vp(rel, i, t) for i, t in enumerate(ts)) for rel, ts in VERB_PHRASES.items()
}
ALL_INITIAL_PHRASES: dict[str, tuple[VerbPhrase, ...]] = {
    rel: tuple(_parse_vp(rel, i, t, initial=True) for i, t in enumerate(ts))
    for rel, ts in INITIAL_VERB_PHRASES.items()
}


@dataclass(frozen=True)
class SplitGrammar:
    """The shapes one split renders with."""

    split: str
    verb_phrases: dict[str, tuple[VerbPhrase, ...]]
    initial_phrases: dict[str, tuple[VerbPhrase, ...]]  # residence, employment, owner
    frames: tuple[str, ...]  # "" first
    adverbials: tuple[str, ...]
    asides: tuple[str, ...]
    wrappers: dict[str, tuple[tuple[str, str, str], ...]]
    intros: tuple[str, ...]

    def distractor_kinds(self, relation: str) -> tuple[str, ...]:
        return tuple(k for k in DISTRACTOR_KINDS if not (k == "planned" and relation in NO_PLANNED))

    def modifiers(self, relation: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """(shape tag, the split's phrases, all phrases) of the relation's adverbials."""
        if relation in TIMED:
            return "adv", self.adverbials, ADVERBIALS
        return "aside", self.asides, ASIDES

    def phrases(self, relation: str, initial: bool = False) -> tuple[VerbPhrase, ...]:
        return self.initial_phrases[relation] if initial else self.verb_phrases[relation]

    def fact_shapes(self, relation: str, initial: bool = False) -> list[str]:
        """Shape ids of plain statements: verb phrase x framing x adverbial placement (the
        front only without a framing)."""
        tag, mine, every = self.modifiers(relation)
        out = []
        for vp in self.phrases(relation, initial):
            for frame in self.frames:
                f = FACT_FRAMES.index(frame) if frame else -1
                places = ("front", "end") if not frame else ("end",)
                out.append(f"{relation}/{vp.tag}/frame{f}/{tag}-none")
                for adv in mine:
                    a = every.index(adv)
                    out.extend(f"{relation}/{vp.tag}/frame{f}/{tag}-{p}{a}" for p in places)
        return out

    def distractor_shapes(self, relation: str, initial: bool = False) -> list[str]:
        """Shape ids of hard negatives: verb phrase x wrapper (namesakes use the fact shapes)."""
        out = []
        for vp in self.phrases(relation, initial):
            for kind in self.distractor_kinds(relation):
                if kind == "namesake":
                    continue
                for prefix, suffix, form in self.wrappers[kind]:
                    w = DISTRACTOR_WRAPPERS[kind].index((prefix, suffix, form))
                    out.append(f"{relation}/{vp.tag}/{kind}{w}")
            if relation in RETRACTED and not initial:
                out.append(f"{relation}/{vp.tag}/retracted")
        return out


@cache
def split_grammar(split: str) -> SplitGrammar:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}")
    return SplitGrammar(
        split=split,
        verb_phrases={rel: deal(vps, split) for rel, vps in ALL_VERB_PHRASES.items()},
        initial_phrases={rel: deal(vps, split) for rel, vps in ALL_INITIAL_PHRASES.items()},
        frames=("", *deal(FACT_FRAMES, split)),
        adverbials=deal(ADVERBIALS, split),
        asides=deal(ASIDES, split),
        wrappers={kind: deal(ws, split) for kind, ws in DISTRACTOR_WRAPPERS.items()},
        intros=deal(ALIAS_INTROS, split),
    )


def split_tables(split: str) -> dict[str, tuple[str, ...]]:
    """The split's filler templates in ``%`` form, keyed by kind."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}")
    return {kind: tuple(to_mapping(t) for t in deal(ts, split)) for kind, ts in FILLER.items()}


def filler_shapes(split: str) -> list[str]:
    """Shape ids of the split's filler templates and chapter titles."""
    out = []
    for kind, templates in (*FILLER.items(), ("title", TITLE_PATTERNS)):
        out.extend(f"filler/{kind}/{templates.index(t)}" for t in deal(templates, split))
    return out


def shape_counts() -> dict[str, dict[str, dict[str, int]]]:
    """split -> relation -> {"fact": n, "distractor": n}, plus split -> "filler" -> kind -> n.

    The initial states of residence, employment and ownership are counted under
    ``"<relation> (initial)"``.
    """
    out: dict[str, dict[str, dict[str, int]]] = {}
    for split in SPLITS:
        g = split_grammar(split)
        per = {}
        for rel in RELATIONS:
            for initial in (False, True) if rel in ALL_INITIAL_PHRASES else (False,):
                name = f"{rel} (initial)" if initial else rel
                per[name] = {
                    "fact": len(g.fact_shapes(rel, initial)),
                    "distractor": len(g.distractor_shapes(rel, initial)),
                }
        per["filler"] = {}
        for shape in filler_shapes(split):
            kind = shape.split("/")[1]
            per["filler"][kind] = per["filler"].get(kind, 0) + 1
        out[split] = per
    return out


def shape_ids(split: str) -> frozenset[str]:
    """Every shape id the split may render (relation facts, distractors, filler, intros)."""

    g = split_grammar(split)
    ids: set[str] = set(filler_shapes(split))
    for rel in RELATIONS:
        for initial in (False, True) if rel in ALL_INITIAL_PHRASES else (False,):
            ids.update(g.fact_shapes(rel, initial))
            ids.update(g.distractor_shapes(rel, initial))
    ids.update(f"intro/{ALIAS_INTROS.index(t)}" for t in g.intros)
    return frozenset(ids)
