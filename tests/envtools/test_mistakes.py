"""Mistakes by kind, read from saved transcripts: the real model's own fixtures, and tool errors
as the environment words them (each produced by the real tools, not written by hand)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from fathom_rlm.agent import RolloutCaps, RolloutTools

from envtools import mistakes

FIXTURES = Path(__file__).parent / "fixtures" / "real_model"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def test_the_real_runaway_reply_is_cut_repetition_and_no_tool_call() -> None:
    counts = mistakes.fathom_mistakes(load("fathom-runaway-repetition-truncated.json"))
    assert counts == Counter(cut_at_token_cap=1, runaway_repetition=1, no_tool_call=1)


def test_a_real_prose_answer_is_outside_the_tags() -> None:
    counts = mistakes.fathom_mistakes(load("fathom-prose-answer-no-tags.json"))
    assert counts == Counter(answer_outside_tags=1, no_tool_call=1)


def test_a_tagged_answer_after_a_call_has_no_mistake() -> None:
    line = {
        "ended_by": "answer",
        "replies": [{"message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}],
        "messages": [
            {"role": "assistant", "content": "", "tool_calls": [{"id": "a"}]},
            {"role": "tool", "content": "16070"},
            {"role": "assistant", "content": "<answer>Bornholtu</answer>"},
        ],
    }
    assert mistakes.fathom_mistakes(line) == Counter()


def test_an_empty_turn_is_counted() -> None:
    line = {
        "ended_by": "answer",
        "replies": [{"message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}],
        "messages": [{"role": "assistant", "content": ""}],
    }
    assert mistakes.fathom_mistakes(line) == Counter(
        empty_turn=1, no_tool_call=1, answer_outside_tags=1
    )


def test_gsm8k_real_completions() -> None:
    cut = load("gsm8k-runaway-truncated.json")
    assert mistakes.gsm8k_mistakes(cut["completion"], truncated=True) == Counter(
        cut_at_token_cap=1, runaway_repetition=1, no_boxed_answer=1
    )
    marker = load("gsm8k-hash-marker-no-boxed.json")
    assert mistakes.gsm8k_mistakes(marker["completion"], truncated=False) == Counter(
        no_boxed_answer=1
    )
    assert mistakes.gsm8k_mistakes("so \\boxed{18}", truncated=False) == Counter()


def test_the_warm_started_models_real_mistakes() -> None:
    line = load("fathom-sft-bad-json-then-made-up-arguments-max-turns.json")
    # 12 turns, none ran: one call not JSON, then 11 with made-up arguments ("output_type")
    assert mistakes.fathom_mistakes(line) == Counter(call_not_json=1, bad_arguments=11)
    line = load("fathom-sft-schema-keys-as-arguments-max-turns.json")
    assert mistakes.fathom_mistakes(line) == Counter(schema_as_arguments=24)
    line = load("fathom-sft-runaway-inside-answer-tags-truncated.json")  # "<answer><answer>..."
    counts = Counter(printed_nothing=2, cut_at_token_cap=1, runaway_repetition=1)
    assert mistakes.fathom_mistakes(line) == counts
    # One cell that printed nothing, then an answer in tags (the format gate passes): the
    # prompt's own example range.
    line = load("fathom-sft-copies-the-prompts-example-slice.json")
    assert mistakes.fathom_mistakes(line) == Counter(printed_nothing=1)


def test_repetition_needs_a_loop_not_a_long_reply() -> None:
    assert mistakes.repeats_itself("The answer is: " * 30)
    assert mistakes.repeats_itself("<answer>" * 40)
    varied = " ".join(f"step {i} adds {i * 3} apples to basket {i % 7}." for i in range(30))
    assert not mistakes.repeats_itself(varied)
    assert not mistakes.repeats_itself("The answer is: " * 3)  # too short to call a loop


# Each call as a model might make it, and the kind its real tool error must be counted under.
CALLS = [
    ("repl", '{"code": "print(1)"', "call_not_json"),
    ("repl", '["print(1)"]', "call_not_json"),
    ("shell", '{"cmd": "ls"}', "unknown_tool"),
    ("", "{}", "unknown_tool"),
    ("repl", '{"code": 42}', "bad_arguments"),
    ("repl", "{}", "bad_arguments"),
    ("repl", '{"code": "x", "name": "repl"}', "bad_arguments"),
    ("repl", '{"code": "x", "type": "object", "required": ["code"]}', "schema_as_arguments"),
    ("repl", '{"code": "x", "output_type": "str"}', "bad_arguments"),
    ("llm", '{"prompt": "?", "slice": "9:1"}', "bad_slice"),
    ("llm", '{"prompt": "?", "slice": "nothing_here"}', "bad_slice"),
    ("repl", '{"code": "x = ("}', "code_raised"),
    ("repl", '{"code": "print(undefined_name)"}', "code_raised"),
    ("repl", '{"code": "print(len(doc))"}', None),
]


@pytest.mark.parametrize(("name", "arguments", "kind"), CALLS)
def test_a_real_tool_error_is_counted_by_its_kind(
    name: str, arguments: str, kind: str | None
) -> None:
    async def call() -> str:
        tools = RolloutTools("a short document " * 20, None, RolloutCaps())
        try:
            return await tools.call(name, arguments)
        finally:
            await tools.close()

    output = asyncio.run(call())
    assert mistakes.tool_error_kind(output) == kind, output


def test_a_reply_cut_inside_its_call_is_counted_as_such() -> None:
    call = {"id": "a", "function": {"name": "repl", "arguments": '{"code": "print(doc[:'}}
    message = {"role": "assistant", "content": "", "tool_calls": [call]}
    line = {
        "ended_by": "truncated",
        "replies": [{"message": message, "finish_reason": "length"}],
        "messages": [message],
    }
    assert mistakes.fathom_mistakes(line) == Counter(cut_at_token_cap=1, cut_inside_call=1)
