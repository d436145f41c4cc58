"""The local model's tool-call format: tools described in the system message, calls parsed from
`<tool_call>` blocks; malformed and cut blocks still come back as calls (no model needed)."""

from __future__ import annotations

import json

import pytest

from envtools.tool_calls import parse_reply, prepare_messages, render_call, tool_preamble

REPL = {
    "type": "function",
    "function": {
        "name": "repl",
        "description": "runs Python",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}},
    },
}


def test_a_well_formed_call_becomes_an_openai_tool_call() -> None:
    text = (
        'Let me look.\n<tool_call>{"name": "repl", "arguments": {"code": "print(1)"}}</tool_call>'
    )
    content, calls = parse_reply(text)
    assert content == "Let me look."
    assert len(calls) == 1 and calls[0]["type"] == "function" and calls[0]["id"].startswith("call_")
    assert calls[0]["function"]["name"] == "repl"
    assert json.loads(calls[0]["function"]["arguments"]) == {"code": "print(1)"}


def test_several_calls_keep_their_order_and_content_is_none_without_text() -> None:
    text = (
        '<tool_call>{"name": "repl", "arguments": {"code": "a"}}</tool_call>\n'
        '<tool_call>{"name": "llm", "arguments": {"prompt": "p", "slice": "0:10"}}</tool_call>'
    )
    content, calls = parse_reply(text)
    assert content is None
    assert [c["function"]["name"] for c in calls] == ["repl", "llm"]
    assert len({c["id"] for c in calls}) == 2


def test_a_reply_without_blocks_is_plain_content() -> None:
    assert parse_reply("<answer>Denhan</answer>") == ("<answer>Denhan</answer>", [])
    assert parse_reply("") == ("", [])


def test_bad_json_keeps_the_name_it_can_read_and_the_raw_text() -> None:
    _, calls = parse_reply('<tool_call>{"name": "repl", "arguments": {code: 1}}</tool_call>')
    assert calls[0]["function"]["name"] == "repl"
    assert calls[0]["function"]["arguments"] == '{"name": "repl", "arguments": {code: 1}}'


def test_a_block_cut_by_the_token_cap_is_still_a_call() -> None:
    content, calls = parse_reply('Searching <tool_call>{"name": "repl", "arguments": {"code": "pri')
    assert content == "Searching"
    assert calls[0]["function"]["name"] == "repl"
    assert calls[0]["function"]["arguments"].endswith('"pri')


def test_json_that_is_not_an_object_or_lacks_a_name_gives_an_empty_name() -> None:
    for body in ("[1, 2]", '{"arguments": {}}', "42", ""):
        _, calls = parse_reply(f"<tool_call>{body}</tool_call>")
        assert calls[0]["function"]["name"] == ""


def test_string_arguments_and_parameters_key_are_accepted() -> None:
    _, calls = parse_reply(
        '<tool_call>{"name": "repl", "arguments": "{\\"code\\": \\"x\\"}"}</tool_call>'
    )
    assert json.loads(calls[0]["function"]["arguments"]) == {"code": "x"}
    _, calls = parse_reply('<tool_call>{"name": "repl", "parameters": {"code": "y"}}</tool_call>')
    assert json.loads(calls[0]["function"]["arguments"]) == {"code": "y"}


def test_tools_join_the_system_message_and_past_calls_are_shown_in_the_same_form() -> None:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "repl", "arguments": '{"code": "x"}'},
    }
    messages = [
        {"role": "system", "content": "You answer questions."},
        {"role": "user", "content": "Q?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
    ]
    prepared = prepare_messages(messages, [REPL])
    assert [m["role"] for m in prepared] == ["system", "user", "assistant", "tool"]
    assert prepared[0]["content"].startswith("You answer questions.\n\n")
    assert tool_preamble([REPL]) in prepared[0]["content"]
    assert '"name": "repl"' in prepared[0]["content"]
    assert prepared[2]["content"] == render_call(call)
    # What the model is shown of its own call parses back to the same call.
    _, calls = parse_reply(prepared[2]["content"])
    assert calls[0]["function"]["name"] == "repl"
    assert json.loads(calls[0]["function"]["arguments"]) == {"code": "x"}
    assert all(isinstance(m["content"], str) for m in prepared)


def test_without_a_system_message_the_preamble_is_one_and_without_tools_nothing_is_added() -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    prepared = prepare_messages(messages, [REPL])
    assert prepared[0]["role"] == "system" and prepared[1] == {"role": "user", "content": "hi"}
    assert prepare_messages(messages, None) == [{"role": "user", "content": "hi"}]


def test_the_calls_preamble_shows_each_tools_own_call_and_no_schema_keys() -> None:
    preamble = tool_preamble([REPL], "calls")
    example = preamble.splitlines()[2]
    # The example block parses back as a call of the tool with its own argument names.
    _, calls = parse_reply(example)
    assert calls[0]["function"]["name"] == "repl"
    assert json.loads(calls[0]["function"]["arguments"]) == {"code": "..."}
    # No JSON-schema keys for a model to copy into its arguments, nor generic placeholders.
    for word in ('"type"', "properties", "TOOL_NAME", '"ARG"'):
        assert word not in preamble
    system = prepare_messages([{"role": "system", "content": "S"}], [REPL], "calls")[0]
    assert system["content"] == "S\n\n" + preamble
    with pytest.raises(ValueError, match="style"):
        tool_preamble([REPL], "prose")
