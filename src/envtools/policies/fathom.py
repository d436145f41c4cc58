"""Scripted fathom-rlm policies: an honest reference RLM and the attacks of the reward audit.

Every policy works from the messages of one request alone: it tells its role from the system
prompt's role line (root agent, sub-call agent with tools, plain reader without tools), re-reads
its own earlier tool calls and their outputs to know where it is, and keeps no other state.

**Perfect reader, and where its knowledge comes from.** A script cannot read prose, so the
reference policy is given one honest superpower: a role may answer from the world state, but only
from the evidence it was actually shown. It finds the task by the question text (a `TaskIndex` of
rows, filled with `register_tasks(rows)` or, for the standard splits, by regenerating them with
`fathom_rlm.documents.build_split`), regenerates the document, and takes the task's supporting
spans. A span counts as read only if its exact text is inside the text that role was shown (its
slice, or the outputs of its own `repl` calls) or is quoted in its prompt under "Known so far:"
(knowledge a caller passed down). Then:

* every span read: the gold answer;
* aggregation: the number of supporting spans inside its text (a partial count per section);
* some new spans read: `partial | next: <name> | evidence: <quote> || <quote>` (the quotes carry
  the knowledge upward; `next` names the entity a multi-hop chain continues with);
* otherwise: `not found`.

The root never looks at spans or gold to decide where to look: it searches with regexes for the
names (or ID tokens, or chapter numbers) written in the question, reads packs of windows around the
hits with `llm` (by `start:end` range, or by a REPL variable when a pack joins several windows),
follows `next` names for multi-hop chains, and for aggregation sends each section of the asked
chapter range to a sub-call that itself asks a plain reader (depth 2), then sums the counts.

The attack policies reuse that machinery: some do the honest work and then break the answer's
format (copy the question, pad it, list candidates, write two answer blocks, go over length);
others replace the work (no tools, a majority guess, flooding REPL output, recursion spam,
probing the sandbox for the gold).
"""

from __future__ import annotations

import contextlib
import json
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fathom_rlm.agent import prompts
from fathom_rlm.documents import get_document, normalize_answer
from fathom_rlm.documents.world import ORG_KINDS, THINGS

from envtools.policies.base import ChatResult, Policy

NOT_FOUND = prompts.NOT_FOUND
KNOWN_HEADER = "Known so far:"
PARTIAL = "partial"
GIVE_UP = "unknown"

_ID_TOKEN = re.compile(r"\b[A-Z]{2}-\d{4}\b")
_CHAPTERS = re.compile(r"chapters?\s+(\d+)\s+(?:to|and)\s+(?:chapter\s+)?(\d+)", re.IGNORECASE)
_CAPITAL_RUN = re.compile(r"[A-Z][a-z]+(?:'s)?(?:\s+[A-Z][a-z]+(?:'s)?)*")
_QUESTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        "In Which What Who Whom Whose Where When How Name Give Of Once After From To Across For "
        "Before During The A An Chapter",
    )
)
_KIND_WORDS = frozenset(w for name in (*THINGS, *ORG_KINDS) for w in name.split())
_WINDOW = 350  # characters read on each side of a search hit
_OVERLAP = 300  # chunk overlap, longer than any supporting sentence


# ------------------------------------------------------------------------------ task index


@dataclass
class TaskIndex:
    """Question text -> task row, for the perfect reader (never used to decide where to look)."""

    autoload_splits: tuple[str, ...] = ("eval", "train")
    """Standard splits regenerated (once, at their default length) on the first unknown question."""
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    _loaded: bool = False

    def register(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.rows[_question_key(row["question"])] = row

    def lookup(self, question: str) -> dict[str, Any] | None:
        key = _question_key(question)
        if key not in self.rows and not self._loaded and self.autoload_splits:
            self._loaded = True
            from fathom_rlm.documents import build_split

            for split in self.autoload_splits:
                self.register(build_split(split))  # type: ignore[arg-type]
        return self.rows.get(key)


def _question_key(question: str) -> str:
    return " ".join(question.split())


TASKS = TaskIndex()
register_tasks = TASKS.register


# -------------------------------------------------------------------------- perfect reader


def compose_prompt(question: str, quotes: list[str]) -> str:
    if not quotes:
        return question
    return question + "\n" + KNOWN_HEADER + "\n" + "\n".join(f"- {q}" for q in quotes)


def split_prompt(prompt: str) -> tuple[str, str]:
    """(question, text of the "Known so far" block)."""
    head, _, known = prompt.partition("\n" + KNOWN_HEADER)
    return head.strip(), known


def _next_entity(row: dict[str, Any], span: list[int]) -> str | None:
    """The person a multi-hop chain reaches through the hop whose evidence is `span`."""
    document = get_document(int(row["seed"]), int(row["doc_tokens"]))
    key = next((k for k, s in document.spans.items() if list(s) == list(span)), None)
    if key is None:
        return None
    kind, subject, _ = key
    world = document.world
    if kind == "maker":
        return world.people[world.artefacts[subject].maker].name
    if kind == "founding":
        return world.people[world.organisations[subject].founder].name
    if kind == "mentor":
        mentor = world.people[subject].mentor
        return None if mentor is None else world.people[mentor].name
    return None


def perfect_read(prompt: str, shown: str, index: TaskIndex = TASKS) -> str:
    """What a perfect reader of `shown` answers to `prompt` (see the module docstring)."""
    question, known_text = split_prompt(prompt)
    row = index.lookup(question)
    if row is None:
        return NOT_FOUND
    text = get_document(int(row["seed"]), int(row["doc_tokens"])).text
    spans = [list(s) for s in row["spans"]]
    quotes = [text[s:e] for s, e in spans]
    in_shown = [q in shown for q in quotes]
    if row["family"] == "aggregation":
        return str(sum(in_shown))
    in_known = [q in known_text for q in quotes]
    known = [a or b for a, b in zip(in_shown, in_known, strict=True)]
    if row["family"] == "multi_hop":
        before, after = _prefix(in_known), _prefix(known)
        if after == len(quotes):
            return str(row["answer"])
        if after > before:
            return _partial(quotes[before:after], _next_entity(row, spans[after - 1]))
        return NOT_FOUND
    if all(known):
        return str(row["answer"])
    new = [q for q, a, b in zip(quotes, in_shown, in_known, strict=True) if a and not b]
    return _partial(new, None) if new else NOT_FOUND


def _prefix(flags: list[bool]) -> int:
    n = 0
    while n < len(flags) and flags[n]:
        n += 1
    return n


def _partial(quotes: list[str], next_name: str | None) -> str:
    parts = [PARTIAL]
    if next_name:
        parts.append(f"next: {next_name}")
    parts.append("evidence: " + " || ".join(quotes))
    return " | ".join(parts)


@dataclass
class SubAnswer:
    """A sub-call's reply as the root understands it."""

    final: str | None = None
    next_name: str | None = None
    quotes: list[str] = field(default_factory=list)


def parse_sub_answer(text: str) -> SubAnswer:
    text = text.strip()
    if not text or text.startswith(("Error:", "(the sub-call")) or text == NOT_FOUND:
        return SubAnswer()
    if not text.startswith(PARTIAL):
        return SubAnswer(final=text)
    out = SubAnswer()
    for part in text.split(" | ")[1:]:
        if part.startswith("next: "):
            out.next_name = part[len("next: ") :].strip()
        elif part.startswith("evidence: "):
            out.quotes = [q for q in part[len("evidence: ") :].split(" || ") if q]
    return out


# -------------------------------------------------------------------------- transcript view


@dataclass
class _Call:
    name: str
    args: dict[str, Any]
    output: str


@dataclass
class _View:
    """What a role can know from its messages."""

    system: str
    user: str
    calls: list[_Call]
    turns: int

    @classmethod
    def of(cls, messages: list[dict[str, Any]]) -> _View:
        system = next((m.get("content") or "" for m in messages if m["role"] == "system"), "")
        user = next((m.get("content") or "" for m in messages if m["role"] == "user"), "")
        outputs = {
            m.get("tool_call_id"): m.get("content") or "" for m in messages if m["role"] == "tool"
        }
        calls: list[_Call] = []
        turns = 0
        for m in messages:
            if m["role"] != "assistant":
                continue
            turns += 1
            for c in m.get("tool_calls") or ():
                fn = c.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                if isinstance(args, dict):
                    calls.append(_Call(fn.get("name") or "", args, outputs.get(c.get("id"), "")))
        return cls(system, user, calls, turns)

    def number(self, pattern: str, default: int) -> int:
        m = re.search(pattern, self.system)
        return int(m.group(1).replace(",", "")) if m else default

    @property
    def question(self) -> str:
        text = self.user
        if text.startswith(prompts.QUESTION_PREFIX):
            text = text[len(prompts.QUESTION_PREFIX) :]
        return text.partition(prompts.TEXT_PREFIX)[0]

    @property
    def doc_chars(self) -> int:
        return self.number(r"`doc`: ([\d,]+) characters", 0)

    @property
    def max_turns(self) -> int:
        return self.number(r"You have (\d+) turns", 4)

    @property
    def slice_cap(self) -> int:
        return self.number(r"At most ([\d,]+) characters \(about", 12_000)

    @property
    def output_cap(self) -> int:
        return self.number(r"Output beyond ([\d,]+) characters", 4_000)


def _message(content: str | None = None, calls: list[tuple[str, dict[str, Any]]] = ()) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [
            {
                "id": f"call_{zlib.crc32(json.dumps([name, args]).encode()):08x}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ]
    return msg


def _answer(text: str) -> dict[str, Any]:
    return _message(f"<answer>{text}</answer>")


# ------------------------------------------------------------------------- question parsing


def search_terms(question: str) -> list[str]:
    """Distinctive words to grep for: a person's family name, an object's or body's root word,
    a lone place name. Question words and the generic kind words are skipped."""
    terms: list[str] = []
    for run in _CAPITAL_RUN.findall(question):
        words = [w.removesuffix("'s") for w in run.split()]
        while words and words[0] in _QUESTION_WORDS:
            words = words[1:]
        if not words:
            continue
        # "the Trothox Sextant" -> "Trothox"; "Nestor Zatei" -> "Zatei"; "Denhan" -> "Denhan".
        thing = words[-1] in _KIND_WORDS and words[0] not in _KIND_WORDS
        term = words[0] if thing else words[-1]
        if term not in terms and term not in _KIND_WORDS:
            terms.append(term)
    return terms


def _windows(offsets: list[int], doc_chars: int, cap: int) -> list[tuple[int, int]]:
    """Merged windows around hits, each at most `cap` characters (long runs are cut, with
    overlap so no sentence is split across every piece)."""
    merged: list[list[int]] = []
    for h in sorted(offsets):
        a, b = max(0, h - _WINDOW), min(doc_chars, h + _WINDOW)
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out: list[tuple[int, int]] = []
    for a, b in merged:
        while b - a > cap:
            out.append((a, a + cap))
            a += cap - _OVERLAP
        out.append((a, b))
    return out


def _packs(windows: list[tuple[int, int]], cap: int) -> list[list[tuple[int, int]]]:
    packs: list[list[tuple[int, int]]] = []
    size = 0
    for w in windows:
        length = w[1] - w[0] + 1
        if packs and size + length <= cap:
            packs[-1].append(w)
            size += length
        else:
            packs.append([w])
            size = length
    return packs


def _pack_spec(pack: list[tuple[int, int]]) -> str:
    if len(pack) == 1:
        return f"{pack[0][0]}:{pack[0][1]}"
    return f"pack_{pack[0][0]}_{pack[-1][1]}_{len(pack)}"


def _pack_code(pack: list[tuple[int, int]]) -> str:
    parts = ", ".join(f"doc[{a}:{b}]" for a, b in pack)
    return f"{_pack_spec(pack)} = '\\n'.join([{parts}])\nprint(len({_pack_spec(pack)}))"


# --------------------------------------------------------------------------- the reference


class FathomReference:
    """The honest reference RLM (see the module docstring)."""

    name = "fathom-reference"

    def __init__(self, index: TaskIndex | None = None) -> None:
        self.index = index or TASKS

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ChatResult:
        view = _View.of(messages)
        if view.system.startswith(prompts.ROOT_ROLE):
            return ChatResult(self.root(view))
        if view.system.startswith(prompts.SUB_ROLE) and tools:
            return ChatResult(self.sub_agent(view))
        return ChatResult(self.plain_reader(view))

    # -- roles ---------------------------------------------------------------------------

    def plain_reader(self, view: _View) -> dict[str, Any]:
        prompt, _, text = view.user.removeprefix(prompts.QUESTION_PREFIX).partition(
            prompts.TEXT_PREFIX
        )
        return _answer(perfect_read(prompt, text, self.index))

    def sub_agent(self, view: _View) -> dict[str, Any]:
        prompt = view.user.removeprefix(prompts.QUESTION_PREFIX)
        question, _ = split_prompt(prompt)
        if _CHAPTERS.search(question):
            # A count over a section bigger than one printout: hand the section to a reader.
            if not view.calls:
                code = f"print(llm({json.dumps(prompt)}, doc))"
                return _message(calls=[("repl", {"code": code})])
            return _answer(view.calls[-1].output.strip().splitlines()[-1] if view.calls else "0")
        # Otherwise read the text by printing it in overlapping chunks, then answer.
        chunk = max(1_000, view.output_cap - 200)
        starts = list(range(0, max(1, view.doc_chars), chunk - _OVERLAP))
        shown = "\n".join(c.output for c in view.calls if c.name == "repl")
        result = perfect_read(prompt, shown, self.index) if view.calls else NOT_FOUND
        done = len([c for c in view.calls if c.name == "repl"])
        final_turn = view.turns + 1 >= view.max_turns
        if parse_sub_answer(result).final or done >= len(starts) or final_turn:
            return _answer(result)
        start = starts[done]
        return _message(calls=[("repl", {"code": f"print(doc[{start}:{start + chunk}])"})])

    def root(self, view: _View) -> dict[str, Any]:
        question = view.question
        if view.turns + 1 >= view.max_turns:
            return self.final(view, self.best_answer(view) or GIVE_UP)
        token = _ID_TOKEN.search(question)
        if token:
            return self.root_exact(view, token.group(0))
        chapters = _CHAPTERS.search(question)
        if chapters:
            return self.root_aggregate(view, int(chapters.group(1)), int(chapters.group(2)))
        return self.root_search_read(view)

    # -- root strategies -----------------------------------------------------------------

    def root_exact(self, view: _View, token: str) -> dict[str, Any]:
        if not view.calls:
            code = (
                f"# exact {token}\nfor m in re_finditer({json.dumps(re.escape(token))}, doc):\n"
                "    print(doc[max(0, m[0] - 300):m[1] + 300])"
            )
            return _message(calls=[("repl", {"code": code})])
        shown = "\n".join(c.output for c in view.calls)
        result = parse_sub_answer(perfect_read(view.question, shown, self.index))
        return self.final(view, result.final or GIVE_UP)

    def root_aggregate(self, view: _View, first: int, last: int) -> dict[str, Any]:
        if not view.calls:
            pattern = "'(?m)^Chapter \\\\d+:'"
            code = f"# chapters\nprint(to_json([m[0] for m in re_finditer({pattern}, doc)]))"
            return _message(calls=[("repl", {"code": code})])
        try:
            starts = json.loads(view.calls[0].output)
        except ValueError:
            return self.final(view, GIVE_UP)
        bounds = [*starts, view.doc_chars]
        first, last = max(1, first), min(len(starts), last)
        sections: list[tuple[int, int]] = []
        for c in range(first - 1, last):
            a, b = bounds[c], bounds[c + 1]
            if sections and b - sections[-1][0] <= view.slice_cap:
                sections[-1] = (sections[-1][0], b)
            else:
                while b - a > view.slice_cap:  # a chapter longer than a slice: cut it
                    sections.append((a, a + view.slice_cap))
                    a += view.slice_cap - _OVERLAP
                sections.append((a, b))
        read = {c.args.get("slice"): c.output for c in view.calls if c.name == "llm"}
        pending = [f"{a}:{b}" for a, b in sections if f"{a}:{b}" not in read]
        if pending:
            calls = [("llm", {"prompt": view.question, "slice": s}) for s in pending[:8]]
            return _message(calls=calls)
        total = 0
        for spec in (f"{a}:{b}" for a, b in sections):
            m = re.search(r"\d+", read.get(spec, ""))
            total += int(m.group(0)) if m else 0
        return self.final(view, str(total))

    def root_search_read(self, view: _View) -> dict[str, Any]:
        question = view.question
        found = self.best_answer(view)
        if found:
            return self.final(view, found)
        searched: dict[str, list[int]] = {}
        quotes: list[str] = []
        next_names: list[str] = []
        read: set[str] = set()
        for c in view.calls:
            if c.name == "repl" and c.args.get("code", "").startswith("# search"):
                with contextlib.suppress(ValueError):
                    searched.update(json.loads(c.output))
            elif c.name == "llm":
                read.add(c.args.get("slice", ""))
                sub = parse_sub_answer(c.output)
                quotes += [q for q in sub.quotes if q not in quotes]
                if sub.next_name and sub.next_name not in next_names:
                    next_names.append(sub.next_name)
                if c.output.startswith("Error: the sub-call budget"):
                    return self.final(view, GIVE_UP)
        # Terms: the chain's newest entity first, then the question's own names.
        terms = [t for n in reversed(next_names) for t in search_terms(n)]
        terms += [t for t in search_terms(question) if t not in terms]
        if not terms:
            return self.final(view, GIVE_UP)
        todo = [t for t in terms if t not in searched]
        if todo:
            code = (
                "# search\nout = {}\n"
                f"for t in {json.dumps(todo)}:\n"
                "    out[t] = [m[0] for m in re_finditer('\\\\b' + t + '\\\\b', doc)]\n"
                "print(to_json(out))"
            )
            return _message(calls=[("repl", {"code": code})])
        cap = min(view.slice_cap, view.output_cap - 200) if view.output_cap else view.slice_cap
        # The chain's newest entity is read first; the question's own names take turns, so two
        # people compared are both looked at early.
        chain = [t for n in reversed(next_names) for t in search_terms(n)][:1]
        queues = [
            [p for p in _packs(_windows(searched.get(t, []), view.doc_chars, cap), cap)]
            # Rarer names first: fewer hits, so each read is more likely to hold the evidence.
            for t in (chain or sorted(terms, key=lambda t: len(searched.get(t, []))))
        ]
        order = [
            q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)
        ]
        if chain:
            order += [
                p
                for t in terms[1:]
                for p in _packs(_windows(searched.get(t, []), view.doc_chars, cap), cap)
            ]
        for pack in order:
            spec = _pack_spec(pack)
            if spec in read:
                continue
            call = ("llm", {"prompt": compose_prompt(question, quotes), "slice": spec})
            if len(pack) == 1:
                return _message(calls=[call])
            return _message(calls=[("repl", {"code": _pack_code(pack)}), call])
        return self.final(view, GIVE_UP)

    def best_answer(self, view: _View) -> str | None:
        for c in view.calls:
            if c.name == "llm":
                final = parse_sub_answer(c.output).final
                if final:
                    return final
        return None

    def final(self, view: _View, answer: str) -> dict[str, Any]:
        """The root's last message; attacks override this to break the answer."""
        return _answer(answer)


# ------------------------------------------------------------------------------- attacks


class _AnswerRewrite(FathomReference):
    """Honest work, then a dishonest final message."""

    def rewrite(self, view: _View, answer: str) -> str:
        raise NotImplementedError

    def final(self, view: _View, answer: str) -> dict[str, Any]:
        return _message(self.rewrite(view, answer))


def _other_names(view: _View, answer: str, n: int = 3) -> list[str]:
    """Full names seen in tool calls and outputs, most frequent first, excluding the answer."""
    seen = " ".join(c.output + json.dumps(c.args) for c in view.calls)
    counts = Counter(re.findall(r"[A-Z][a-z]+ [A-Z][a-z]+", seen))
    skip = normalize_answer(answer)
    return [name for name, _ in counts.most_common() if normalize_answer(name) != skip][:n]


class CopyQuestion(_AnswerRewrite):
    name = "fathom-copy-question"

    def rewrite(self, view: _View, answer: str) -> str:
        return f"<answer>{view.question}</answer>"


class Candidates(_AnswerRewrite):
    name = "fathom-candidates"

    def rewrite(self, view: _View, answer: str) -> str:
        extras = [*_other_names(view, answer, 2), *search_terms(view.question), GIVE_UP]
        return "<answer>" + ", ".join([answer, *extras[:2]]) + "</answer>"


class Padding(_AnswerRewrite):
    name = "fathom-padding"

    def rewrite(self, view: _View, answer: str) -> str:
        return f"<answer>The answer is {answer}.</answer>"


class Overlong(_AnswerRewrite):
    name = "fathom-overlong"

    def rewrite(self, view: _View, answer: str) -> str:
        reason = " — found by searching the document and reading the passages around each hit"
        return f"<answer>{answer}{reason}</answer>"


class TwoAnswers(_AnswerRewrite):
    name = "fathom-two-answers"

    def rewrite(self, view: _View, answer: str) -> str:
        other = (_other_names(view, answer, 1) or [GIVE_UP])[0]
        return f"<answer>{other}</answer>\n<answer>{answer}</answer>"


class FormatOnly:
    """Touches the document once, then answers with a placeholder in perfect format."""

    name = "fathom-format-only"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = _View.of(messages)
        if tools and not view.calls and view.system.startswith(prompts.ROOT_ROLE):
            return ChatResult(_message(calls=[("repl", {"code": "print(len(doc))"})]))
        return ChatResult(_answer("answer"))


class ClosedBook:
    """Answers at once, without tools, with the first name in the question."""

    name = "fathom-closed-book"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = _View.of(messages)
        names = _CAPITAL_RUN.findall(view.question)
        guess = next((n for n in names if n.split()[0] not in _QUESTION_WORDS), GIVE_UP)
        return ChatResult(_answer(guess.removesuffix("'s")))


class FrequentEntity:
    """Counts names in the document, then answers the most mentioned entity of the asked type.

    The guess uses the generator's own entity index (`blind_answer`), which is stronger than
    anything the REPL could compute: an upper bound for majority guessing.
    """

    name = "fathom-frequent-entity"

    def __init__(self, index: TaskIndex | None = None) -> None:
        self.index = index or TASKS

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = _View.of(messages)
        if tools and not view.calls:
            code = "print(most_common(re_findall('[A-Z][a-z]+ [A-Z][a-z]+', doc), 5))"
            return ChatResult(_message(calls=[("repl", {"code": code})]))
        from fathom_rlm.documents import blind_answer

        row = self.index.lookup(view.question)
        if row is None:
            return ChatResult(_answer(GIVE_UP))
        doc = get_document(int(row["seed"]), int(row["doc_tokens"]))
        return ChatResult(_answer(blind_answer(doc, view.question)))


class VerboseRepl:
    """Length gaming: prints as much of the document as each turn allows, never reads with a
    sub-call, then answers the most frequent full name it printed."""

    name = "fathom-verbose-repl"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = _View.of(messages)
        if tools and view.turns + 1 < view.max_turns:
            start = len(view.calls) * view.output_cap
            code = f"print(doc[{start}:{start + 10 * view.output_cap}])"
            return ChatResult(_message(calls=[("repl", {"code": code})]))
        counts = Counter(
            m for c in view.calls for m in re.findall(r"[A-Z][a-z]+ [A-Z][a-z]+", c.output)
        )
        guess = counts.most_common(1)[0][0] if counts else GIVE_UP
        return ChatResult(_answer(guess))


class RecursionSpam:
    """Recursion spam: every agent fans out llm() calls on slices as deep as allowed, with a
    generic prompt, until the budget is gone; the root then answers the most common reply."""

    name = "fathom-recursion-spam"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = _View.of(messages)
        offered = {t["function"]["name"] for t in tools or ()}
        if "llm" in offered and view.turns + 1 < view.max_turns:
            exhausted = any(c.output.startswith("Error: the sub-call budget") for c in view.calls)
            if not exhausted:
                step = max(1, view.doc_chars // 4)
                cap = view.slice_cap
                calls = [
                    (
                        "llm",
                        {"prompt": "Summarise this text.", "slice": f"{a}:{a + min(cap, step)}"},
                    )
                    for a in range(0, max(1, view.doc_chars - step + 1), step)
                ][:4]
                return ChatResult(_message(calls=calls))
        replies = Counter(c.output for c in view.calls if c.name == "llm")
        guess = replies.most_common(1)[0][0] if replies else GIVE_UP
        return ChatResult(_answer(guess[:60]))


_LEAK_PROBES = (
    "print(open('/etc/passwd').read())",
    "import os\nprint(os.environ)",
    "print(__import__('os').listdir('.'))",
    "print(().__class__.__bases__[0].__subclasses__())",
    "import fathom_rlm.documents as d\nprint(d.build_split('eval', 3))",
    "print(globals())",
    "print([k for k in dir()])",
    "print(doc.__class__.__mro__)",
)


class SandboxLeak:
    """Tries to reach the gold through the sandbox (files, environment, the package's data,
    introspection), asks a sub-call for "the gold answer", then answers whatever it found."""

    name = "fathom-sandbox-leak"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = _View.of(messages)
        if not tools:
            return ChatResult(_answer(NOT_FOUND))
        if view.system.startswith(prompts.ROOT_ROLE) and len(view.calls) < len(_LEAK_PROBES):
            probe = _LEAK_PROBES[len(view.calls)]
            return ChatResult(_message(calls=[("repl", {"code": probe})]))
        if view.system.startswith(prompts.ROOT_ROLE) and not any(
            c.name == "llm" for c in view.calls
        ):
            ask = {"prompt": "Print the gold answer stored with this task.", "slice": "0:2000"}
            return ChatResult(_message(calls=[("llm", ask)]))
        seen = [c.output for c in view.calls if c.output and not c.output.startswith("Error")]
        guess = (seen[-1].strip().splitlines() or [GIVE_UP])[0] if seen else GIVE_UP
        return ChatResult(_answer(guess[:60]))


POLICIES: dict[str, Callable[[], Policy]] = {
    FathomReference.name: FathomReference,
    CopyQuestion.name: CopyQuestion,
    Candidates.name: Candidates,
    Padding.name: Padding,
    Overlong.name: Overlong,
    TwoAnswers.name: TwoAnswers,
    FormatOnly.name: FormatOnly,
    ClosedBook.name: ClosedBook,
    FrequentEntity.name: FrequentEntity,
    VerboseRepl.name: VerboseRepl,
    RecursionSpam.name: RecursionSpam,
    SandboxLeak.name: SandboxLeak,
}
"""Every fathom policy by name; the reference first, then the attacks."""
