"""The honest rungs of the fathom ladder: grep-only searches but never reads with a sub-call,
the depth-0 reference reads only through REPL output, the depth-1 reference never goes below
depth 1, the train-verdicts rung reads no other split's verdicts, and every honest policy answers
only from what its tools returned (with the evidence cut out of every message it sees, it cannot
answer)."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fathom_lab import policies as fathom
from fathom_lab.evaluate import registered_tasks
from fathom_lab.ladder.protocol import View, answer_message, assistant_message
from fathom_rlm.agent import ChatReply, RolloutCaps, RolloutRecord, prompts, run_rollout
from fathom_rlm.documents import TaskRecord, build_split, generate_document, get_document
from fathom_rlm.rewards import score_rollout

from envtools.policies.base import Policy

pytestmark = pytest.mark.xdist_group("test_fathom_ladder")

REDACTED = "[removed]"


@pytest.fixture(scope="module")
def rows() -> Iterator[list[TaskRecord]]:
    """Two tasks of each family from the first eval documents at 16K tokens."""
    split = build_split("eval", 30, doc_tokens=16_000)
    picked: list[dict[str, Any]] = []
    for family in ("exact_id", "single_hop", "multi_hop", "temporal", "aggregation", "comparison"):
        picked += [r for r in split if r.family == family][:2]
    with registered_tasks(picked):  # the scripted policies read these rows, and only these
        yield picked


def _redact(text: str, pieces: list[str]) -> str:
    for piece in pieces:
        text = text.replace(piece, REDACTED)
    return text


def run(
    policy: Policy, row: TaskRecord, *, redact: bool = False
) -> tuple[RolloutRecord, dict[str, float]]:
    """One rollout; with `redact`, every supporting span (and each of its sentences) is cut out
    of the tool outputs and prompts before the policy sees them."""
    text = get_document(row.seed, row.doc_tokens).text
    spans = [text[s:e] for s, e in row.spans]
    pieces = sorted(
        {*spans, *(p.strip() for s in spans for p in re.split(r"(?<=[.!?])\s+", s))},
        key=len,
        reverse=True,
    )

    async def chat(messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        if redact:
            messages = copy.deepcopy(messages)
            for m in messages:
                if m["role"] in ("tool", "user") and isinstance(m.get("content"), str):
                    m["content"] = _redact(m["content"], [p for p in pieces if p])
        result = await policy.respond(messages, tools)
        return ChatReply(result.message, result.usage)

    record = asyncio.run(run_rollout(text, row.question, chat, RolloutCaps()))
    return record, score_rollout(record, row, document=text)


def _whole_region_count(row: TaskRecord) -> str:
    from fathom_lab.ladder.answering import count_from_facts
    from fathom_lab.ladder.grammar_reader import read_facts
    from fathom_rlm.documents import parse_question

    text = get_document(row.seed, row.doc_tokens).text
    start, end = row.region
    return str(count_from_facts(parse_question(row.question), read_facts(text[start:end])))


def test_grep_only_never_calls_llm(
    rows: list[TaskRecord],
) -> None:
    grep, closed = fathom.GrepOnly(), fathom.ClosedBook()
    for row in rows:
        record, _ = run(grep, row)
        assert record.llm_calls == 0 and not record.sub_calls and record.depth_used == 0
        assert record.repl_calls >= 1
    assert sum(run(closed, r)[1]["correctness"] for r in rows) == 0


def test_depth_one_reference_stays_at_depth_one_and_still_counts(
    rows: list[TaskRecord],
) -> None:
    for row in rows:
        record, _ = run(fathom.ReferenceDepth1(), row)
        assert record.depth_used <= 1 and record.depth_reached <= 1
        if row.family == "aggregation":
            # Counting section by section doubles nothing and loses at most an arrival whose
            # subject's alias was introduced in another section (the reader drops a fact whose
            # subject it cannot resolve): within one of one reader given the whole range.
            whole = int(_whole_region_count(row))
            assert whole - 1 <= int(record.final_answer or -9) <= whole


def test_depth_zero_reference_reads_only_through_repl_output(rows: list[TaskRecord]) -> None:
    solved = 0
    for row in rows:
        record, scores = run(fathom.ReferenceDepth0(), row)
        assert record.llm_calls == 0 and record.depth_used == 0
        solved += int(scores["correctness"])
    assert solved >= len(rows) // 2


def test_depth_zero_family_pays_no_recursion(rows: list[TaskRecord]) -> None:
    """single_hop is labelled depth 0: the depth-matched reference answers it without `llm`
    and gets full recursion credit; the depth-1 rung, whose sub-calls read the supporting
    sentences, recurses one level beyond the requirement and gets half."""
    single = [r for r in rows if r.family == "single_hop"]
    assert single and all(r.depth == 0 for r in single)
    for row in single:
        record, scores = run(fathom.POLICIES["fathom-reference"](), row)
        assert record.llm_calls == 0 and scores["correctness"] == 1.0
        assert scores["recursion_efficiency"] == 1.0
        deep, deep_scores = run(fathom.ReferenceDepth1(), row)
        assert deep.llm_calls >= 1 and deep_scores["correctness"] == 1.0
        assert deep_scores["recursion_efficiency"] == 0.5


ONE_OFF_FAMILIES = ("single_hop", "multi_hop", "comparison")
"""The families whose answers rest on one-off facts (birth, teacher, maker, founding, seat), each
stated once truly and five times retracted, every statement followed by its own verdict."""


def test_train_verdict_rung_reads_no_other_split_verdicts(rows: list[TaskRecord]) -> None:
    """On `eval` and `heldout` text the train-verdicts rung meets verdicts it has no parts for:
    a one-off fact's retracted statements stand beside the true one, and it answers next to none
    of the questions that rest on them, where the reference (every split's verdicts) answers
    all. On the families without verdicts it is the reference. On `train` text it reads every
    verdict."""
    from fathom_lab.ladder.grammar_reader import read_facts

    reference, rung = fathom.POLICIES["fathom-reference"](), fathom.ReferenceTrainVerdicts()
    assert rung.name == "fathom-reference-train-verdicts"
    heldout = build_split("heldout", 10, doc_tokens=16_000)
    for split_rows in (rows, heldout):
        one_off = [r for r in split_rows if r.family in ONE_OFF_FAMILIES]
        assert len(one_off) >= 5
        assert sum(run(reference, r)[1]["correctness"] for r in one_off) == len(one_off)
        assert sum(run(rung, r)[1]["correctness"] for r in one_off) <= 1
    for row in rows:
        if row.family not in ONE_OFF_FAMILIES:
            assert run(rung, row)[1]["correctness"] == run(reference, row)[1]["correctness"]

    def facts(seed: int, splits: tuple[str, ...] | None) -> set[tuple[str, str, str]]:
        text = get_document(seed, 16_000).text
        return {(f.relation, f.subject, f.value) for f in read_facts(text, verdict_splits=splits)}

    train = build_split("train", 1, doc_tokens=16_000)[0]
    assert facts(train.seed, rung.verdict_splits) == facts(train.seed, None)
    for seed in (rows[0].seed, heldout[0].seed):
        assert facts(seed, rung.verdict_splits) > facts(seed, None), seed


@pytest.mark.parametrize(
    "name",
    [
        "fathom-reference",
        "fathom-reference-d2",
        "fathom-reference-d1",
        "fathom-reference-d0",
        "fathom-reference-train-verdicts",
    ],
)
def test_answers_come_only_from_tool_outputs(rows: list[TaskRecord], name: str) -> None:
    policy = fathom.POLICIES[name]()
    solved = [r for r in rows if run(policy, r)[1]["correctness"] == 1.0]
    assert solved, name
    for row in solved:
        record, _ = run(policy, row, redact=True)
        assert record.final_answer != row.answer, (name, row.question)


def test_slice_reader_answers_from_its_text_alone(rows: list[TaskRecord]) -> None:
    """Given all of a question's evidence, the reader answers it; given the last sentence alone
    (its alias introduction or antecedent cut away), it cannot settle the question and says at
    most "partial" with a lead; given unrelated text, "not found". It is never handed the row."""
    from fathom_lab.ladder.protocol import parse_sub_answer
    from fathom_lab.ladder.reader import read_slice

    checked = 0
    for row in rows:
        if row.family not in ("single_hop", "multi_hop", "comparison"):
            continue
        text = get_document(row.seed, row.doc_tokens).text
        spans = sorted(tuple(s) for s in row.spans)
        # The evidence as the document goes on after it: a statement that ends a text may be
        # cancelled by a next sentence the reader never saw, so it settles nothing.
        last = spans[-1][1]
        evidence = " ".join(text[s:e] for s, e in spans) + text[last : text.find(".", last + 1) + 1]
        answer = parse_sub_answer(read_slice(row.question, evidence)).final
        assert answer is not None and answer in (row.answer, *row.aliases), row.question
        alone = read_slice(row.question, text[slice(*spans[-1])])
        assert parse_sub_answer(alone).final != row.answer, row.question
        assert read_slice(row.question, "The mill burned down and was rebuilt.") == "not found"
        checked += 1
    assert checked >= 2


def test_a_statement_cut_from_its_retraction_settles_nothing() -> None:
    """The grammar reader reads a retracted statement whose retraction was cut off as a fact (a
    reader of that text alone must); the slice reader drops such a one-off statement when the
    text ends, or a window break follows, right after it, and keeps it when its paragraph goes on
    (there the retraction would have been read and the statement cancelled)."""
    from fathom_lab.ladder.grammar_reader import read_facts
    from fathom_lab.ladder.reader import drop_cut_statements
    from fathom_rlm.documents import generate_document

    doc = generate_document(2_000_000, 16_000)
    checked = 0
    for d in doc.distractors:
        if d.kind != "retracted":
            continue
        start, end = d.fact.spans[0][0], d.fact.sentence[1]
        if d.fact.spans[0][0] < d.spans[-2][0] - 200:
            continue  # an alias introduced far away: keep the text to the unit itself
        cut = doc.text[start:end]
        read = [f for f in read_facts(cut) if f.relation == d.relation]
        assert read and read[-1].value == d.value, (d, cut)
        for text in (cut, cut + "\n A new bridge was begun."):
            kept = drop_cut_statements(read_facts(text), text)
            assert not [f for f in kept if f.relation == d.relation and f.value == d.value]
        whole = doc.text[start : d.spans[-1][1]]
        assert not [f for f in read_facts(whole) if f.value == d.value and f.relation == d.relation]
        checked += 1
    assert checked >= 10
    kept_facts = 0
    for fact in doc.facts.values():
        if fact.relation not in ("birth", "mentor", "maker", "founding", "seat"):
            continue
        if fact.spans[0][0] < fact.sentence[0] - 200:
            continue
        text = doc.text[fact.spans[0][0] : fact.sentence[1]] + " The mill burned down."
        kept = drop_cut_statements(read_facts(text), text)
        assert [f for f in kept if f.relation == fact.relation and f.value == fact.value]
        kept_facts += 1
    assert kept_facts >= 5


def test_a_sub_call_reading_its_slice_in_pieces_hands_its_reader_the_slice_itself() -> None:
    """A sub-call whose slice is longer than one REPL output prints it in pieces and reads what
    was printed. The pieces put end to end are the slice, character for character: a paragraph
    break between two pieces stays a paragraph break (one line break would read as a window's
    cut, and a statement ending the paragraph would be dropped as cut from its verdict)."""
    caps = RolloutCaps()
    text = generate_document(2_000_000, 16_000).text
    # Whole paragraphs up to the longest slice a sub-call is shown.
    text = text[: text.rfind("\n\n", 0, caps.max_slice_chars)]
    question = "Which year saw the arrival into the world of Nobody Anyone's instructor?"
    handed: list[str] = []
    sub_views: list[View] = []

    class Recording(fathom.FathomReference):
        def read(self, prompt: str, text: str, *, complete: bool = False) -> str:
            handed.append(text)
            return super().read(prompt, text, complete=complete)

    policy = Recording()

    async def chat(messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        view = View.of(messages)
        if view.system.startswith(prompts.ROOT_ROLE):
            # The root hands its whole text to one sub-call, then gives up.
            if not view.calls:
                code = f"print(llm({json.dumps(question)}, doc))"
                return ChatReply(assistant_message(calls=[("repl", {"code": code})]))
            return ChatReply(answer_message("unknown"))
        sub_views.append(view)
        result = await policy.respond(messages, tools)
        return ChatReply(result.message, result.usage)

    record = asyncio.run(run_rollout(text, question, chat, caps))
    assert len(record.sub_calls) == 1 and handed
    cut = next(c for c in sub_views[-1].calls if c.args["code"].startswith("# pieces"))
    bounds = [b for _, b in json.loads(cut.output)[:-1]]
    # Several pieces, and a paragraph break where one of them ends.
    assert len(bounds) >= 2 and any("\n\n" in text[b - 2 : b + 2] for b in bounds)
    # The question is about no one in the text: the sub-call reads every piece, then its reader
    # is handed the whole slice, line breaks and all.
    assert handed[-1] == text


def test_a_teacher_statement_ending_a_paragraph_at_a_piece_boundary_is_read() -> None:
    """A held-out chain whose first hop ("Staezour Stegum owed every skill to Senel Jyvar.") ends
    its paragraph where the sub-call's slice is cut into REPL pieces: the sub-call keeps the
    statement and the reference follows it to the teacher's birth year."""
    row = next(
        r
        for r in build_split("heldout", 500, doc_tokens=16_000)
        if r.family == "multi_hop" and "Staezour Stegum" in r.question
    )
    record, scores = run(fathom.POLICIES["fathom-reference"](), row)
    assert scores["correctness"] == 1.0, (row.question, row.answer, record.final_answer)


def test_a_printed_piece_gets_back_only_its_own_line_breaks() -> None:
    """The bare piece gets its stripped line breaks back; an error, a truncation or a restart
    note is not padded out to the piece's length but ends in one line break (read as a cut)."""
    from fathom_lab.ladder.planner import _printed_piece

    assert _printed_piece("It ends here.", 15) == "It ends here.\n\n"
    assert _printed_piece("Mid sentence", 12) == "Mid sentence"
    assert _printed_piece("Error: at most 8 tool calls per reply", 3_000).count("\n") == 1
    cut = "x" * 900 + "\n[output truncated: 3000 chars produced, first 900 shown; print less]"
    assert _printed_piece(cut, 3_000) == cut + "\n"
    note = "[sandbox restarted: the worker stopped]\nText"
    assert _printed_piece(note, 3_000) == note + "\n"
