"""The generic slice reader: what the scripted reference reads on text it has no grammar for.

The slice reader (`reader`) understands only the generator's question grammar and sentence
shapes; on a user's own document it would answer every sub-call "not found". When a run is on
user rows (`reading_any_text()`), a question the grammar does not parse goes to this reader
instead. It is deliberately simple, a word-overlap baseline and no model: it returns the
sentences of its text that share the most content words with the question (as evidence a
caller can pass on), and, asked to conclude, pulls an answer of the asked kind out of the best
of them (a number, a year, else the capitalised words the question does not contain). A choice
question is read by its options instead: the passage where an option stands among the most
words of the question gives the letter. Like the slice reader it sees only its prompt.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator

from fathom_rlm.userdata.grading import answer_instruction

from fathom_lab.ladder.protocol import NOT_FOUND, partial_answer, search_terms, split_prompt

__all__ = [
    "content_terms",
    "read_any_text",
    "read_by_overlap",
    "reading_any_text",
    "split_instruction",
]

_ANY_TEXT: contextvars.ContextVar[bool] = contextvars.ContextVar("any_text", default=False)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|\n|$)")
_SENTENCE_HEAD = re.compile(r"[^.!?]*[.!?]*")
_STOP = frozenset(
    re.findall(
        r"\w+",
        "a an the of to in on at by for from with and or but not no is are was were be been "
        "being do does did has have had it its this that these those what which who whom whose "
        "where when why how many much there their they them he she his her him i you we our as "
        "into than then so if all any each more most some such only own same other about after "
        "before answer letter choice number year item items separated commas right text question",
    )
)
_KINDS = ("number", "year", "list", "choice")
_MAX_QUOTES = 2


@contextlib.contextmanager
def reading_any_text() -> Iterator[None]:
    """Within this context (and tasks started in it) the reference reads questions its grammar
    does not parse with the overlap reader."""
    token = _ANY_TEXT.set(True)
    try:
        yield
    finally:
        _ANY_TEXT.reset(token)


def read_any_text() -> bool:
    return _ANY_TEXT.get()


def split_instruction(question: str) -> tuple[str, str]:
    """(the question without its answer line, the answer kind that line asks for, "text")."""
    for kind in _KINDS:
        line = answer_instruction(kind)
        if question.rstrip().endswith(line):
            return question.rstrip()[: -len(line)].rstrip(), kind
    return question, "text"


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP and len(w) > 1}


def _body(question: str) -> str:
    """The question without its answer line and without the choices of a choice question."""
    return re.split(r"\n\s*\(?[A-D]\)", split_instruction(question)[0])[0]


def content_terms(question: str, n: int = 3) -> list[str]:
    """Words to grep for in any text: up to two names of the question, then its longest
    content words, `n` in all; a choice question adds the longest word of each choice that no
    other choice has (the passage that settles it names its option)."""
    body = _body(question)
    words = sorted(dict.fromkeys(w for w in _WORD.findall(body) if w.lower() not in _STOP))
    words.sort(key=len, reverse=True)
    names = [t for t in search_terms(body) if t.lower() not in _STOP]
    terms = list(dict.fromkeys([*names[:2], *(w for w in words if len(w) > 3)]))[:n]
    options = [max(own, key=len) for own in _option_words(question).values() if own]
    return list(dict.fromkeys([*terms, *options]))


def _best_sentences(question: str, text: str) -> list[str]:
    asked = _words(question)
    sentences = [" ".join(m.group(0).split()) for m in _SENTENCE.finditer(text[:200_000])]
    sentences = [s for s in sentences if s]
    scored = []
    for i, sentence in enumerate(sentences):
        hits = len(asked & _words(sentence))
        if hits and len(sentence) >= 10:
            # With the sentence after it: the answer often follows ("He did it to ...").
            after = sentences[i + 1] if i + 1 < len(sentences) else ""
            scored.append((-hits, i, f"{sentence} {after}".strip()))
    if not scored:
        return []
    best = -min(s[0] for s in scored)
    # One shared word is chance when the question has several to share.
    if best < min(2, len(asked)):
        return []
    # Only the best-sharing sentences, each ending in a full stop so that quotes joined by a
    # caller stay sentences apart (a heading has none).
    top = [s for hits, _, s in sorted(scored) if -hits == best][:_MAX_QUOTES]
    return [s if s[-1] in ".!?" else s + "." for s in top]


def _choices(question: str) -> dict[str, str]:
    """The options of a choice question, one a line: "(B) text", "B) text" or "B. text"."""
    option = r"^\s*\(?([A-Z])[).]\s*(.+)$"
    return {m.group(1): m.group(2) for m in re.finditer(option, question, re.M)}


def _stem(word: str) -> str:
    """A word without a plural "s", so that "hedgehogs" meets "hedgehog"."""
    word = word.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _option_words(question: str) -> dict[str, list[str]]:
    """Each option's content words (as written) that the question's body and the other options
    lack: what tells it from the others."""
    options = {
        k: [w for w in _WORD.findall(t) if w.lower() not in _STOP]
        for k, t in _choices(question).items()
    }
    asked = {_stem(w) for w in _words(_body(question))}
    own: dict[str, list[str]] = {}
    for letter, words in options.items():
        others = {_stem(w) for k, ws in options.items() if k != letter for w in ws}
        own[letter] = [w for w in dict.fromkeys(words) if _stem(w) not in others | asked]
    return own


_AROUND, _NEAR = 40, 4  # words either side: a passage, and the words next to an option's


def _choice_passages(question: str, text: str) -> list[tuple[int, int, str, str]]:
    """Where the text names an option: (question words around it, question words next to it,
    the letter, the passage), best first. The passage is the 40 words either side of one of
    the option's own words, and must hold every word of the option; the question's words around
    it, then next to it, tell the passage that answers from one that merely names the same
    thing."""
    asked = {_stem(w) for w in _words(_body(question))}
    options = {k: {_stem(w) for w in _words(t)} for k, t in _choices(question).items()}
    own = {k: {_stem(w) for w in ws} for k, ws in _option_words(question).items() if ws}
    spans = [m.span() for m in _WORD.finditer(text[:200_000])]
    stems = [_stem(text[a:b]) for a, b in spans]
    found = []
    for i, word in enumerate(stems):
        for letter, option in own.items():
            if word not in option:
                continue
            lo, hi = max(0, i - _AROUND), min(len(stems), i + _AROUND + 1)
            around = set(stems[lo:hi])
            if options[letter] <= around:
                near = set(stems[max(0, i - _NEAR) : i + _NEAR + 1])
                passage = " ".join(text[spans[lo][0] : spans[hi - 1][1]].split())
                found.append((len(around & asked), len(near & asked), letter, passage))
    found.sort(key=lambda f: (-f[0], -f[1], f[2]))
    return found


# Books write their numbers in words.
_UNITS = (
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen"),
    *("eighteen", "nineteen"),
)
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_NUMBER_WORDS = {w: i for i, w in enumerate(_UNITS)} | {w: 20 + 10 * i for i, w in enumerate(_TENS)}
_NUMBER_WORD = re.compile(
    r"\b(?:(?:%s)(?:[- ](?:%s))*(?: hundred(?: and)?(?: (?:%s)(?:[- ](?:%s))?)?)?)\b"
    % (("|".join(_NUMBER_WORDS),) * 4),
    re.IGNORECASE,
)


def _number_value(words: str) -> int:
    """ "fifteen" -> 15, "forty-two" -> 42, "five hundred and six" -> 506."""
    total = 0
    for part in re.split(r"[- ]+", words.lower()):
        if part == "hundred":
            total = max(total, 1) * 100
        elif part in _NUMBER_WORDS:
            total += _NUMBER_WORDS[part]
    return total


def _numbers(text: str) -> list[str]:
    """The numbers of a text in order, written in digits or in words."""
    digits = r"-?\d[\d,]*(?:\.\d+)?"
    found = re.finditer(rf"{digits}|{_NUMBER_WORD.pattern}", text, re.IGNORECASE)
    values = [m.group(0) for m in found]
    return [v.rstrip(",") if v[0] in "-0123456789" else str(_number_value(v)) for v in values]


def _extract(question: str, kind: str, quotes: list[str]) -> str:
    text = " ".join(quotes)
    if kind == "choice":
        choices = _choices(question)
        said = _words(text)
        scored = sorted((-len(_words(t) & said), letter) for letter, t in choices.items())
        return scored[0][1] if scored and scored[0][0] < 0 else NOT_FOUND
    if kind == "year":
        asked = set(re.findall(r"\b\d{3,4}\b", question))
        found = [x for x in re.findall(r"\b\d{3,4}\b", text) if x not in asked]
        return found[0] if found else NOT_FOUND
    if kind == "number":
        asked = set(_numbers(question))
        found = [x for x in _numbers(text) if x not in asked]
        return found[0] if found else NOT_FOUND
    asked = _words(question)
    # The best sentences themselves first, then the sentences that follow them.
    heads = " ".join(_SENTENCE_HEAD.match(q).group(0) for q in quotes)  # type: ignore[union-attr]

    def names(part: str) -> list[str]:
        runs = re.findall(r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*", part)
        return [r for r in runs if not (_words(r) & asked) and r.lower() not in _STOP]

    if kind == "list":
        # "... handled timber, salt fish, wool and slate": the words of a series.
        series = re.search(r"([\w' -]+(?:, [\w' -]+)+,? (?:and|or) [\w' -]+)", text)
        if series:
            items = re.split(r",? (?:and|or) |, ", series.group(1))
            items[0] = items[0].split()[-1]
            return ", ".join(i.strip() for i in items if i.strip())
        return ", ".join(dict.fromkeys(names(text))) or NOT_FOUND
    fresh = names(heads)
    if fresh:
        return fresh[0]
    # No new name: the last word of a best sentence the question does not have ("... is
    # juniper.").
    new = [w for w in _WORD.findall(heads) if w.lower() not in _STOP | asked]
    return new[-1] if new else (names(text) or [NOT_FOUND])[0]


def read_by_overlap(prompt: str, text: str, *, complete: bool = False) -> str:
    """The overlap reader's answer to `prompt` about `text`: with `complete` an answer of the
    asked kind from the best sentences; otherwise those sentences as evidence (`partial |
    evidence: ...`), or "not found" when no sentence shares enough words with the question."""
    question, _known = split_prompt(prompt)
    body, kind = split_instruction(question)
    if kind == "choice" and _option_words(body):
        return _read_choice(body, text, complete=complete)
    quotes = _best_sentences(_body(question), text)
    if not quotes:
        return NOT_FOUND
    if complete:
        return _extract(body, kind, quotes)
    return partial_answer(quotes, [])


def _read_choice(question: str, text: str, *, complete: bool) -> str:
    """A choice question: the passages that name an option, among the question's words; asked
    to conclude, the option of the best one (none when the text names no option near a word of
    the question)."""
    passages = [p for p in _choice_passages(question, text) if p[0] > 0]
    if not passages:
        return NOT_FOUND
    if complete:
        return passages[0][2]
    quote = passages[0][3]  # one: quotes add up in the prompts of the sub-calls after it
    return partial_answer([quote if quote[-1] in ".!?" else quote + "."], [])
