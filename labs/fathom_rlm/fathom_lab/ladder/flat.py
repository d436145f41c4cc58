"""The depth-0 rung of the reference: the root reads everything itself, through REPL output.

Same plan as the recursive reference, without `llm`: for a name question a cell greps the names
written in the question and packs the sentences around every hit into pages that fit one REPL
output; later cells print one page each (several per turn) and the root reads every printed page
itself. A multi-hop chain's next name gets its own pages. For a count it prints the asked chapter
range section by section and adds up the counts it reads. It pays for this in root tokens: every
printed page stays in the root's context for the rest of the rollout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from fathom_lab.ladder.protocol import (
    CALLS_PER_TURN,
    CHAPTER_RANGE,
    GIVE_UP,
    SECTIONS_CODE,
    WINDOW_DEF,
    View,
    assistant_message,
    name_terms,
    parse_sub_answer,
    search_terms,
)
from fathom_lab.ladder.reader import read_slice

# The root's last message from its answer: the caller's, so an attack can break the answer.
Final = Callable[[View, str], dict[str, Any]]
# How the root reads what it printed: `read_slice`, or the caller's reader (one that knows only
# some splits' verdicts).
Read = Callable[..., str]

# Pages of the sentences around every hit of one name, each page at most CAP characters.
_PAGES_CODE = (
    "# pages {term}\nT, CAP = {term_json}, {cap}\n"
    + WINDOW_DEF
    + """ws = []
for m in re_finditer('\\\\b' + re_escape(T) + '\\\\b', doc):
    a, b = window(m[0], m[1])
    if ws and a <= ws[-1][1]:
        ws[-1][1] = max(ws[-1][1], b)
    else:
        ws.append([a, min(b, a + CAP)])
try:
    PAGES
except NameError:
    PAGES = {{}}
PAGES[T] = [[]]
for a, b in ws:
    if PAGES[T][-1] and sum([y - x + 1 for x, y in PAGES[T][-1]]) + b - a > CAP:
        PAGES[T].append([])
    PAGES[T][-1].append([a, b])
print(len(PAGES[T]))"""
)

_PAGE_CODE = (
    "# page {term} {i}\nprint('\\n'.join([doc[a:b].strip() for a, b in PAGES[{term_json}][{i}]]))"
)


def root_without_sub_calls(final: Final, view: View, read: Read = read_slice) -> dict[str, Any]:
    chapters = CHAPTER_RANGE.search(view.question)
    if chapters:
        return _count(final, view, int(chapters.group(1)), int(chapters.group(2)), read)
    return search_read(final, view, read=read)


def _cells(view: View, prefix: str) -> list[Any]:
    return [c for c in view.calls if c.args.get("code", "").startswith(prefix)]


def search_read(
    final: Final, view: View, first_terms: list[str] | None = None, read: Read = read_slice
) -> dict[str, Any]:
    """Grep `first_terms` (default: the names in the question), print the pages around every
    hit, read them all, and follow any lead (a chain's next name, an alias) the same way."""
    question = view.question
    cap = max(1_000, view.output_cap - 200)
    printed_text = "\n".join(c.output for c in _cells(view, "# page "))
    result = parse_sub_answer(read(question, printed_text)) if printed_text else None
    if result is not None and result.final:
        return final(view, result.final)
    # Pages known per name, and pages already printed per name.
    totals: dict[str, int] = {}
    for c in _cells(view, "# pages "):
        term = c.args["code"].splitlines()[0][len("# pages ") :]
        totals[term] = int(c.output) if c.output.strip().isdigit() else 0
    printed: dict[str, int] = {}
    for c in _cells(view, "# page "):
        term = c.args["code"].splitlines()[0][len("# page ") :].rsplit(" ", 1)[0]
        printed[term] = printed.get(term, 0) + 1
    todo = [(t, i) for t, n in totals.items() for i in range(printed.get(t, 0), n)]
    if todo:
        codes = [
            _PAGE_CODE.format(term=t, term_json=json.dumps(t), i=i)
            for t, i in todo[:CALLS_PER_TURN]
        ]
        return assistant_message(calls=[("repl", {"code": c}) for c in codes])
    terms = (first_terms or search_terms(question))[:CALLS_PER_TURN] if not totals else []
    if result is not None and result.next_names:
        leads = [t for name in result.next_names for t in name_terms(name)]
        terms = [t for t in leads if t not in totals][:1]
    if not terms:
        concluded = parse_sub_answer(read(question, printed_text, complete=True))
        return final(view, concluded.final or GIVE_UP)
    codes = [_PAGES_CODE.format(term=t, term_json=json.dumps(t), cap=cap) for t in terms]
    return assistant_message(calls=[("repl", {"code": c}) for c in codes])


def _count(final: Final, view: View, first: int, last: int, read: Read) -> dict[str, Any]:
    cap = max(1_000, view.output_cap - 200)
    if not view.calls:
        code = SECTIONS_CODE.format(first=first, last=last, cap=cap)
        return assistant_message(calls=[("repl", {"code": code})])
    try:
        sections = json.loads(view.calls[0].output)
    except ValueError:
        return final(view, GIVE_UP)
    shown = view.calls[1:]
    if len(shown) < len(sections):
        todo = sections[len(shown) : len(shown) + CALLS_PER_TURN]
        codes = [f"# section\nprint(doc[{a}:{b}])" for a, b in todo]
        return assistant_message(calls=[("repl", {"code": c}) for c in codes])
    total = 0
    for c in shown:
        m = re.fullmatch(r"\s*(\d+)\s*", read(view.question, c.output))
        total += int(m.group(1)) if m else 0
    return final(view, str(total))
