"""The slice reader: a scripted stand-in for the model as a reader of the text it was handed.

It answers a sub-question from the facts a perfect reader takes from that text alone (the
generator's grammar reader, `read_facts`) and from the quotes its caller passed down under "Known
so far:" (they are text in its prompt too). It understands the question through the question
grammar (`parse_question`). It never consults the gold, the task row, the world or any text
outside its prompt.

It is a perfect grammar reader, not a model: it knows the statement shapes and the verdict parts
of every split, `heldout`'s included, so it tells a one-off statement that stands from a
retracted one on any split's wording. What it scores is an upper bound on what the environment
pays an honest reader, not an estimate of what a model earns. Given `verdict_splits=("train",)`
it knows only `train`'s verdict parts (statements are still read with every split's shapes): a
verdict of another split is an ordinary sentence to it, so every retracted statement stands, as
it would for a reader that learned its verdicts from `train` alone.

* the facts settle the question: the answer;
* a count: the number of counted facts in its text (a partial count for one section);
* facts that bear on the question but do not settle it: `partial | next: <name> | evidence:
  <quote> || <quote>` (the quotes are the sentences that state those facts, so a caller can pass
  them on; `next` names the person a chain continues with);
* otherwise: `not found`.

A state question ("after the k-th move") is only settled once the caller says it has read all
there is (`complete=True`): a slice cannot know whether earlier moves happened outside it.
"""

from __future__ import annotations

import re
from typing import Any

from fathom_rlm.documents import QuestionParseError, parse_question
from fathom_rlm.documents.grammar import RETRACTED

from fathom_lab.ladder.answering import CHAIN_STEPS, answer_from_facts, count_from_facts, next_hop
from fathom_lab.ladder.grammar_reader import read_aliases, read_facts
from fathom_lab.ladder.overlap_reader import read_any_text, read_by_overlap
from fathom_lab.ladder.protocol import NOT_FOUND, partial_answer, split_prompt

_SETTLED_ONLY_WHEN_COMPLETE = frozenset({"temporal"})
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]")
# The relations each kind of question reads (chains take theirs from the question grammar).
_READS = {
    "home_after_moves": ("residence",),
    "home_before_town": ("residence",),
    "owner_before_person": ("owner",),
    "owner_after_transfers": ("owner",),
    "employer_after_changes": ("employment",),
    "post_after_changes": ("employment",),
    "older_birth_year": ("birth",),
    "younger_birth_year": ("birth",),
    "age_gap": ("birth",),
    "older_org_year": ("founding",),
    "org_year_gap": ("founding",),
    "permit_holder": ("permit",),
    "marked_object": ("mark",),
}


def required_depth(question: str) -> int:
    """The recursion depth the question's family needs, read off its wording (1 if it does
    not parse)."""
    try:
        return int(parse_question(question).depth)
    except QuestionParseError:
        return 1


def reads_whole_history(question: str) -> bool:
    """A state question needs every fact of its subject's history, not the first one found."""
    try:
        return parse_question(question).family in _SETTLED_ONLY_WHEN_COMPLETE
    except QuestionParseError:
        return False


def drop_cut_statements(facts: list[Any], text: str) -> list[Any]:
    """A plain statement of a one-off relation (birth, teacher, maker, founding, seat) may be
    contested: then it is followed, in its paragraph, by its verdict, which may cancel it ("The
    registrar upheld the entry; later, the assizes overturned the ruling."). Such a statement
    that ends a piece of `text` (a window cut after it: a line break that is no paragraph break,
    or the end of the text) was read without what follows it, so it settles nothing and is
    dropped; the same statement read in the windows of its own subject's name comes with the
    sentences after it."""

    def followed(fact: Any) -> bool:
        end = fact.sentence[1]
        return end < len(text) and (text[end] == " " or text.startswith("\n\n", end))

    return [f for f in facts if f.relation not in RETRACTED or followed(f)]


def _key(name: str) -> str:
    """A person by family name (unique within a world), an object or organisation ("the ...")
    by its whole name."""
    words = name.split()
    if words and words[0].lower() == "the":
        return " ".join(words[1:]).lower()
    return words[-1].lower() if words else ""


def _relevant(
    fact: Any, names: set[str], relations: frozenset[str], token: str | None = None
) -> bool:
    """A fact of a relation the question reads, about a name it follows (or holding its ID)."""
    if relations and fact.relation not in relations:
        return False
    return _key(fact.subject) in names or (token is not None and fact.value == token)


def _relations(relation: str) -> frozenset[str]:
    steps = CHAIN_STEPS.get(relation, ())
    return frozenset(r for r, _ in steps) | frozenset(_READS.get(relation, ()))


def _alias_intros(text: str) -> list[tuple[str, str, str]]:
    """(name, alias, introducing sentence) for every alias introduction in `text`, read with
    the generator's grammar reader."""
    return [(name, alias, text[a:b]) for name, alias, (a, b) in read_aliases(text)]


def _aliases(text: str, names: set[str]) -> list[tuple[str, str, str]]:
    """(alias, introducing sentence, name key) for every alias `text` gives one of `names`: a
    reader who meets "they spoke of X as the Pike" knows to look for "the Pike" too."""
    return [
        (alias, sentence, _key(name))
        for name, alias, sentence in _alias_intros(text)
        if _key(name) in names
    ]


def _merge_adjacent(spans: Any) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and start - out[-1][1] <= 1:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _known_text(known: str) -> str:
    """The quotes of a "Known so far" block as one text (one quote per line, in order)."""
    lines = (line.strip() for line in known.splitlines())
    # Joined by spaces, as sentences of one paragraph: a pronoun quote follows the quote of its
    # antecedent, so the grammar reader resolves it as it would in the document.
    return " ".join(line[2:] for line in lines if line.startswith("- "))


def _covered(intent: Any, facts: list[Any], names: set[str], relations: frozenset[str]) -> set[str]:
    """The followed names the facts at hand already cover (an alias of any other is a lead)."""
    steps = CHAIN_STEPS.get(intent.relation)
    if steps:
        # A name of a chain is covered only by a fact of its own step: the named person's
        # birth does not say who taught them, and the teaching may be stated under an alias.
        covered: set[str] = set()
        frontier = {_key(e) for e in intent.entities()}
        for relation, _field in steps:
            hits = [f for f in facts if f.relation == relation and _key(f.subject) in frontier]
            covered |= {_key(f.subject) for f in hits}
            frontier = {_key(f.value) for f in hits}
        return covered
    if intent.family in _SETTLED_ONLY_WHEN_COMPLETE:
        return set()  # a history needs the facts stated under every name
    return {_key(f.subject) for f in facts if _relevant(f, names, relations, intent.token)}


def read_slice(
    prompt: str,
    text: str,
    *,
    complete: bool = False,
    verdict_splits: tuple[str, ...] | None = None,
) -> str:
    """The reader's answer to `prompt` about `text` (see the module docstring). `complete`
    says the caller has read all there is, so the facts at hand must settle it;
    `verdict_splits` (default: every split) are the splits whose verdicts it can read."""
    question, known = split_prompt(prompt)
    try:
        intent = parse_question(question)
    except QuestionParseError:
        # On user rows, text without the generator's grammar: the generic overlap reader.
        return read_by_overlap(prompt, text, complete=complete) if read_any_text() else NOT_FOUND
    if intent.family == "aggregation":
        return str(count_from_facts(intent, read_facts(text, verdict_splits=verdict_splits)))
    # One text: every alias introduction first (an alias is read only after it was introduced,
    # and a passed-down quote may use an alias this text introduces), then the passed-down
    # quotes, then its own text; facts keep story order and spans stay comparable.
    passed = _known_text(known)
    intros = " ".join(sentence for _, _, sentence in _alias_intros(f"{passed}\n\n{text}"))
    head = "\n\n".join(part for part in (intros, passed) if part)
    offset = len(head) + 2 if head else 0
    whole = f"{head}\n\n{text}" if head else text
    facts = read_facts(whole, verdict_splits=verdict_splits) if whole.strip() else []
    facts = drop_cut_statements(facts, whole)
    answer = answer_from_facts(intent, facts)
    if answer and (complete or intent.family not in _SETTLED_ONLY_WHEN_COMPLETE):
        return str(answer)
    asked = {_key(e) for e in intent.entities()}
    next_name = next_hop(intent, facts)
    if next_name and (_key(next_name) in asked or next_name in passed):
        # Still about the named entity, or a lead the caller already followed: the entity
        # stays one to collect facts (and aliases) about, but it is no new lead.
        asked.add(_key(next_name))
        next_name = None
    names = asked | ({_key(next_name)} if next_name else set())
    names.discard("")
    relations = _relations(intent.relation)
    # Follow the chain through the facts at hand: a fact about a followed name makes its value
    # a followed name too (the maker of the object, then the maker's teacher, ...).
    for _ in range(3):
        grown = names | {
            _key(f.value) for f in facts if f.relation in relations and _key(f.subject) in names
        }
        if grown == names:
            break
        names = grown
    quotes: list[str] = []
    for fact in facts:
        if fact.spans[-1][0] < offset or not _relevant(fact, names, relations, intent.token):
            continue  # a fact of the passed-down quotes, or one that does not bear on it
        # The sentences the fact rests on: an antecedent and its pronoun sentence stay one
        # quote (the pronoun is read through the sentence before it); an alias introduction,
        # which can lie far away, is a quote of its own.
        for start, end in _merge_adjacent(fact.spans):
            quote = " ".join(whole[start:end].split())
            if start >= offset and quote and quote not in quotes and quote not in passed:
                quotes.append(quote)
    # An alias of a name it is looking for, and found no fact about, is a lead too: the caller
    # searches whichever lead it has not searched yet.
    covered = _covered(intent, facts, names, relations)
    leads = [next_name] if next_name else []
    for alias, sentence, _owner in _aliases(text, names - covered):
        quote = " ".join(sentence.split())
        if quote in passed:
            continue
        quotes.append(quote)
        if alias not in leads:
            leads.append(alias)
    if not quotes and not leads:
        return NOT_FOUND
    return partial_answer(quotes, leads)
