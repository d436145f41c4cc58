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

The root never looks at spans or gold to decide where to look. For a name question it writes one
REPL cell per hop: grep the names written in the question, cut the sentences around each hit, pack
them into slices and read the slices with in-REPL `llm()` calls (round robin over the names, the
known quotes passed down) until an answer or a chain's `next` name comes back; the next hop is the
next cell. ID tokens are answered from the hit lines; for aggregation it cuts the asked chapter
range into sections at full stops and counts them in one map-reduce cell, each section's sub-call
handing it to a plain reader (depth 2) unless the sub-call budget only allows one sub-call per
section, when the section's sub-call reads it itself.

Two weaker honest rungs: `fathom-no-recursion` (the same plan, never below depth 1) and
`fathom-grep-only` (regex hit lines only, never `llm`, answering the nearest candidate of the asked
type, so it is no perfect reader at all).

The attack policies reuse that machinery: some do the honest work and then break the answer's
format (copy the question, pad it, list candidates, write two answer blocks, go over length);
others replace the work (no tools, a majority guess, flooding REPL output, recursion spam,
probing the sandbox for the gold).
"""

from __future__ import annotations

import json
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fathom_rlm.agent import prompts
from fathom_rlm.documents import get_document, normalize_answer
from fathom_rlm.documents.baselines import NUMBER_PATTERN, infer_answer_type
from fathom_rlm.documents.world import ORG_KINDS, ROLES, THINGS

from envtools.policies.base import ChatResult, Policy

NOT_FOUND = prompts.NOT_FOUND
KNOWN_HEADER = "Known so far:"
PARTIAL = "partial"
GIVE_UP = "unknown"
SELF_READ = "Read the text yourself, without sub-calls."
"""Appended to a sub-call's prompt when the sub-call budget leaves no room for it to delegate."""

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
_CALLS_PER_TURN = 8  # the loop's default cap on tool calls in one reply


# ------------------------------------------------------------------------------ task index


@dataclass
class TaskIndex:
    """Question text -> task row, for the perfect reader (never used to decide where to look)."""

    autoload_splits: tuple[str, ...] = ("eval", "train")
    """Standard splits regenerated (once) on the first unknown question."""
    autoload_doc_tokens: tuple[int, ...] = (200_000,)
    """Document lengths those splits are regenerated at (the environment's `doc_tokens`)."""
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    _loaded: bool = False
    _loaded_lengths: set[int] = field(default_factory=set)

    def register(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.rows[_question_key(row["question"])] = row

    def lookup(self, question: str) -> dict[str, Any] | None:
        key = _question_key(question)
        if key not in self.rows and not self._loaded and self.autoload_splits:
            self._loaded = True
            from fathom_rlm.documents import build_split

            for doc_tokens in self.autoload_doc_tokens:
                for split in self.autoload_splits:
                    self.register(build_split(split, doc_tokens=doc_tokens))  # type: ignore[arg-type]
        return self.rows.get(key)

    def require(self, question: str, doc_chars: int) -> dict[str, Any]:
        """The row of a root question, loading the standard splits at the length of the request's
        document if needed; UnknownTaskError (a refusal the server answers with 422) otherwise.

        A scripted policy without its row could only answer "unknown", which would look like a
        reward of 0 rather than a misconfigured run.
        """
        row = self.lookup(question)
        if row is None and self.autoload_splits:
            from fathom_rlm.documents import build_split

            for doc_tokens in document_length_guesses(doc_chars):
                if doc_tokens not in self._loaded_lengths:
                    self._loaded_lengths.add(doc_tokens)
                    for split in self.autoload_splits:
                        self.register(build_split(split, doc_tokens=doc_tokens))  # type: ignore[arg-type]
                row = self.rows.get(_question_key(question))
                if row is not None:
                    break
        if row is None:
            served = sorted({int(r["doc_tokens"]) for r in self.rows.values()})
            raise UnknownTaskError(
                "the scripted fathom policies know no task with this question for a document of "
                f"{doc_chars:,} characters (about {doc_chars // 4:,} tokens; rows known at "
                f"doc_tokens {served or 'none'}). They serve the eval and train splits at whole "
                "hundreds of tokens; start the policy server with --fathom-doc-tokens set to "
                "the run's doc_tokens."
            )
        return row


class UnknownTaskError(ValueError):
    """No task row for a question: the policy refuses instead of answering "unknown"."""


def document_length_guesses(doc_chars: int) -> list[int]:
    """`doc_tokens` values a document of `doc_chars` characters was probably generated at: the
    generator lands a few dozen characters past doc_tokens x 4, so round down to hundreds, then
    thousands."""
    tokens = doc_chars // 4
    guesses = [tokens // 100 * 100, tokens // 1000 * 1000]
    return [g for i, g in enumerate(guesses) if g > 0 and g not in guesses[:i]]


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
    """(question, text of the "Known so far" block); a self-read instruction is dropped."""
    head, _, known = prompt.replace("\n" + SELF_READ, "").partition("\n" + KNOWN_HEADER)
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
                except (ValueError, RecursionError):  # a malformed call earlier in the chat
                    args = {}
                if isinstance(args, dict):
                    args = {k: v for k, v in args.items() if isinstance(v, str)}
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
    def sub_calls(self) -> int:
        return self.number(r"and (\d+) sub-calls in total", 16)

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


# ----------------------------------------------------------------------- REPL cells


# Sections of the asked chapter range, each at most `cap` characters, cut after a full stop.
_SECTIONS_CODE = """# sections
S = [m[0] for m in re_finditer('(?m)^Chapter \\\\d+:', doc)] + [len(doc)]
first, last = max(1, {first}), min(len(S) - 1, {last})
out = []
if first <= last:
    a, b = S[first - 1], S[last]
    while b - a > {cap}:
        c = doc.rfind('.', a, a + {cap}) + 1
        c = c if c > a else a + {cap}
        out.append([a, c])
        a = c
    out.append([a, b])
print(to_json(out))"""

# Read the windows around every hit of the terms, round robin over the terms, until an answer
# or the next name of a chain comes back; a term that gave evidence waits behind the others.
_READ_CODE = """# read
Q = {question}
K = {known}
T = {terms}
B, CAP = {budget}, {cap}
def window(s, e):
    p = doc.rfind('.', 0, s)
    a = doc.rfind('.', 0, p) + 1 if p > 0 else 0
    f = doc.find('.', e)
    g = doc.find('.', f + 1) if f >= 0 else -1
    return a, (len(doc) if g < 0 else g + 1)
def packs(t):
    ws = []
    for m in re_finditer('\\\\b' + re_escape(t) + '\\\\b', doc):
        a, b = window(m[0], m[1])
        if ws and a <= ws[-1][1]:
            ws[-1][1] = max(ws[-1][1], b)
        else:
            ws.append([a, b])
    pieces = []
    for a, b in ws:
        while b - a > CAP:
            pieces.append(doc[a:a + CAP])
            a += CAP - 300
        pieces.append(doc[a:b])
    out = ['']
    for p in pieces:
        if out[-1] and len(out[-1]) + 1 + len(p) > CAP:
            out.append('')
        out[-1] = p if not out[-1] else out[-1] + '\\n' + p
    return [x for x in out if x]
P = [packs(t) for t in T]
order = [(T[j], P[j][i]) for i in range(max([len(x) for x in P])) for j in range(len(T))
         if i < len(P[j])]
n, gave = 0, []
while order and n < B:
    t, text = order.pop(0)
    prompt = Q if not K else Q + '\\nKnown so far:\\n' + '\\n'.join(['- ' + k for k in K])
    a = llm(prompt, text).strip()
    n += 1
    if a == 'not found':
        continue
    print(to_json([t, a]))
    if not a.startswith('partial') or ' | next: ' in a:
        break
    for q in a.split('evidence: ', 1)[-1].split(' || '):
        if q and q not in K:
            K.append(q)
    gave.append(t)
    order = [x for x in order if x[0] not in gave] + [x for x in order if x[0] in gave]
print(to_json(['reads', n, sum([len(x) for x in P])]))"""


@dataclass
class _ReadCell:
    """What one read cell printed: sub-call answers, and how many sub-calls it made."""

    finals: list[str] = field(default_factory=list)
    quotes: list[str] = field(default_factory=list)
    next_names: list[str] = field(default_factory=list)
    reads: int | None = None

    @staticmethod
    def terms_of(code: str) -> list[str]:
        m = re.search(r"^T = (.*)$", code, re.MULTILINE)
        try:
            terms = json.loads(m.group(1)) if m else []
        except ValueError:
            return []
        return [t for t in terms if isinstance(t, str)]


def _read_cell_state(output: str) -> _ReadCell:
    cell = _ReadCell()
    for line in output.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, list) or len(item) < 2:
            continue
        if item[0] == "reads" and isinstance(item[1], int):
            cell.reads = item[1]
            continue
        sub = parse_sub_answer(str(item[1]))
        if sub.final:
            cell.finals.append(sub.final)
        cell.quotes += sub.quotes
        if sub.next_name:
            cell.next_names.append(sub.next_name)
    return cell


# --------------------------------------------------------------------------- the reference


class FathomReference:
    """The honest reference RLM (see the module docstring)."""

    name = "fathom-reference"
    delegates = True
    """Whether a sub-call hands a whole section to a plain reader (depth 2) for a count."""

    def __init__(self, index: TaskIndex | None = None) -> None:
        self.index = index or TASKS

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ChatResult:
        view = _View.of(messages)
        if view.system.startswith(prompts.ROOT_ROLE):
            self.index.require(view.question, view.doc_chars)  # refuse loudly, never guess
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
        delegated = [c for c in view.calls if c.args.get("code", "").startswith("# delegate")]
        if self.delegates and _CHAPTERS.search(question) and SELF_READ not in prompt:
            # A count over a whole section: hand the section to a plain reader (depth 2).
            if not delegated:
                code = f"# delegate\nprint(llm({json.dumps(prompt)}, doc))"
                return _message(calls=[("repl", {"code": code})])
            last = delegated[-1].output.strip().splitlines() or [""]
            if not last[-1].startswith("Error"):
                return _answer(last[-1])
            # The reader was refused (budget): fall back to reading the section itself.
        return self.self_read(view, prompt)

    def self_read(self, view: _View, prompt: str) -> dict[str, Any]:
        """Print the whole text in overlapping chunks (several per turn), then answer."""
        chunk = max(1_000, view.output_cap - 200)
        starts = list(range(0, max(1, view.doc_chars), chunk - _OVERLAP))
        reads = [c for c in view.calls if c.args.get("code", "").startswith("# read")]
        shown = "\n".join(c.output for c in reads)
        result = perfect_read(prompt, shown, self.index) if reads else NOT_FOUND
        final_turn = view.turns + 1 >= view.max_turns
        if parse_sub_answer(result).final or len(reads) >= len(starts) or final_turn:
            return _answer(result)
        todo = starts[len(reads) : len(reads) + _CALLS_PER_TURN]
        codes = [f"# read\nprint(doc[{a}:{a + chunk}])" for a in todo]
        return _message(calls=[("repl", {"code": code}) for code in codes])

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
        """Cut the asked chapter range into sections at full stops (no sentence is split or
        counted twice), then count every section in one map-reduce cell."""
        if not view.calls:
            code = _SECTIONS_CODE.format(first=first, last=last, cap=view.slice_cap)
            return _message(calls=[("repl", {"code": code})])
        try:
            sections = json.loads(view.calls[0].output)
        except ValueError:
            return self.final(view, GIVE_UP)
        if len(view.calls) == 1:
            if not sections:
                return self.final(view, GIVE_UP)
            prompt = view.question
            # Delegating costs two sub-calls per section; read in place when that does not fit.
            if self.delegates and 2 * len(sections) > view.sub_calls:
                prompt += "\n" + SELF_READ
            code = (
                f"# count\nP = {json.dumps(prompt)}\nS = {json.dumps(sections)}\n"
                "print(to_json([llm(P, doc[a:b]) for a, b in S]))"
            )
            return _message(calls=[("repl", {"code": code})])
        try:
            counts = json.loads(view.calls[-1].output)
        except ValueError:
            return self.final(view, GIVE_UP)
        total = 0
        for answer in counts:
            m = re.fullmatch(r"\s*(\d+)\s*", str(answer))
            total += int(m.group(1)) if m else 0
        return self.final(view, str(total))

    def root_search_read(self, view: _View) -> dict[str, Any]:
        """Each turn one cell: grep the names, cut a short window (the sentences around each
        hit) per hit, pack the windows into slices and read them with in-REPL `llm()` calls until
        an answer comes back; a multi-hop chain's next name gets the next cell."""
        question = view.question
        found = self.best_answer(view)
        if found:
            return self.final(view, found)
        quotes: list[str] = []
        next_names: list[str] = []
        searched: list[str] = []
        used = 0
        for c in view.calls:
            if c.name != "repl" or not c.args.get("code", "").startswith("# read"):
                continue
            cell = _read_cell_state(c.output)
            searched += cell.terms_of(c.args["code"])
            used += cell.reads if cell.reads is not None else view.sub_calls
            quotes += [q for q in cell.quotes if q not in quotes]
            next_names += [n for n in cell.next_names if n not in next_names]
        if not searched:
            terms = search_terms(question)
        else:
            # Follow the chain: the newest name not searched yet.
            terms = [t for n in reversed(next_names) for t in search_terms(n)][:1]
            terms = [t for t in terms if t not in searched]
        budget = view.sub_calls - used
        if not terms or budget <= 0:
            return self.final(view, GIVE_UP)
        code = _READ_CODE.format(
            question=json.dumps(question),
            known=json.dumps(quotes),
            terms=json.dumps(terms),
            budget=budget,
            cap=view.slice_cap,
        )
        return _message(calls=[("repl", {"code": code})])

    def best_answer(self, view: _View) -> str | None:
        for c in view.calls:
            if c.name == "llm":
                final = parse_sub_answer(c.output).final
                if final:
                    return final
            elif c.name == "repl" and c.args.get("code", "").startswith("# read"):
                finals = _read_cell_state(c.output).finals
                if finals:
                    return finals[0]
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

        row = self.index.require(view.question, view.doc_chars)
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


# ---------------------------------------------------------------------- weaker honest rungs


class NoRecursion(FathomReference):
    """The reference plan with recursion capped at depth 1: its sub-calls always read their
    slice themselves and never hand it on, so a count costs one sub-call per section."""

    name = "fathom-no-recursion"
    delegates = False


# Capitalised words that open a sentence or a title, never a first name.
_SENTENCE_STARTS = frozenset(
    re.findall(
        r"\w+",
        "The In By At On For From With Within When After Before Once Few Everyone It He She His "
        "Her They Their A An Master Mistress Chapter",
    )
)
_PERSON = re.compile(r"\b([A-Z][a-z]+) ([A-Z][a-z]+)\b")
_PLACE = re.compile(r"\b(?:in|to|at|of|from|near) ([A-Z][a-z]+)\b(?! [A-Z])")
_YEAR = re.compile(r"\b1[5-9]\d\d\b")


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_TYPED: dict[str, re.Pattern[str]] = {
    "organisation": re.compile(rf"\b[A-Z][a-z]+ (?:{_alternation(ORG_KINDS)})\b"),
    "artefact": re.compile(rf"\b[A-Z][a-z]+ (?:{_alternation(THINGS)})\b"),
    "role": re.compile(rf"\b(?:{_alternation(ROLES)})\b"),
    "number": NUMBER_PATTERN,
    "year": _YEAR,
}


def typed_candidates(kind: str, line: str) -> list[tuple[int, str]]:
    """(offset, surface) of every candidate answer of `kind` written in `line`."""
    if kind == "person":
        return [
            (m.start(), m.group(0))
            for m in _PERSON.finditer(line)
            if m.group(1) not in _SENTENCE_STARTS
            and m.group(1) not in _KIND_WORDS
            and m.group(2) not in _KIND_WORDS
        ]
    if kind == "place":
        return [(m.start(1), m.group(1)) for m in _PLACE.finditer(line)]
    return [(m.start(), m.group(0)) for m in _TYPED[kind].finditer(line)]


def nearest_candidate(question: str, key: str, text: str) -> str | None:
    """The grep baseline over printed hit lines: at every hit of `key`, the nearest candidate of
    the asked type that the question does not name gets a vote; the most voted one wins."""
    kind = infer_answer_type(question)
    asked = f" {normalize_answer(question)} "
    votes: Counter[str] = Counter()
    for line in text.splitlines():
        hits = [m.start() for m in re.finditer(rf"\b{re.escape(key)}\b", line)]
        cands = [
            (at, c)
            for at, c in typed_candidates(kind, line)
            if f" {normalize_answer(c)} " not in asked
        ]
        for h in hits:
            if cands:
                votes[min(cands, key=lambda ac: abs(ac[0] - h))[1]] += 1
    return max(votes, key=lambda k: (votes[k], k)) if votes else None


_GREP_CODE = """# grep
L = []
for m in re_finditer('\\\\b' + re_escape({key}) + '\\\\b', doc):
    a = doc.rfind('.', 0, m[0]) + 1
    f = doc.find('.', m[1])
    g = doc.find('.', f + 1) if f >= 0 else -1
    L.append(doc[a:(len(doc) if g < 0 else g + 1)].strip())
G = '\\n'.join(L)
print(len(G))
print(G[:{chunk}])"""


class GrepOnly:
    """Honest but weak: regex searches through `repl` only, never `llm`. It prints the hit lines
    (the sentence of each hit and the next one) of the question's ID token or first name, a few
    printouts at most, and answers the candidate of the asked type nearest to the hits
    (`nearest_candidate`), the generator's grep baseline run on what the tools returned."""

    name = "fathom-grep-only"
    max_prints = 4

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = _View.of(messages)
        if not tools or not view.system.startswith(prompts.ROOT_ROLE):
            return ChatResult(_answer(NOT_FOUND))
        question = view.question
        token = _ID_TOKEN.search(question)
        key = token.group(0) if token else next(iter(search_terms(question)), None)
        if key is None:
            return ChatResult(_answer(GIVE_UP))
        chunk = max(1_000, view.output_cap - 200)
        if not view.calls:
            code = _GREP_CODE.format(key=json.dumps(key), chunk=chunk)
            return ChatResult(_message(calls=[("repl", {"code": code})]))
        first = view.calls[0].output.partition("\n")
        total = int(first[0]) if first[0].strip().isdigit() else 0
        if len(view.calls) == 1 and total > chunk and view.turns + 1 < view.max_turns:
            starts = range(chunk, min(total, self.max_prints * chunk), chunk)
            codes = [f"# more\nprint(G[{a}:{a + chunk}])" for a in starts]
            return ChatResult(_message(calls=[("repl", {"code": c}) for c in codes]))
        shown = "\n".join([first[2], *(c.output for c in view.calls[1:])])
        return ChatResult(_answer(nearest_candidate(question, key, shown) or GIVE_UP))


POLICIES: dict[str, Callable[[], Policy]] = {
    FathomReference.name: FathomReference,
    NoRecursion.name: NoRecursion,
    GrepOnly.name: GrepOnly,
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
"""Every fathom policy by name: the reference, the weaker honest rungs, then the attacks."""
