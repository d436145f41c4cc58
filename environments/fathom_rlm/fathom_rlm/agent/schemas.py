"""The two tools' schemas and the checks of their arguments, with the error the model sees.

Every way a model can get a tool call wrong (malformed or deeply nested JSON, wrong types, missing
or extra arguments, oversize input, a bad slice) raises `ToolError`, whose message is shown to the
model as the tool's output; nothing else escapes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fathom_rlm.agent.caps import RolloutCaps
from fathom_rlm.agent.chat import ToolSchema

_RANGE = re.compile(r"\s*(\d{1,12})\s*:\s*(\d{1,12})\s*")
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_ARGS_SLACK = 4_096  # room for JSON quoting around the largest allowed argument
_MAX_JSON_DEPTH = 32  # the arguments are a flat object; anything deeper is not a valid call


class ToolError(Exception):
    """A mistake the model made with a tool; its message is shown to the model."""


def repl_schema() -> ToolSchema:
    return {
        "type": "function",
        "function": {
            "name": "repl",
            "description": (
                "Run Python code in a persistent sandbox where `doc` is the text. Variables "
                "persist between calls; print() what you want to see."
            ),
            "parameters": {
                "type": "object",
                "properties": {"code": {"type": "string", "description": "Python code to run."}},
                "required": ["code"],
                "additionalProperties": False,
            },
        },
    }


def llm_schema(max_slice_chars: int) -> ToolSchema:
    return {
        "type": "function",
        "function": {
            "name": "llm",
            "description": (
                "Ask a focused sub-question about a slice of the text; returns the answer. "
                f"The slice is at most {max_slice_chars} characters. With a list of slices, "
                "asks each at once and returns the answers as a JSON list."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "description": "The sub-question."},
                    "slice": {
                        "anyOf": [
                            {"type": "string"},
                            {"type": "array", "items": {"type": "string"}, "minItems": 1},
                        ],
                        "description": (
                            'A character range "start:end" of doc, or the name of a REPL '
                            "variable holding a str; or a list of them."
                        ),
                    },
                },
                "required": ["prompt", "slice"],
                "additionalProperties": False,
            },
        },
    }


def tool_schemas(depth: int, caps: RolloutCaps) -> list[ToolSchema]:
    """The tools an agent at `depth` is offered: repl always, llm while below the depth cap."""
    if depth < caps.max_depth:
        return [repl_schema(), llm_schema(caps.max_slice_chars)]
    return [repl_schema()]


def parse_arguments(name: str, raw: Any, caps: RolloutCaps) -> dict[str, Any]:
    """Validated arguments of a `repl` or `llm` call; raises ToolError with a usable message."""
    expected = ("code",) if name == "repl" else ("prompt", "slice")
    usage = '{"code": "<python>"}' if name == "repl" else '{"prompt": "<question>", "slice": "a:b"}'
    if raw is None or raw == "":
        args: Any = {}
    elif isinstance(raw, dict):
        args = raw
    elif isinstance(raw, str):
        if len(raw) > max(caps.max_code_chars, caps.max_prompt_chars) + _ARGS_SLACK:
            raise ToolError(f"arguments for {name} are too long ({len(raw):,} characters).")
        args = _load_json(name, raw, usage)
    else:
        raise ToolError(f"arguments for {name} must be a JSON object. Expected {usage}.")
    if not isinstance(args, dict):
        raise ToolError(f"arguments for {name} must be a JSON object. Expected {usage}.")
    missing = [k for k in expected if k not in args]
    if missing:
        raise ToolError(f"{name} is missing {', '.join(missing)}. Expected {usage}.")
    extra = [str(k)[:40] for k in args if k not in expected]
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise ToolError(f"{name} got unexpected arguments {shown}. Expected {usage}.")
    for key in expected:
        value = args[key]
        if key == "slice" and isinstance(value, list):
            # llm over a list of slices: each an entry of its own, up to the sub-call budget.
            most = max(1, caps.max_sub_calls)
            if not 1 <= len(value) <= most:
                raise ToolError(f"llm takes a list of 1 to {most} slices, not {len(value)}.")
            for spec in value:
                _check_text(name, key, spec)
        else:
            _check_text(name, key, value)
    if name == "repl" and len(args["code"]) > caps.max_code_chars:
        raise ToolError(
            f"code is {len(args['code']):,} characters; the limit is {caps.max_code_chars:,}."
        )
    if name == "llm" and len(args["prompt"]) > caps.max_prompt_chars:
        raise ToolError(
            f"prompt is {len(args['prompt']):,} characters; the limit is "
            f"{caps.max_prompt_chars:,}. Pass the text through slice instead."
        )
    return args


def _check_text(name: str, key: str, value: Any) -> None:
    """A string argument: a str, not blank, and valid text."""
    if not isinstance(value, str):
        raise ToolError(f"{name} argument {key} must be a string, not {type(value).__name__}.")
    if not value.strip():
        raise ToolError(f"{name} argument {key} is empty.")
    if not _encodable(value):
        # A lone surrogate ("\ud800" in JSON) cannot cross the sandbox pipe as UTF-8.
        raise ToolError(f"{name} argument {key} contains characters that are not valid text.")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _load_json(name: str, raw: str, usage: str) -> Any:
    """`json.loads`, with every way it can fail on model text turned into a ToolError.

    Deep nesting raises RecursionError (not a ValueError) and lone surrogates can surface later as
    UnicodeError, so those are refused here; the rollout must never see them as exceptions.
    """
    if _nesting_depth(raw) > _MAX_JSON_DEPTH:
        raise ToolError(
            f"arguments for {name} are nested more than {_MAX_JSON_DEPTH} levels deep. "
            f"Expected {usage}."
        )
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"arguments for {name} are not valid JSON ({exc.msg}). Expected {usage}."
        ) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer literal with 5,000 digits
        reason = str(exc).split(";")[0][:80] or type(exc).__name__
        raise ToolError(
            f"arguments for {name} are not valid JSON ({reason}). Expected {usage}."
        ) from None


def _nesting_depth(raw: str) -> int:
    """Deepest bracket nesting outside strings; a cheap upper bound before parsing."""
    if raw.count("[") + raw.count("{") <= _MAX_JSON_DEPTH:
        return 0  # cannot be deeper than the number of opening brackets
    depth = deepest = 0
    in_string = escaped = False
    for ch in raw:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_slice(spec: str, document_chars: int) -> tuple[int, int] | str:
    """A `start:end` range of the document, or a variable name; raises ToolError otherwise."""
    match = _RANGE.fullmatch(spec)
    if match:
        start, end = int(match.group(1)), int(match.group(2))
        if end <= start:
            raise ToolError(f'slice "{spec}" is empty: end must be greater than start.')
        if end > document_chars:
            raise ToolError(
                f'slice "{spec}" ends past the text, which has {document_chars:,} characters.'
            )
        return start, end
    name = spec.strip()
    if _IDENT.fullmatch(name):
        return name
    raise ToolError(
        f'slice must be a range "start:end" or a REPL variable name, not {spec[:40]!r}.'
    )
