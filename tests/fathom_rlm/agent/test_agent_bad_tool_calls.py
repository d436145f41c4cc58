"""Every malformed tool call gets a clear "Error:" tool message and the rollout goes on.

A hand-written corpus of the shapes a model (or a broken server) can send, plus a seeded fuzz of
mutated arguments, all run through the real loop and the real sandbox.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from fathom_rlm.agent import ChatReply, RolloutCaps, prompts, run_rollout
from fathom_rlm.agent.tools import parse_arguments

DOCUMENT = "Orin Vale lived in Denhan. " + "Filler about the weather. " * 400
DEEP = 100_000  # far past Python's recursion limit


def call(name: Any, arguments: Any, call_id: str = "c") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def deep_dict(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


# (label, raw tool call). Each must be answered with an error; none may end the rollout.
CORPUS: list[tuple[str, Any]] = [
    ("not json", call("repl", "print(1)")),
    ("truncated json", call("repl", '{"code": "print(1)"')),
    ("single quotes", call("repl", "{'code': 'print(1)'}")),
    ("trailing garbage", call("repl", '{"code": "print(1)"} extra')),
    ("deep list", call("repl", "[" * DEEP + "]" * DEEP)),
    ("deep object", call("repl", '{"a":' * DEEP + "1" + "}" * DEEP)),
    ("deep unclosed", call("repl", "[" * DEEP)),
    ("deep inside code key", call("repl", '{"code": ' + "[" * 5_000 + "]" * 5_000 + "}")),
    ("deep dict not str", call("repl", deep_dict(5_000))),
    ("huge argument string", call("repl", json.dumps({"code": "x" * 2_000_000}))),
    ("huge code", call("repl", json.dumps({"code": "#" * 9_000}))),
    ("huge int literal", call("repl", '{"code": ' + "9" * 10_000 + "}")),
    ("nan", call("repl", '{"code": NaN}')),
    ("array", call("repl", '["print(1)"]')),
    ("number", call("repl", "42")),
    ("json null", call("repl", "null")),
    ("json true", call("repl", "true")),
    ("json string", call("repl", '"print(1)"')),
    ("missing code", call("repl", "{}")),
    ("extra keys", call("repl", json.dumps({"code": "print(1)", "x": 1}))),
    (
        "many huge extra keys",
        call("repl", json.dumps({"code": "1", **{"k" * 900 + str(i): 0 for i in range(9)}})),
    ),
    ("code int", call("repl", '{"code": 5}')),
    ("code list", call("repl", '{"code": ["print(1)"]}')),
    ("code object", call("repl", '{"code": {"a": 1}}')),
    ("code null", call("repl", '{"code": null}')),
    ("code empty", call("repl", '{"code": ""}')),
    ("code blank", call("repl", '{"code": "   \\n\\t"}')),
    ("lone surrogate", call("repl", '{"code": "print(\\"\\ud800\\")"}')),
    ("nul byte in code", call("repl", '{"code": "print(1)\\u0000"}')),
    ("arguments list", call("repl", ["print(1)"])),
    ("arguments int", call("repl", 7)),
    ("arguments bytes", call("repl", b'{"code": "print(1)"}')),
    ("unknown tool", call("shell", '{"cmd": "ls"}')),
    ("tool name empty", call("", '{"code": "print(1)"}')),
    ("tool name none", call(None, '{"code": "print(1)"}')),
    ("tool name int", call(3, '{"code": "print(1)"}')),
    ("tool name huge", call("r" * 100_000, "{}")),
    ("function not a dict", {"id": "c", "type": "function", "function": "repl"}),
    ("call not a dict", "repl(print(1))"),
    ("llm missing slice", call("llm", '{"prompt": "who?"}')),
    ("llm slice int", call("llm", '{"prompt": "who?", "slice": 5}')),
    ("llm slice reversed", call("llm", '{"prompt": "who?", "slice": "50:10"}')),
    ("llm slice past end", call("llm", '{"prompt": "who?", "slice": "0:99999999999"}')),
    ("llm slice garbage", call("llm", '{"prompt": "who?", "slice": "abc:def"}')),
    ("llm slice too big", call("llm", json.dumps({"prompt": "who?", "slice": "0:10000"}))),
    ("llm unknown variable", call("llm", '{"prompt": "who?", "slice": "nothing_here"}')),
    ("llm prompt too long", call("llm", json.dumps({"prompt": "p" * 5_000, "slice": "0:10"}))),
    ("llm prompt object", call("llm", '{"prompt": {"q": 1}, "slice": "0:10"}')),
]


ANSWER = {"role": "assistant", "content": "<answer>Denhan</answer>"}


class Script:
    """Root turns and sub-call turns each reply from their own queue, then answer."""

    def __init__(self, root: list[dict[str, Any]], sub: list[dict[str, Any]] = ()) -> None:
        self.queues = {True: list(root), False: list(sub)}

    async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        queue = self.queues[messages[0]["content"].startswith(prompts.ROOT_ROLE)]
        return ChatReply(queue.pop(0) if queue else ANSWER)


def bulk(calls: list[Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": calls}


CAPS = RolloutCaps(max_turns=200, max_tool_calls_per_turn=len(CORPUS) + 1, max_slice_chars=5_000)


def run(
    replies: list[dict[str, Any]],
    caps: RolloutCaps = CAPS,
    sub_replies: list[dict[str, Any]] = (),
) -> tuple[Any, list[Any]]:
    transcript: list[dict[str, Any]] = []
    script = Script(replies, list(sub_replies))
    question = "Where did Orin Vale live?"
    record = asyncio.run(run_rollout(DOCUMENT, question, script, caps, transcript=transcript))
    return record, transcript


def tool_messages(transcript: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in transcript if m["role"] == "tool"]


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30
    assert len({label for label, _ in CORPUS}) == len(CORPUS)


def test_every_bad_call_is_a_tool_error_and_the_rollout_goes_on() -> None:
    valid = call("repl", json.dumps({"code": "print('still alive')"}))
    record, transcript = run([bulk([raw for _, raw in CORPUS] + [valid])])
    outputs = tool_messages(transcript)
    assert len(outputs) == len(CORPUS) + 1
    for (label, _), output in zip(CORPUS, outputs, strict=False):
        assert output.startswith("Error:") or "\nError:" in output, (label, output[:200])
        assert len(output) < 2_000, label  # the error never echoes a huge argument back
    assert outputs[-1] == "still alive"  # the sandbox survived all of it
    assert record.ended_by == "answer"
    assert record.final_answer == "Denhan"
    assert record.tool_errors >= len(CORPUS) - 1  # the NUL-byte cell may fail inside the REPL


def test_each_bad_call_alone_in_its_own_turn() -> None:
    # One call per turn: the transcript re-sent to the model carries each bad call verbatim-ish,
    # so the accounting of the next request must cope with it too.
    record, transcript = run([bulk([raw]) for _, raw in CORPUS])
    assert record.ended_by == "answer"
    assert record.turns == len(CORPUS) + 1
    assert len(tool_messages(transcript)) == len(CORPUS)


def test_bad_calls_inside_a_sub_agent() -> None:
    calls = [raw for _, raw in CORPUS[:20]]
    root = [bulk([call("llm", json.dumps({"prompt": "Where?", "slice": "0:3000"}))])]
    record, transcript = run(root, sub_replies=[bulk(calls)])  # the sub-agent's first turn
    assert record.ended_by == "answer"
    assert tool_messages(transcript) == ["Denhan"]
    assert record.tool_errors >= 19


def _mutate(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 6)):
        op = rng.random()
        pos = rng.randint(0, len(chars))
        if op < 0.35 and chars:
            del chars[min(pos, len(chars) - 1)]
        elif op < 0.7:
            chars.insert(pos, rng.choice('{}[]":,\\ \x00\ud800e1-n'))
        else:
            chars.insert(pos, rng.choice(["[" * 3_000, "{" * 3_000, '"', "\\u", "9" * 5_000]))
    return "".join(chars)


@pytest.mark.parametrize("seed", [0, 1])
def test_fuzzed_arguments_never_escape_the_loop(seed: int) -> None:
    rng = random.Random(seed)
    templates = [
        ("repl", json.dumps({"code": "x = 1"})),
        ("llm", json.dumps({"prompt": "who?", "slice": "0:20"})),
    ]
    calls = []
    for i in range(120):
        name, args = templates[i % 2]
        calls.append(call(name, _mutate(rng, args), f"c{i}"))
    caps = RolloutCaps(max_turns=40, max_tool_calls_per_turn=8, max_sub_calls=200)
    turns = [bulk(calls[i : i + 8]) for i in range(0, len(calls), 8)]
    record, transcript = run(turns, caps)
    assert record.ended_by == "answer"
    assert len(tool_messages(transcript)) == len(calls)
    assert all(isinstance(m, str) and m for m in tool_messages(transcript))


def test_parse_arguments_never_raises_anything_but_tool_error() -> None:
    from fathom_rlm.agent import ToolError

    caps = RolloutCaps()
    for label, raw in CORPUS:
        fn = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(fn, dict) or fn.get("name") not in ("repl", "llm"):
            continue
        try:
            parse_arguments(fn["name"], fn["arguments"], caps)
        except ToolError:
            pass
        except Exception as exc:  # pragma: no cover - the failure this test exists for
            pytest.fail(f"{label}: {type(exc).__name__}: {exc}")


def test_a_sandbox_that_cannot_start_is_a_tool_error() -> None:
    from fathom_rlm.sandbox import SandboxConfig

    # A start deadline no worker can meet: the real start fails with a SandboxError.
    caps = RolloutCaps(sandbox=SandboxConfig(start_timeout_s=1e-6))
    record, transcript = run([bulk([call("repl", json.dumps({"code": "x = 1"}))])], caps)
    [output] = tool_messages(transcript)
    assert output.startswith("Error: the REPL could not start")
    assert record.ended_by == "answer" and record.final_answer == "Denhan"


def test_an_oversize_variable_as_slice_is_refused_without_copying_it() -> None:
    make = call("repl", json.dumps({"code": "big = 'x' * 2_000_000\nsmall = doc[:100]"}))
    use_big = call("llm", json.dumps({"prompt": "Where?", "slice": "big"}))
    use_small = call("llm", json.dumps({"prompt": "Where?", "slice": "small"}))
    record, transcript = run([bulk([make]), bulk([use_big, use_small])])
    _, big, small = tool_messages(transcript)
    assert big.startswith("Error: cannot use REPL variable 'big'")
    assert "2,000,000" in big and "Slice it smaller first." in big
    assert small == "Denhan"  # the same session goes on serving variables
    assert record.ended_by == "answer"


def test_surrogate_escapes_in_an_llm_cell_reach_the_sub_call_as_valid_text() -> None:
    # A first cell of exactly `print(llm("literal", doc))` is served without a worker; a lone
    # surrogate escape in the literal (low DC00-DFFF as well as high) must still become valid
    # text, as a worker makes it, before the sub-call's model client sees it.
    sub_prompts: list[str] = []

    class Recording(Script):
        async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> ChatReply:
            if not messages[0]["content"].startswith(prompts.ROOT_ROLE):
                sub_prompts.append(json.dumps(messages, ensure_ascii=False))
            return await super().__call__(messages, tools)

    cells = ['print(llm("\\udc00 who?", doc[0:40]))', 'print(llm("\\uDFFF where?", doc[5:60]))']
    turns = [bulk([call("repl", json.dumps({"code": cell}))]) for cell in cells]
    for turn in turns:
        transcript: list[dict[str, Any]] = []
        script = Recording([turn])
        asyncio.run(run_rollout(DOCUMENT, "Where?", script, CAPS, transcript=transcript))
        [output] = tool_messages(transcript)
        assert "UnicodeEncodeError" not in output and output.strip() == "Denhan", output
    assert len(sub_prompts) == len(cells)
    for text in sub_prompts:
        text.encode("utf-8")  # a lone surrogate cannot be sent to a model server
        assert "\ufffd" in text
