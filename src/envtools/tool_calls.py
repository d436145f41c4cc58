"""Tool calls for a chat model whose template knows no tools: described in text, parsed from text.

`envtools.local_model` serves models whose own chat template has only roles and text (ChatML:
SmolLM2). To offer OpenAI-style `tools`, the request is rewritten before the template sees it:

* the system message gains a preamble (`tool_preamble`) that lists each tool as its JSON schema
  and asks for calls written as ``<tool_call>{"name": NAME, "arguments": {...}}</tool_call>``,
  one block per call (the convention of several open instruct models' templates);
* an earlier assistant turn's `tool_calls` are written back in that same form, and a `tool`
  message stays a `tool` turn, so the model sees its own calls and their results as text.

The reply is parsed back (`parse_reply`): every ``<tool_call>`` block becomes one OpenAI tool call
and the text outside the blocks is the content. A block that is not valid JSON, or is cut off by
the token cap, still becomes a call (its name when one can be read, its raw text as arguments), so
the environment answers it with an error the model can see rather than losing it. Nothing here
constrains decoding: a model may write anything, and what it wrote is what comes back.

Standard library only, so the parser is tested without a model.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from typing import Any

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(re.escape(OPEN) + r"(.*?)(?:" + re.escape(CLOSE) + r"|\Z)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]{1,200})"')


_DONE = (
    "Each result comes back in a message from the tool. Reply without a tool call when you are "
    "done."
)

# The "schemas" preamble around the schemas, one per line (also inside `chat_template`).
_SCHEMAS_HEAD = "You can call these tools (JSON schemas):\n"
_SCHEMAS_TAIL = (
    "\nTo call a tool, write exactly one block per call:\n"
    f'{OPEN}{{"name": "TOOL_NAME", "arguments": {{"ARG": "VALUE"}}}}{CLOSE}\n{_DONE}'
)

PREAMBLES = ("schemas", "calls")
"""How the preamble describes the tools: "schemas" lists each tool's JSON schema and one generic
block; "calls" shows, for each tool, its description and a block with its own argument names
(a 135M model fine-tuned on "schemas" copied the schema's own keys into its arguments)."""


def tool_preamble(tools: list[dict[str, Any]], style: str = "schemas") -> str:
    """The text appended to the system message when tools are offered."""
    if style not in PREAMBLES:
        raise ValueError(f"style must be one of {PREAMBLES}, got {style!r}")
    if style == "calls":
        lines = ["You can call these tools, one block per call:"]
        for tool in tools:
            fn = _function(tool)
            parameters = fn.get("parameters") if isinstance(fn.get("parameters"), dict) else {}
            names = parameters.get("properties") or {}
            example = {"name": fn.get("name"), "arguments": {name: "..." for name in names}}
            lines += [f"- {fn.get('name')}: {fn.get('description', '')}".rstrip()]
            lines += [f"{OPEN}{json.dumps(example, ensure_ascii=False)}{CLOSE}"]
        lines += ['Put your own values in place of "...".', _DONE]
        return "\n".join(lines)
    schemas = "\n".join(json.dumps(_function(t), ensure_ascii=False) for t in tools)
    return f"{_SCHEMAS_HEAD}{schemas}{_SCHEMAS_TAIL}"


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    fn = tool.get("function") if isinstance(tool, dict) else None
    return fn if isinstance(fn, dict) else {"name": str(tool)}


def text_of(content: Any) -> str:
    """A message's content as text: a string as is, the text parts of a list, else empty."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def render_call(call: dict[str, Any]) -> str:
    """An OpenAI tool call as the block the model is asked to write."""
    fn = call.get("function") if isinstance(call, dict) else None
    fn = fn if isinstance(fn, dict) else {}
    arguments = fn.get("arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(json.JSONDecodeError, RecursionError):  # else shown as is
            arguments = json.loads(arguments)
    body = json.dumps({"name": fn.get("name"), "arguments": arguments}, ensure_ascii=False)
    return f"{OPEN}{body}{CLOSE}"


def prepare_messages(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, style: str = "schemas"
) -> list[dict[str, str]]:
    """OpenAI chat messages as plain `{role, content}` text turns for a tool-less template."""
    out: list[dict[str, str]] = []
    for message in messages:
        role = str(message.get("role") or "user")
        content = text_of(message.get("content"))
        calls = message.get("tool_calls") or []
        if role == "assistant" and isinstance(calls, list) and calls:
            content = "\n".join([content, *(render_call(c) for c in calls)]).strip()
        out.append({"role": role, "content": content})
    if tools:
        preamble = tool_preamble(tools, style)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{preamble}".strip()}
        else:
            out.insert(0, {"role": "system", "content": preamble})
    return out


def parse_reply(text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """(content, tool_calls) of a generated reply; content is None when only calls remain."""
    calls = [_call(match.group(1)) for match in _BLOCK.finditer(text)]
    content = _BLOCK.sub("", text).strip()
    return (content or None) if calls else content, calls


def _call(body: str) -> dict[str, Any]:
    """One block as an OpenAI tool call; unparseable JSON keeps its raw text as arguments."""
    name, arguments = "", body.strip()
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, RecursionError):
        data = None
        found = _NAME.search(body)
        name = found.group(1) if found else ""
    if isinstance(data, dict):
        raw_name = data.get("name")
        name = raw_name if isinstance(raw_name, str) else ""
        value = data.get("arguments", data.get("parameters", {}))
        arguments = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return {
        "id": f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


# --------------------------------------------------- the same convention inside a chat template

# `prepare_messages` in Jinja: the turns are rewritten, then the model's own template renders them.
_PREPARE_JINJA = r"""
{%- set ns = namespace(turns=[], calls=[], schemas=[]) -%}
{%- for m in messages -%}
  {%- if m.content is string -%}{%- set text = m.content -%}
  {%- elif m.content is iterable and m.content is not mapping -%}
    {%- set text = m.content | select('mapping') | selectattr('text', 'defined')
        | map(attribute='text') | join('') -%}
  {%- else -%}{%- set text = '' -%}{%- endif -%}
  {%- set role = (m.role or 'user') | string -%}
  {%- if role == 'assistant' and m.tool_calls is iterable and m.tool_calls is not string
        and m.tool_calls | length > 0 -%}
    {%- set ns.calls = [text] -%}
    {%- for call in m.tool_calls -%}
      {%- set fn = call.function if call is mapping and call.function is mapping else {} -%}
      {%- set name = fn.name if fn.name is defined else none -%}
      {%- if fn.arguments is string -%}
        {%- set block = '{"name": ' ~ (name | tojson) ~ ', "arguments": ' ~ fn.arguments ~ '}' -%}
      {%- else -%}
        {%- set arguments = fn.arguments if fn.arguments is defined else none -%}
        {%- set block = {'name': name, 'arguments': arguments} | tojson -%}
      {%- endif -%}
      {%- set ns.calls = ns.calls + ['<tool_call>' ~ block ~ '</tool_call>'] -%}
    {%- endfor -%}
    {%- set text = ns.calls | join('\n') | trim -%}
  {%- endif -%}
  {%- set ns.turns = ns.turns + [{'role': role, 'content': text}] -%}
{%- endfor -%}
{%- if tools -%}
  {%- for t in tools -%}
    {%- set fn = t.function if t is mapping and t.function is mapping else {'name': t | string} -%}
    {%- set ns.schemas = ns.schemas + [fn | tojson] -%}
  {%- endfor -%}
  {%- set preamble = SCHEMAS_HEAD ~ (ns.schemas | join('\n')) ~ SCHEMAS_TAIL -%}
  {%- if ns.turns and ns.turns[0].role == 'system' -%}
    {%- set system = (ns.turns[0].content ~ '\n\n' ~ preamble) | trim -%}
    {%- set ns.turns = [{'role': 'system', 'content': system}] + ns.turns[1:] -%}
  {%- else -%}
    {%- set ns.turns = [{'role': 'system', 'content': preamble}] + ns.turns -%}
  {%- endif -%}
{%- endif -%}
{%- set messages = ns.turns -%}
"""


def chat_template(base: str) -> str:
    """A Jinja chat template that renders tools and tool calls exactly as `prepare_messages` (with
    the "schemas" preamble) followed by `base` does, for trainers that render conversations
    themselves (TRL's tool loop). `base` is a template with roles and text only. Arguments given
    as a JSON string are written as given, not re-encoded (TRL's calls carry objects)."""
    # The preamble's fixed text goes in as Jinja string literals (JSON's escapes are Jinja's).
    prepare = _PREPARE_JINJA.replace("SCHEMAS_HEAD", json.dumps(_SCHEMAS_HEAD))
    return prepare.replace("SCHEMAS_TAIL", json.dumps(_SCHEMAS_TAIL)) + base


RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": OPEN,
            "close_pattern": re.escape(CLOSE) + r"\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}
"""How transformers' `parse_response` reads a ChatML reply written in this convention: each
``<tool_call>`` block a call, the rest the content (a tokenizer's `response_template`)."""
