"""The reference planner: the honest root (and sub-agent) of the fathom ladder.

It never sees the gold, the task row or the world; it plans from the question's wording and
reads the document only through its tools. Its sub-calls are answered by the slice reader
(`fathom_lab.ladder.reader`) when the same policy serves them.

* exact ID: one REPL search for the token, the root reads the hit lines itself (depth 0);
* a single-hop question (its family is labelled depth 0): the depth-0 plan of `flat`, pages of
  the sentences around the hits read by the root itself;
* name questions: one REPL cell per hop greps the names written in the question, cuts the
  sentences around each hit, packs them into slices and reads them with in-REPL `llm()` calls
  (round robin over the names, known quotes passed down) until an answer or a chain's next name
  comes back;
* aggregation: the asked chapter range is cut into sections at full stops and counted in one
  map-reduce cell; each section's sub-call hands it to a plain reader (depth 2) when the budget
  allows, else reads it itself.

`max_depth` sets the rung: 0 reads only through REPL output (no `llm`), 1 has its sub-calls read
their slices themselves, 2 lets sub-agents fan out to plain readers.

The reference is an upper bound, not a stand-in for a model. Its planning is honest (no gold, no
task row), but its reading is the audit's perfect grammar reader: it knows the statement shapes
and the verdict parts of every split, `heldout`'s included, so it tells a one-off statement that
stands from a retracted one on wordings no model was trained on. Its scores say what the
environment pays a reader that reads every sentence right. `ReferenceTrainVerdicts` is the same
plan with a reader that knows only `train`'s verdict parts: what a reader that learned its
verdicts from `train` makes of other splits' wordings.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from fathom_rlm.agent import prompts

from envtools.policies.base import ChatResult
from fathom_lab.ladder import flat
from fathom_lab.ladder.overlap_reader import content_terms, read_any_text
from fathom_lab.ladder.protocol import (
    CALLS_PER_TURN,
    CHAPTER_RANGE,
    GIVE_UP,
    ID_TOKEN,
    NOT_FOUND,
    SECTIONS_CODE,
    SELF_READ,
    WINDOW_DEF,
    View,
    answer_message,
    assistant_message,
    name_terms,
    parse_sub_answer,
    search_terms,
    split_prompt,
)
from fathom_lab.ladder.reader import read_slice, reads_whole_history, required_depth

# ----------------------------------------------------------------------- REPL cells


def _printed_piece(output: str, length: int) -> str:
    """A piece of text as the REPL printed it, put back as it stood in the text. The output loses
    its trailing line breaks, and the piece's length gives them back, so a paragraph break between
    two pieces stays one (a single line break reads as a cut). An output that is not the bare
    piece (an error, a truncation or restart note) is kept as it is and ends in a line break, a
    cut."""
    if output.startswith(("Error", "[")) or "\n[output truncated" in output or len(output) > length:
        return output + "\n"
    return output.ljust(length, "\n")


# The whole text in pieces of at most `cap` characters, cut at a paragraph break, else after a
# full stop.
_PIECES_CODE = """# pieces
out, a = [], 0
while len(doc) - a > {cap}:
    c = doc.rfind('\\n', a, a + {cap}) + 1 or doc.rfind('.', a, a + {cap}) + 1
    c = c if c > a else a + {cap}
    out.append([a, c])
    a = c
out.append([a, len(doc)])
print(to_json(out))"""

# Read the windows around every hit of the terms, round robin over the terms, until an answer
# or the next name of a chain comes back; a term that gave evidence waits behind the others.
_READ_CODE = (
    """# read
Q = {question}
K = {known}
T = {terms}
B, CAP, STOP = {budget}, {cap}, {stop}
"""
    + WINDOW_DEF
    + """def packs(t):
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
            pieces.append(doc[a:a + CAP].strip())
            a += CAP - 300
        pieces.append(doc[a:b].strip())
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
    if not a.startswith('partial') or (STOP and ' | next: ' in a):
        break
    for q in a.split('evidence: ', 1)[-1].split(' || '):
        if q and q not in K:
            K.append(q)
    gave.append(t)
    order = [x for x in order if x[0] not in gave] + [x for x in order if x[0] in gave]
print(to_json(['reads', n, sum([len(x) for x in P])]))
print(to_json(['order', sorted(K, key=lambda q: doc.find(q))]))
print(to_json(['left', sorted(set([x[0] for x in order]))]))"""
)


@dataclass
class _ReadCell:
    """What one read cell printed: sub-call answers, and how many sub-calls it made."""

    finals: list[str] = field(default_factory=list)
    quotes: list[str] = field(default_factory=list)
    next_names: list[str] = field(default_factory=list)
    reads: int | None = None
    order: list[str] | None = None
    left: list[str] = field(default_factory=list)
    """Terms whose windows the cell did not get to (it stopped at a lead or the budget)."""

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
        if item[0] == "left" and isinstance(item[1], list):
            cell.left = [str(t) for t in item[1]]
            continue
        if item[0] == "order" and isinstance(item[1], list):
            cell.order = [str(q) for q in item[1]]
            continue
        sub = parse_sub_answer(str(item[1]))
        if sub.final:
            cell.finals.append(sub.final)
        cell.quotes += sub.quotes
        cell.next_names += sub.next_names
    return cell


# --------------------------------------------------------------------------- the reference


class FathomReference:
    """The honest reference RLM (see the module docstring)."""

    name = "fathom-reference"
    depth_cap: int | None = None
    """The deepest level it recurses to: None plans at the depth the question's family needs
    (read off its wording), 0, 1 or 2 fix the rung."""
    verdict_splits: tuple[str, ...] | None = None
    """The splits whose verdict parts its reader knows: None for every split (the perfect
    grammar reader), ("train",) for a reader that learned its verdicts from `train` alone."""
    batch: bool = True
    """Whether a count's map over sections asks its sub-calls at once (`llm_batch`) or one
    after another (`llm` in a loop; the batch benchmark's baseline)."""

    def read(self, prompt: str, text: str, *, complete: bool = False) -> str:
        """Its reader's answer to `prompt` about `text`, the root's own reading and every
        sub-call's alike (`reader.read_slice`)."""
        return read_slice(prompt, text, complete=complete, verdict_splits=self.verdict_splits)

    def delegates(self, question: str) -> bool:
        """Whether a sub-call hands a whole section to a plain reader (depth 2) for a count."""
        cap = required_depth(question) if self.depth_cap is None else self.depth_cap
        return cap >= 2

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ChatResult:
        view = View.of(messages)
        if view.system.startswith(prompts.ROOT_ROLE):
            return ChatResult(self.root(view))
        if view.system.startswith(prompts.SUB_ROLE) and tools:
            return ChatResult(self.sub_agent(view))
        return ChatResult(self.plain_reader(view))

    # -- roles ---------------------------------------------------------------------------

    def plain_reader(self, view: View) -> dict[str, Any]:
        prompt, _, text = view.user.removeprefix(prompts.QUESTION_PREFIX).partition(
            prompts.TEXT_PREFIX
        )
        return answer_message(self.read(prompt, text))

    def sub_agent(self, view: View) -> dict[str, Any]:
        prompt = view.user.removeprefix(prompts.QUESTION_PREFIX)
        question, _ = split_prompt(prompt)
        delegated = [c for c in view.calls if c.args.get("code", "").startswith("# delegate")]
        if self.delegates(question) and CHAPTER_RANGE.search(question) and SELF_READ not in prompt:
            # A count over a whole section: hand the section to a plain reader (depth 2).
            if not delegated:
                code = f"# delegate\nprint(llm({json.dumps(prompt)}, doc))"
                return assistant_message(calls=[("repl", {"code": code})])
            last = delegated[-1].output.strip().splitlines() or [""]
            if not last[-1].startswith("Error"):
                return answer_message(last[-1])
            # The reader was refused (budget): fall back to reading the section itself.
        return self.self_read(view, prompt)

    def self_read(self, view: View, prompt: str) -> dict[str, Any]:
        """Cut the text into pieces that fit one REPL output, at full stops (no sentence is
        printed twice), print them (several per turn), then answer from everything printed."""
        cut = [c for c in view.calls if c.args.get("code", "").startswith("# pieces")]
        if not cut:
            cap = max(1_000, view.output_cap - 200)
            return assistant_message(calls=[("repl", {"code": _PIECES_CODE.format(cap=cap)})])
        try:
            pieces = json.loads(cut[0].output)
        except ValueError:
            return answer_message(NOT_FOUND)
        reads = [c for c in view.calls if c.args.get("code", "").startswith("# read")]
        shown = "".join(
            _printed_piece(c.output, b - a) for c, (a, b) in zip(reads, pieces, strict=False)
        )
        done = len(reads) >= len(pieces)
        # Its own text is a slice: having read all of it says nothing about the rest of the
        # document, so a state question stays open (the caller concludes).
        result = self.read(prompt, shown) if reads else NOT_FOUND
        final_turn = view.turns + 1 >= view.max_turns
        if parse_sub_answer(result).final or done or final_turn:
            return answer_message(result)
        todo = pieces[len(reads) : len(reads) + CALLS_PER_TURN]
        codes = [f"# read\nprint(doc[{a}:{b}])" for a, b in todo]
        return assistant_message(calls=[("repl", {"code": code}) for code in codes])

    def root(self, view: View) -> dict[str, Any]:
        question = view.question
        if view.turns + 1 >= view.max_turns:
            return self.final(view, self.best_answer(view) or GIVE_UP)
        token = ID_TOKEN.search(question)
        if token:
            return self.root_exact(view, token.group(0))
        cap = required_depth(question) if self.depth_cap is None else self.depth_cap
        if cap == 0:
            # A depth-0 family (a few windows around one name): the root reads them itself.
            return flat.root_without_sub_calls(self.final, view, self.read)
        chapters = CHAPTER_RANGE.search(question)
        if chapters:
            return self.root_aggregate(view, int(chapters.group(1)), int(chapters.group(2)))
        return self.root_search_read(view)

    # -- root strategies -----------------------------------------------------------------

    def root_exact(self, view: View, token: str) -> dict[str, Any]:
        """An ID is found by its literal: the root greps it and reads the hit lines itself,
        following an alias the lines name the same way (no sub-call at any depth)."""
        return flat.search_read(self.final, view, [token], self.read)

    def root_aggregate(self, view: View, first: int, last: int) -> dict[str, Any]:
        """Cut the asked chapter range into sections at full stops (no sentence is split or
        counted twice), then count every section in one map-reduce cell, its sub-calls asked at
        once (`llm_batch`)."""
        if not view.calls:
            code = SECTIONS_CODE.format(first=first, last=last, cap=view.slice_cap)
            return assistant_message(calls=[("repl", {"code": code})])
        try:
            sections = json.loads(view.calls[0].output)
        except ValueError:
            return self.final(view, GIVE_UP)
        if len(view.calls) == 1:
            if not sections:
                return self.final(view, GIVE_UP)
            prompt = view.question
            # Delegating costs two sub-calls per section; read in place when that does not fit.
            if self.delegates(view.question) and 2 * len(sections) > view.sub_calls:
                prompt += "\n" + SELF_READ
            ask = (
                "llm_batch([(P, doc[a:b]) for a, b in S])"
                if self.batch
                else "[llm(P, doc[a:b]) for a, b in S]"
            )
            code = (
                f"# count\nP = {json.dumps(prompt)}\nS = {json.dumps(sections)}\n"
                f"print(to_json({ask}))"
            )
            return assistant_message(calls=[("repl", {"code": code})])
        try:
            counts = json.loads(view.calls[-1].output)
        except ValueError:
            return self.final(view, GIVE_UP)
        total = 0
        for answer in counts:
            m = re.fullmatch(r"\s*(\d+)\s*", str(answer))
            total += int(m.group(1)) if m else 0
        return self.final(view, str(total))

    def root_search_read(self, view: View) -> dict[str, Any]:
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
            searched += [t for t in cell.terms_of(c.args["code"]) if t not in cell.left]
            used += cell.reads if cell.reads is not None else view.sub_calls
            quotes += [q for q in cell.quotes if q not in quotes]
            if cell.order is not None:
                # Every quote known so far, in story order (the order a history is read in).
                quotes = [*cell.order, *(q for q in quotes if q not in cell.order)]
            next_names += [n for n in cell.next_names if n not in next_names]
        leads = [t for n in reversed(next_names) for t in name_terms(n) if t not in searched]
        wanted = search_terms(question)
        if read_any_text() and not _parses(question):
            # Any text: its names and longest content words (no answer line, no choices).
            wanted = content_terms(question)
        unread = [t for t in wanted if t not in searched]
        # Follow the newest lead (a chain's next name, an alias) first, then the names of the
        # question not read yet; the first cell reads all of those, round robin.
        terms = leads[:1] or unread
        budget = view.sub_calls - used
        if not terms or budget <= 0:
            # Nothing left to search: answer from every quote read so far, as a whole.
            concluded = parse_sub_answer(self.read(question, " ".join(quotes), complete=True))
            return self.final(view, concluded.final or GIVE_UP)
        code = _READ_CODE.format(
            question=json.dumps(question),
            known=json.dumps(quotes),
            terms=json.dumps(terms),
            budget=budget,
            cap=view.slice_cap,
            # A history needs every window of its name; a chain moves on at its first lead.
            stop=not reads_whole_history(question),
        )
        return assistant_message(calls=[("repl", {"code": code})])

    def best_answer(self, view: View) -> str | None:
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

    def final(self, view: View, answer: str) -> dict[str, Any]:
        """The root's last message; attacks override this to break the answer."""
        return answer_message(answer)


def _parses(question: str) -> bool:
    from fathom_rlm.documents import QuestionParseError, parse_question

    try:
        parse_question(question)
    except QuestionParseError:
        return False
    return True


class ReferenceDepth2(FathomReference):
    """Always fans out: a count's section goes from a depth-1 sub-agent to a plain reader."""

    name = "fathom-reference-d2"
    depth_cap = 2


class ReferenceDepth1(FathomReference):
    """Recursion capped at depth 1: sub-calls always read their slice themselves."""

    name = "fathom-reference-d1"
    depth_cap = 1


class ReferenceDepth0(FathomReference):
    """No sub-calls at all: the root reads everything itself through REPL output."""

    name = "fathom-reference-d0"
    depth_cap = 0


class ReferenceTrainVerdicts(FathomReference):
    """The depth-matched plan whose reader knows only `train`'s verdict parts (statements are
    still read with every split's shapes). On `eval` and `heldout` text every verdict is an
    ordinary sentence to it, so each retracted statement of a one-off fact stands beside the
    true one and it cannot tell them apart: what a reader that learned its verdicts from `train`
    earns on held-out wordings. On `train` it is the reference."""

    name = "fathom-reference-train-verdicts"
    verdict_splits = ("train",)
