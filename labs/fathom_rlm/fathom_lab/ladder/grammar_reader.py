"""A perfect reader of the grammar: the facts a text states, read from that text alone.

:func:`read_facts` inverts the relation grammar of every split. Each sentence is cut into
``[prefix][front adverbial, ]core[ end adverbial][suffix].``; the core is matched against the
verb phrases compiled to regular expressions with named slots. A sentence is a fact only when
its prefix is a plain framing (or absent), it has no distractor suffix and its verb is in the
simple past: negated, planned, hypothetical, rumoured, corrected and quoted sentences yield
nothing. A pronoun subject is resolved from the antecedent sentence right before it, an alias
from its introduction earlier in the same text; when that sentence is not part of the text, the
fact is returned with ``resolved=False`` and the pronoun or alias as written.

A verdict (verdicts.py in the generator: "The registrar upheld the entry; later, the assizes
overturned the ruling.") settles the statement right before it: one whose signs multiply to a
minus, as that one's do, cancels it, so a plain false statement followed by its verdict reads as
nothing. A text that holds the statement but not the verdict after it (cut between the two)
reads the statement as a fact, as a reader of that text alone must; both sentences always sit
in one paragraph, so a text cut at paragraph breaks never splits them.

:func:`read_verdict` reads a verdict on its own. A reader given ``verdict_splits`` knows the
verdict parts of those splits only: a verdict it cannot parse is to it an ordinary sentence, so
the statement before it stands (what a reader that learned its verdicts from `train` makes of
`heldout`'s).
"""

from __future__ import annotations

import bisect
import math
import re
from functools import lru_cache

from fathom_rlm.documents.facts import Fact, Span
from fathom_rlm.documents.filler_tables import ACTIVITIES, FILLER
from fathom_rlm.documents.grammar import (
    ADVERBIALS,
    DISTRACTOR_WRAPPERS,
    PERSON_SLOTS,
    RELATION_SLOTS,
    SPLITS,
    TIMED,
    VerbPhrase,
    deal,
    split_grammar,
)
from fathom_rlm.documents.grammar_tables import ASIDES, EPITHET_ADJECTIVES, EPITHET_NOUNS
from fathom_rlm.documents.verdicts import verdict_parts
from fathom_rlm.documents.world import NICKNAMES, ORG_KINDS, ROLES, THINGS


def _alt(words) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_NAME = r"(?:(?:Mistress|Master) [A-Z][a-z]+|(?!The )[A-Z][a-z]+ [A-Z][a-z]+)"
_ALIAS = (
    rf"(?:[Tt]he (?:(?:{_alt(EPITHET_ADJECTIVES)}) (?:{_alt(EPITHET_NOUNS)})"
    rf"|{_alt(n[4:] for n in NICKNAMES)}))"
)
_PRONOUN = r"(?:[Ss]he|[Hh]e)"
_ORGANISATION = rf"[Tt]he [A-Z][a-z]+ (?:{_alt(ORG_KINDS)})"
_ARTEFACT = rf"[Tt]he [A-Z][a-z]+ (?:{_alt(THINGS)})"
SLOT_PATTERNS = {
    "S": rf"(?:{_NAME}|{_ALIAS}|{_PRONOUN})",
    "P": r"[A-Z][a-z]+",
    "G": rf"(?:{_ORGANISATION}|[Ii]t)",
    "R": rf"an? (?:{_alt(ROLES)})",
    "O": rf"(?:{_ARTEFACT}|[Ii]t)",
    "ID": r"[A-Z]{2}-\d{4}",
    "Y4": r"\d{4}",
}
for _slot in PERSON_SLOTS:
    SLOT_PATTERNS[_slot] = SLOT_PATTERNS["S"]
_SLOT = re.compile(r"\{(\w+)\}")
_MODALS = sorted(
    {f.split(":")[1] for ws in DISTRACTOR_WRAPPERS.values() for _, _, f in ws if ":" in f}
)
_PLAN = _alt(m for m in _MODALS if m.split()[0] not in ("would", "might"))
_HYP = _alt(m for m in _MODALS if m.split()[0] in ("would", "might"))


def _ci(literal: str) -> str:
    """``literal`` as a regex whose first letter matches either case (sentence starts)."""
    if not literal or not literal[0].isalpha():
        return re.escape(literal)
    return f"[{literal[0].upper()}{literal[0].lower()}]" + re.escape(literal[1:])


def _template_regex(template: str, first_ci: bool = True, named: bool = True) -> str:
    """A template's literals escaped and its ``{X}`` slots as (named) slot patterns."""
    out, pos = [], 0
    for m in _SLOT.finditer(template):
        lit = template[pos : m.start()]
        out.append(_ci(lit) if first_ci and pos == 0 else re.escape(lit))
        pattern = SLOT_PATTERNS.get(m[1], _NAME if m[1] == "N" else _ALIAS)
        out.append(f"(?P<{m[1]}>{pattern})" if named else f"(?:{pattern})")
        pos = m.end()
    out.append(_ci(template[pos:]) if first_ci and pos == 0 else re.escape(template[pos:]))
    return "".join(out)


def _vp_regex(vp: VerbPhrase) -> re.Pattern:
    if vp.is_be:
        neg = f"{re.escape(vp.past)} (?:not|never)"
    else:
        neg = f"did not {re.escape(vp.base)}|never {re.escape(vp.past)}"
    verb = (
        f"(?:(?P<v_past>{re.escape(vp.past)})|(?P<v_neg>{neg})"
        f"|(?P<v_plan>(?:{_PLAN}) {re.escape(vp.base)})"
        f"|(?P<v_hyp>(?:{_HYP}) {re.escape(vp.pp)}))"
    )
    pre = _template_regex(vp.pre) if vp.pre else ""
    return re.compile(pre + verb + _template_regex(vp.post, first_ci=False))


_STOP = frozenset(
    ["to", "in", "of", "as", "the", "a", "an", "at", "from", "with", "on", "for", "its", "and"]
)
SENTENCE = re.compile(r"[^\s.][^.\n]*\.")
_HEADER = re.compile(r"^Chapter (\d+): [^\n]*\n([A-Z][a-z]+ \d{4})$", re.M)


class CompiledGrammar:
    """The grammar of some splits compiled for reading (all splits for :func:`read_facts`)."""

    def __init__(self, splits: tuple[str, ...], verdict_splits: tuple[str, ...]) -> None:
        grammars = [split_grammar(split) for split in splits]
        self.verdict_signs, self.verdict = _verdict_reader(verdict_splits)
        self.vps = [
            vp
            for g in grammars
            for table in (g.verb_phrases, g.initial_phrases)
            for group in table.values()
            for vp in group
        ]
        frames = [f for g in grammars for f in g.frames if f]
        wrappers = [w for g in grammars for ws in g.wrappers.values() for w in ws]
        self.fact_prefixes = frozenset(f.lower() for f in frames)
        self.index = self._index()
        self.layers = self._layers(frames, wrappers)
        activities = [t for split in splits for t in deal(ACTIVITIES, split)]
        alts = [_template_regex(t.replace("{S}", "{N}"), named=False) for t in activities]
        # One capturing group per alternative for the person: every activity names them once.
        alts = [a.replace(f"(?:{_NAME})", f"({_NAME})", 1) for a in alts]
        self.antecedents = {"S": re.compile("|".join(f"(?:{a})" for a in alts))}
        # Objects and organisations: a filler sentence naming only that one thing.
        for slot, kind, pattern in (("O", "object", _ARTEFACT), ("G", "org", _ORGANISATION)):
            templates = [t for split in splits for t in deal(FILLER[kind], split)]
            regexes = [
                _template_regex(t, named=False).replace(
                    f"(?:{SLOT_PATTERNS[slot]})", f"({pattern})"
                )
                for t in templates
            ]
            self.antecedents[slot] = re.compile("|".join(f"(?:{r})" for r in regexes))
        intros = [t for g in grammars for t in g.intros]
        self.intros = [re.compile(_template_regex(t) + r"\.") for t in intros]

    def _index(self) -> dict[str, list[tuple[VerbPhrase, re.Pattern]]]:
        """Lowercase key word -> verb phrases whose every form contains it (a prefilter)."""

        def literal_words(vp: VerbPhrase) -> set[str]:
            words = _SLOT.sub(" ", vp.pre + " " + vp.post).lower().split()
            return {w for w in words if w not in _STOP}

        df: dict[str, int] = {}
        for vp in self.vps:
            for word in literal_words(vp):
                df[word] = df.get(word, 0) + 1
        index: dict[str, list[tuple[VerbPhrase, re.Pattern]]] = {}
        for vp in self.vps:
            words = literal_words(vp)
            if words:
                keys = [min(words, key=lambda w: (df[w], -len(w), w))]
            else:
                keys = [vp.past, vp.base, vp.pp]
            entry = (vp, _vp_regex(vp))
            for key in dict.fromkeys(keys):
                index.setdefault(key, []).append(entry)
        return index

    @staticmethod
    def _layers(frames: list[str], wrappers: list[tuple[str, str, str]]) -> re.Pattern:
        prefixes = sorted({*frames, *(p for p, _, _ in wrappers if p)}, key=len, reverse=True)
        suffixes = sorted({s for _, s, _ in wrappers if s}, key=len, reverse=True)
        pre = "|".join(_template_regex(p, named=False) for p in prefixes)
        suf = "|".join(_template_regex(s, first_ci=False, named=False) for s in suffixes)
        adv, aside = _alt(ADVERBIALS), _alt(ASIDES)
        fadv = "|".join(_ci(a) for a in sorted((*ADVERBIALS, *ASIDES), key=len, reverse=True))
        return re.compile(
            rf"(?:(?P<pre>{pre}))?(?:(?P<fadv>{fadv}), )?(?P<core>.+?)"
            rf"(?: (?:{adv})|, (?:{aside}))?(?:(?P<suf>{suf}))?\."
        )

    def antecedent_name(self, slot: str, sentence: str) -> str | None:
        """Who or what ``sentence`` names, when it is an antecedent for a ``slot`` pronoun."""
        m = self.antecedents["S" if slot in PERSON_SLOTS else slot].fullmatch(sentence)
        if m is None:
            return None
        name = next(g for g in m.groups() if g is not None)
        return name if slot in PERSON_SLOTS else _norm_alias(name)


@lru_cache(maxsize=4)
def compiled_grammar(
    splits: tuple[str, ...], verdict_splits: tuple[str, ...] | None = None
) -> CompiledGrammar:
    return CompiledGrammar(splits, splits if verdict_splits is None else verdict_splits)


def _verdict_reader(splits: tuple[str, ...]) -> tuple[dict[str, int], re.Pattern]:
    """(sign of each verdict part, the pattern of a whole verdict) for ``splits``' parts."""
    slots: dict[str, list[str]] = {s: [] for s in ("who", "verb", "what", "then", "court", "end")}
    signs: dict[str, int] = {}
    for split in splits:
        p = verdict_parts(split)
        for slot, plus, minus in (
            ("who", p.sources, p.nobodies),
            ("verb", p.backing, p.rejecting),
            ("what", p.claims, p.doubts),
            ("then", p.then, ()),
            ("court", p.courts, ()),
            ("end", p.outcomes, p.challenges),
        ):
            slots[slot] += (*plus, *minus)
            signs.update({**dict.fromkeys(plus, 1), **dict.fromkeys(minus, -1)})

    def group(name: str, slot: str) -> str:
        words = sorted(slots[slot], key=len, reverse=True)  # "No one in the town" before "No one"
        return f"(?P<{name}>{'|'.join(map(re.escape, words)) or '(?!)'})"

    pattern = (
        f"{group('who', 'who')} {group('verb', 'verb')} {group('what', 'what')}; "
        f"{group('then', 'then')}, {group('court', 'court')} {group('verb2', 'verb')} "
        f"{group('end', 'end')}\\."
    )
    return signs, re.compile(pattern)


def read_verdict(sentence: str, splits: tuple[str, ...] = SPLITS) -> bool | None:
    """Whether the verdict ``sentence`` lets the statement before it stand; None when it is no
    verdict of ``splits``' parts."""
    grammar = compiled_grammar(tuple(splits), tuple(splits))
    return _verdict_of(grammar, sentence)


def _verdict_of(grammar: CompiledGrammar, sentence: str) -> bool | None:
    m = grammar.verdict.fullmatch(sentence)
    if m is None:
        return None
    signs = grammar.verdict_signs
    return math.prod(signs[m[slot]] for slot in ("who", "verb", "what", "verb2", "end")) > 0


def _norm_alias(surface: str) -> str:
    """First letter lowercased: "The Heron" -> "the Heron", "She" -> "she"."""
    return surface[:1].lower() + surface[1:]


def read_facts(
    text: str,
    *,
    splits: tuple[str, ...] = SPLITS,
    verdict_splits: tuple[str, ...] | None = None,
) -> list[Fact]:
    """The facts ``text`` states on its own, in text order (see the module docstring).

    ``verdict_splits`` (default ``splits``) are the splits whose verdict parts the reader knows.
    ``splits`` restricts the reader to the shapes of those splits: a reader that knows only the
    train shapes is what a pattern list tuned on train would be.
    """
    grammar = compiled_grammar(
        tuple(splits), None if verdict_splits is None else tuple(verdict_splits)
    )
    headers = [(m.start(), m.end(), int(m[1]), m[2]) for m in _HEADER.finditer(text)]
    header_starts = [h[0] for h in headers]
    aliases: dict[str, tuple[str, Span]] = {}
    facts: list[Fact] = []
    prev: tuple[int, str] | None = None  # (end, text) of the previous sentence
    for m in SENTENCE.finditer(text):
        sentence, start, end = m.group(), m.start(), m.end()
        verdict = _verdict_of(grammar, sentence)
        if verdict is not None:
            # A verdict settles the statement right before it (same paragraph, one space).
            if (
                not verdict
                and facts
                and prev is not None
                and prev[0] + 1 == start
                and text[prev[0]] == " "
                and facts[-1].sentence == (prev[0] - len(prev[1]), prev[0])
            ):
                facts.pop()
            prev = (end, sentence)
            continue
        intro = _read_intro(grammar, sentence)
        if intro is not None:
            aliases[_norm_alias(intro[1])] = (intro[0], (start, end))
        else:
            antecedent = None
            if prev is not None and prev[0] + 1 == start and text[prev[0]] == " ":
                antecedent = (prev[1], (start - 1 - len(prev[1]), prev[0]))
            found = _statement(grammar, sentence)
            if found is not None:
                i = bisect.bisect_right(header_starts, start) - 1
                heading = headers[i][2:] if i >= 0 and headers[i][1] <= start else (None, None)
                span = (start, end)
                facts.append(_resolve(grammar, *found, span, antecedent, aliases, heading))
        prev = (end, sentence)
    return facts


# Documents are read again and again (slice by slice, rollout after rollout), so what one
# sentence says on its own, before its context, is worked out once per distinct sentence.
_SENTENCE_CACHE = 1 << 14


@lru_cache(maxsize=_SENTENCE_CACHE)
def _read_intro(grammar: CompiledGrammar, sentence: str) -> tuple[str, str] | None:
    for pattern in grammar.intros:
        m = pattern.fullmatch(sentence)
        if m is not None:
            return m["N"], m["K"]
    return None


@lru_cache(maxsize=_SENTENCE_CACHE)
def _statement(
    grammar: CompiledGrammar, sentence: str
) -> tuple[VerbPhrase, dict[str, str | None]] | None:
    """The verb phrase and slots of the relation a sentence asserts, or None (no relation, or
    a relation's shape that does not assert it)."""
    layers = grammar.layers.fullmatch(sentence)
    if layers is None:
        return None
    core = layers["core"]
    index = grammar.index
    seen: set[int] = set()
    for word in core.lower().split():
        for vp, pattern in index.get(word, ()):
            if id(vp) in seen:
                continue
            seen.add(id(vp))
            m = pattern.fullmatch(core)
            if m is None:
                continue
            pre = layers["pre"]
            plain = pre is None or pre.lower() in grammar.fact_prefixes
            if layers["suf"] or m["v_past"] is None or not plain:
                return None  # a relation's shape that does not assert it
            return vp, m.groupdict()
    return None


def _resolve(grammar: CompiledGrammar, vp, m, span, antecedent, aliases, heading) -> Fact:
    """The fact of a matched statement, with pronouns and aliases resolved where the text
    allows (else ``resolved=False`` and the surface as written), and its chapter and date
    when ``heading`` has them."""
    subject_slot, value_slot, detail_slot = RELATION_SLOTS[vp.relation]
    spans: list[Span] = [span]
    surfaces: dict[str, str] = {}
    resolved = True
    for slot in (subject_slot, value_slot):
        text = m[slot]
        low = text.lower()
        known: tuple[str, Span] | None = None
        if low in ("she", "he", "it"):
            if antecedent is not None and slot == subject_slot:
                name = grammar.antecedent_name(slot, antecedent[0])
                known = None if name is None else (name, antecedent[1])
        elif slot in PERSON_SLOTS and low.startswith("the "):
            known = aliases.get(_norm_alias(text))
        elif slot not in ("G", "O"):
            surfaces[slot] = text
            continue
        else:
            surfaces[slot] = _norm_alias(text)
            continue
        if known is None:
            resolved = False
            surfaces[slot] = _norm_alias(text)
        else:
            surfaces[slot] = known[0]
            spans.append(known[1])
    detail = m[detail_slot] if detail_slot else None
    if detail_slot == "R":
        detail = detail.split(" ", 1)[1]
    return Fact(
        vp.relation,
        surfaces[subject_slot],
        surfaces[value_slot],
        detail,
        *heading,
        tuple(sorted(set(spans))),
        change=vp.relation in TIMED and not vp.initial,
        resolved=resolved,
    )


def read_aliases(text: str, *, splits: tuple[str, ...] = SPLITS) -> list[tuple[str, str, Span]]:
    """Every alias introduction in ``text``: (full name, alias with a lowercase "the", span of
    the introducing sentence), in text order."""
    grammar = compiled_grammar(tuple(splits))
    out = []
    for m in SENTENCE.finditer(text):
        intro = _read_intro(grammar, m.group())
        if intro is not None:
            out.append((intro[0], _norm_alias(intro[1]), (m.start(), m.end())))
    return out
