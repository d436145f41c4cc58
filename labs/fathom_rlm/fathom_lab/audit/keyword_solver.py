"""A keyword solver: regexes and English cue words over the whole document, never `llm`.

It reads the document text directly (what a model could do with regexes in `repl`, without
output caps) and knows only generic English and what `train` documents look like, never the
generator's templates, tables or world:

* names by their shape (two capitalised words; "Master/Mistress" + family name), aliases from
  any sentence that names one person and ends in "called / known as / name ... the X", pronouns
  resolved to the previous sentence's subject;
* a relation lexicon written from English ("born", "taught", "made", "founded", "moved", ...)
  and a list of hearsay and negation cue words ("not", "never", "rumour", "denied", ...);
* word weights learned on `train`: the log-odds of a word in a supporting sentence against other
  sentences about the same name.

For a question it finds its names, scores every sentence about them that holds a candidate of
the asked type, and answers the best candidate; chains follow the first hop's answer; counts
add the scored sentences of the chapter range that name the town (`verdict_attacks.py`)."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS

from envtools import cli

if TYPE_CHECKING:
    from fathom_rlm.documents import TaskRecord

SENTENCE_STARTS = frozenset(
    re.findall(
        r"\w+",
        "The In By At On For From With Within When After Before Once Few Everyone It He She "
        "His Her They Their A An Master Mistress Chapter Of Sure Had Word Not Shortly Rain "
        "Fever As Some Nobody If What Which Who Whose Where Give How Since Between To",
    )
)
_ORG_WORDS = frozenset(
    re.findall(
        r"\w+",
        "Guild Company Society League Assembly Compact Exchange Syndicate Fellowship Trading House "
        "Lodge Brotherhood Order Union Club Board Council",
    )
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_NAME = re.compile(r"\b([A-Z][a-z]+) ([A-Z][a-z]+)\b")
_THING = re.compile(r"\bthe ([A-Z][a-z]+ [A-Z][a-z]+(?: [A-Z][a-z]+)?)\b")
_HONORIFIC = re.compile(r"\b(?:Master|Mistress) ([A-Z][a-z]+)\b")
YEAR = re.compile(r"\b1[5-9]\d\d\b")
_PLACE = re.compile(r"\b(?:in|to|at|of|from|near|into) ([A-Z][a-z]+)\b(?! [A-Z])")
_PRONOUN = re.compile(r"^(?:[A-Z][^,]*, )?(he|she|it|they)\b", re.I)
_WORD = re.compile(r"[a-z]+")
_ALIAS_CUE = re.compile(r"\b(?:called|known|name|dubbed|nicknamed|styled|went by|as)\b")
_ALIAS = re.compile(r"\b(the (?:[a-z-]+ ){0,3}[a-z-]+|the [A-Z][a-z]+)(?=[,.]|$)")
_CHAPTER = re.compile(r"Chapter (\d+)")

# Question classes by English keywords, first match wins.
_CLASSES = (
    ("birth", r"born|birth|native|origin|begin|into the world|came into"),
    ("teacher", r"teacher|taught|school|instructor|mentor|trained|apprentic|master who|tutor"),
    ("creator", r"creator|made|maker|shaped|craft|existence|artisan|fashion|built|forged|carved"),
    ("founder", r"found|convened|establish|set up|started|organis"),
    ("office", r"hall|office|based|seat|headquart|premises|governed"),
    ("residence", r"home|housed|live|resid|moved|address|towns|newcomer|settled|lodg|stay"),
    ("owner", r"whose|keeper|owned|hands|possess|held"),
)
# What a supporting sentence of each class says, in plain English.
LEXICON = {
    "birth": r"\bborn|birth|native|into the world|first light|cradle|baptis|christen",
    "teacher": r"learn|taught|train|apprentic|stud(?:y|ied)|under |school|pupil|instruct|mentor",
    "creator": r"\bmade|making|craft|built|fashion|forg|carv|shaped|wrought|work of|creat|maker",
    "founder": r"found|set up|establish|convened|started|formed|charter|creat|organis",
    "office": r"office|based|seat|headquart|govern|hall|run from|premises",
    "residence": r"moved|home|lodg|settled|rooms|house|resident|took up|roots|relocat|lived",
    "owner": r"hands|received|passed|gift|bought|inherit|belong|owned|acquir|keeping|came to",
}
# Hearsay, negation, plans and corrections: a sentence with one of these asserts nothing.
NEGATION_CUES = re.compile(
    r"\bnot\b|never|would have|had the money|\bif\b|rumou?r|claimed|swore|\blie\b|denied|struck|"
    r"error|retract|withdrawn|hoped|plan|intend|gossip|wrong|mistak|might|perhaps|suppos|alleg|"
    r"false|correct|\bor so\b|word went|talk of|\bsaid\b|dream|wish|meant to|almost|nearly|"
    r"missed|instead|rather than|\""
)
# Words English uses to take back what was just said (written from English, no generator table).
CORRECTION_CUES = re.compile(
    r"\bnot\b|n't\b|\bno\b|\bnone\b|nobody|no one|nothing|never|error|mistak|wrong|\bfalse|"
    r"untrue|retract|withdr|struck|strike|crossed|disprov|refut|debunk|spurious|forg[ea]|invent|"
    r"fabricat|baseless|unfounded|misprint|erratum|correct|amend|mended|put right|confus|muddle|"
    r"backwards|\bin fact\b|actually|\blie\b|\blies\b|\blied\b|fiction|myth|hoax|doubt|"
    r"denied|deny|rumou?r|gossip|invalid|void|erase|delet|expung|scratched|blot"
)
_ORDINALS = {
    w: i + 1 for i, w in enumerate(["first", "second", "third", "fourth", "fifth", "sixth"])
}
_TIMES = {
    w: i + 1
    for i, w in enumerate(["once", "twice", "three", "four", "five", "six", "seven", "eight"])
}


def question_class(question: str) -> str:
    q = question.lower()
    return next((name for name, pat in _CLASSES if re.search(pat, q)), "other")


def answer_kind(question: str) -> str:
    q = question.lower()
    if q.startswith("how many") or any(w in q for w in ("separate", "difference", "gap")):
        return "number"
    if "year" in q or "since when" in q:
        return "year"
    if any(w in q for w in ("town", "where", "birthplace", "place")):
        return "place"
    if any(w in q for w in ("item", "piece", "object")):
        return "artefact"
    return "person"


def question_names(question: str) -> list[str]:
    """The question's names in order: people ("A B") and things ("the A B" -> "A B")."""
    out = []
    for m in re.finditer(r"\bthe ([A-Z][a-z]+ [A-Z][a-z]+)|\b([A-Z][a-z]+ [A-Z][a-z]+)", question):
        if m.group(1):
            out.append(m.group(1))
        elif m.group(2).split()[0] not in SENTENCE_STARTS:
            out.append(m.group(2))
    return out


def _person_names(sentence: str) -> list[str]:
    return [
        m.group(0)
        for m in _NAME.finditer(sentence)
        if m.group(1) not in SENTENCE_STARTS and m.group(2) not in SENTENCE_STARTS
    ]


class Text:
    """A document split into sentences, with aliases and each sentence's subject."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sentences = [(m.start(), m.group().strip()) for m in _SENTENCE.finditer(text)]
        self.full_name: dict[str, str] = {}
        for name in _person_names(text):
            self.full_name.setdefault(name.split()[1], name)
        self.aliases: dict[str, str] = {}
        for _, s in self.sentences:
            cue = _ALIAS_CUE.search(s)
            alias = _ALIAS.search(s, cue.end()) if cue else None
            names = _person_names(s)
            if alias and len(names) == 1 and not re.search(r"\b(not|never|rumou?r|lie)\b", s):
                self.aliases[alias.group(1).lower()] = names[0]
        self._alias_keys = sorted(self.aliases, key=len, reverse=True)

    @cached_property
    def subjects(self) -> list[str | None]:
        """Each sentence's subject (a pronoun's is the previous one's), worked out on first use."""
        out: list[str | None] = []
        previous = None
        for _, s in self.sentences:
            subject = previous if _PRONOUN.match(s) else self.first_name(s)
            out.append(subject)
            previous = subject or previous
        return out

    def next_in_paragraph(self, i: int) -> str | None:
        """The sentence after sentence `i`, or None when `i` ends its paragraph (or the text)."""
        if i + 1 >= len(self.sentences):
            return None
        at, (next_at, following) = self.sentences[i][0], self.sentences[i + 1]
        # A sentence match stops at a line break, so one between them ends the paragraph.
        return None if "\n" in self.text[at:next_at] else following

    def canonical(self, surface: str | None) -> str | None:
        if surface is None:
            return None
        if surface.lower() in self.aliases:
            return self.aliases[surface.lower()]
        m = _HONORIFIC.fullmatch(surface)
        return self.full_name.get(m.group(1), surface) if m else surface

    def first_name(self, sentence: str) -> str | None:
        found: list[tuple[int, str]] = []
        for m in _NAME.finditer(sentence):
            if m.group(1) not in SENTENCE_STARTS and m.group(2) not in SENTENCE_STARTS:
                found.append((m.start(), m.group(0)))
                break
        found += [(m.start(), m.group(0)) for m in _HONORIFIC.finditer(sentence)][:1]
        found += [(m.start(), m.group(1)) for m in _THING.finditer(sentence)][:1]
        low = sentence.lower()
        found += [(low.find(a), a) for a in self._alias_keys if a in low][:1]
        return self.canonical(min(found)[1]) if found else None

    def forms(self, name: str) -> list[str]:
        parts = name.split()
        out = [name]
        if len(parts) == 2:
            out += [f"Master {parts[1]}", f"Mistress {parts[1]}"]
        return out + [a for a, full in self.aliases.items() if full == name]

    def about(self, name: str) -> Iterable[int]:
        forms = self.forms(name)
        for i, (_, s) in enumerate(self.sentences):
            low = s.lower()
            if self.subjects[i] == name or any(f in s or f in low for f in forms):
                yield i

    def candidates(self, kind: str, sentence: str) -> list[str]:
        if kind == "year":
            found = YEAR.findall(sentence)
        elif kind == "place":
            found = _PLACE.findall(sentence)
        elif kind == "artefact":
            found = ["the " + x for x in _THING.findall(sentence)]
        elif kind == "person":
            low = sentence.lower()
            found = [a for a in self._alias_keys if a in low]
            found += [n for n in _person_names(sentence) if n.split()[1] not in _ORG_WORDS]
            found += [m.group(0) for m in _HONORIFIC.finditer(sentence)]
        else:
            found = []
        return [c for c in (self.canonical(x) for x in found) if c]

    def hits(self, name: str, kind: str) -> Iterable[tuple[int, str, list[str]]]:
        """(index, sentence, candidates other than the name) of sentences about `name`."""
        for i in self.about(name):
            s = self.sentences[i][1]
            found = [c for c in self.candidates(kind, s) if c not in name and name not in c]
            if found:
                yield i, s, found


@dataclass
class WordWeights:
    """Log-odds of each frequent word in supporting sentences, per question class."""

    common: frozenset[str] = frozenset()
    positive: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    negative: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    sizes: Counter[tuple[str, bool]] = field(default_factory=Counter)

    def words(self, sentence: str) -> set[str]:
        return {w for w in _WORD.findall(sentence.lower()) if w in self.common}

    def add(self, cls: str, sentence: str, supporting: bool) -> None:
        (self.positive if supporting else self.negative)[cls].update(self.words(sentence))
        self.sizes[cls, supporting] += 1

    def weight(self, cls: str, word: str) -> float:
        pos, neg = self.positive[cls][word], self.negative[cls][word]
        if pos + neg < 8:
            return 0.0  # too rare to say anything
        p = (pos + 0.5) / (self.sizes[cls, True] + 1)
        n = (neg + 0.5) / (self.sizes[cls, False] + 1)
        return max(-3.0, min(3.0, math.log(p / n)))

    def score(self, cls: str, sentence: str) -> float:
        base = cls.split(":")[-1]
        low = sentence.lower()
        # Sorted: a set's order follows the string hash seed, and float sums follow the order.
        total = sum(self.weight(cls, w) for w in sorted(self.words(sentence)))
        if base in LEXICON and re.search(LEXICON[base], low):
            total += 6
        if NEGATION_CUES.search(low):
            total -= 8
        if base == "birth" and not YEAR.search(sentence):
            total -= 4  # a birth is told with its year
        return total


def learn(pairs: Iterable[tuple[str, TaskRecord]], max_rows: int = 500) -> WordWeights:
    """Word weights from `train` (text, row) pairs: a sentence about a question's name that
    lies in the row's evidence spans supports, any other one with a candidate does not."""
    pairs = list(pairs)
    words: Counter[str] = Counter()
    for text in dict.fromkeys(t for t, _ in pairs[:50]):
        words.update(re.findall(r"\b[a-z]+\b", text))
    model = WordWeights(common=frozenset(w for w, n in words.items() if n >= 30))
    texts: dict[int, Text] = {}
    for text, row in pairs[:max_rows]:
        if row.family == "exact_id":
            continue
        if id(text) not in texts:  # one Text per document, not per row
            texts[id(text)] = Text(text)
        doc = texts[id(text)]
        cls = question_class(row.question)
        label = cls if row.family == "single_hop" else f"{row.family}:{cls}"
        for name in question_names(row.question):
            for i, s, _ in doc.hits(name, answer_kind(row.question)):
                at = doc.sentences[i][0]
                inside = any(a - 2 <= at < b for a, b in row.spans)
                model.add(label, s, inside)
    return model


class KeywordSolver:
    """Answers fathom questions from the document text with `WordWeights` (see the module)."""

    def __init__(self, model: WordWeights) -> None:
        self.model = model

    def score(self, doc: Text, cls: str, i: int) -> float:
        """The score of sentence `i` for class `cls` (the word weights and cue words)."""
        return self.model.score(cls, doc.sentences[i][1])

    def _cls(self, cls: str) -> str:
        return cls if self.model.sizes[cls, True] >= 5 else "other"

    def hop(self, doc: Text, cls: str, name: str, kind: str) -> str | None:
        cls = self._cls(cls)
        scored = [
            (self.score(doc, cls, i), found[-1] if kind == "year" else found[0])
            for i, _, found in doc.hits(name, kind)
        ]
        best = max(scored, default=None, key=lambda x: x[0])
        return best[1] if best and best[0] > 0 else None

    def answer(self, text: Text, family: str, question: str) -> str | None:
        names = question_names(question)
        if not names:
            return None
        solve = {
            "single_hop": lambda: self.hop(
                text, question_class(question), names[0], answer_kind(question)
            ),
            "multi_hop": lambda: self.chain(text, question, names[0]),
            "comparison": lambda: self.compare(text, question, names),
            "temporal": lambda: self.history_answer(text, question, names),
            "aggregation": lambda: self.count(text, question),
        }.get(family)
        return solve() if solve else None

    def chain(self, doc: Text, question: str, name: str) -> str | None:
        sep = "whoever" if "whoever" in question else "'s "
        outer, inner = question.split(sep, 1) if sep in question else (question, question)
        middle = doc.canonical(self.hop(doc, question_class(inner), name, "person"))
        if not middle:
            return None
        return self.hop(doc, question_class(outer), middle, answer_kind(outer))

    def compare(self, doc: Text, question: str, names: list[str]) -> str | None:
        if len(names) < 2:
            return None
        q = question.lower()
        founded = any(w in q for w in ("existed", "found", "since", "establish", "start"))
        years = [self.hop(doc, "other" if founded else "birth", n, "year") for n in names[:2]]
        if None in years:
            return None
        a, b = (int(y) for y in years)  # type: ignore[arg-type]
        return str(abs(a - b)) if answer_kind(question) == "number" else str(min(a, b))

    def history_answer(self, doc: Text, question: str, names: list[str]) -> str | None:
        q = question.lower()
        owner = "whose" in q or "keeper" in q
        cls = self._cls("temporal:owner" if owner else "temporal:residence")
        seen = [
            doc.canonical(found[0])
            for i, _, found in doc.hits(names[0], "person" if owner else "place")
            if self.score(doc, cls, i) > 0
        ]
        history = [x for i, x in enumerate(seen) if i == 0 or x != seen[i - 1]]
        if not history:
            return None
        m = re.search(r"(?:prior to|before|preceding) ([A-Z][a-z]+)", question)
        target = names[1] if len(names) > 1 else (m.group(1) if m else None)
        if target in history:
            i = history.index(target)
            return history[i - 1] if i > 0 else None
        k = next((v for w, v in _ORDINALS.items() if w in q), None)
        times = re.search(r"(\w+) times", q)
        if times and times.group(1) in _TIMES:
            k = _TIMES[times.group(1)]
        return history[min(k, len(history) - 1)] if k is not None else history[-1]

    def count(self, doc: Text, question: str) -> str | None:
        numbers = [int(x) for x in re.findall(r"\d+", question)]
        towns = [w for w in re.findall(r"\b([A-Z][a-z]+)\b", question) if w not in SENTENCE_STARTS]
        if len(numbers) < 2 or not towns:
            return None
        starts = {int(m.group(1)): m.start() for m in _CHAPTER.finditer(doc.text)}
        a, b = starts.get(numbers[0], 0), starts.get(numbers[1] + 1, len(doc.text))
        town = re.compile(rf"\b{towns[-1]}\b")
        cls = self._cls("temporal:residence")
        n = sum(
            1
            for i, (at, s) in enumerate(doc.sentences)
            if a <= at < b and town.search(s) and self.score(doc, cls, i) > 0
        )
        return str(n)


@lru_cache(maxsize=2)
def split_pairs(split: str, doc_tokens: int) -> tuple[tuple[str, TaskRecord], ...]:
    """(document text, row) of every row of `split`, each document generated once (the last
    two kept: an attack learns on `train` and answers one split)."""
    from fathom_rlm.documents import split_tasks

    tasks = split_tasks(split, doc_tokens=doc_tokens)  # type: ignore[arg-type]
    return tuple((doc.text, task.record(doc)) for doc, task in tasks)


def accuracy_by_family(
    split: str = "heldout", doc_tokens: int = 200_000, limit: int | None = None
) -> dict[str, float]:
    """Learn on `train` at `doc_tokens`, answer every question of `split` (the first `limit`
    rows when given); mean correctness per family (the gold check of the environment:
    `matches_gold` with the row's aliases)."""
    train = split_pairs("train", doc_tokens)
    return solve_split(KeywordSolver(learn(train)), split, doc_tokens, limit)


def solve_split(
    solver: KeywordSolver, split: str, doc_tokens: int, limit: int | None = None
) -> dict[str, float]:
    """Mean correctness per family of `solver` over `split` (its first `limit` rows)."""
    from fathom_rlm.documents import matches_gold

    texts: dict[int, Text] = {}
    right: dict[str, list[bool]] = defaultdict(list)
    for text, row in split_pairs(split, doc_tokens)[:limit]:
        if row.seed not in texts:  # one Text per document, not per row
            texts[row.seed] = Text(text)
        doc = texts[row.seed]
        guess = solver.answer(doc, row.family, row.question)
        ok = guess is not None and matches_gold(guess, row.answer, row.aliases)
        right[row.family].append(ok)
    return {family: sum(v) / len(v) for family, v in sorted(right.items())}


def build_parser() -> cli.ArgumentParser:
    prog = "python -m fathom_lab.audit.keyword_solver"
    parser = cli.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="heldout", choices=("train", "eval", "heldout"))
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=200_000)
    return parser


if __name__ == "__main__":
    import json

    args = build_parser().parse_args()
    print(json.dumps(accuracy_by_family(args.split, args.doc_tokens), indent=1))
