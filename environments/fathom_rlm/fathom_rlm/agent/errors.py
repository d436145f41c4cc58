"""The kind of a failed tool call, read from the message the environment gave the model.

The environment's messages (`schemas`, `tools`, the sandbox) name what went wrong; the first rule
that matches names the kind. Order matters: a bad slice's message also says "slice", which only
the slice rule should claim. Refusals (a `ToolError`, which `tool_errors` counts) fall under the
first kinds; a cell whose code raised or ran out of time under the last two.
"""

from __future__ import annotations

import re

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("call_not_json", r"not valid JSON|must be a JSON object|nested more than"),
        ("unknown_tool", r"^unknown tool"),
        ("bad_slice", r'^slice "|^the slice is|^the text has|REPL variable|not a str\b'),
        # A JSON schema's own keys sent as the call's arguments (a copy of the tool's schema).
        (
            "schema_as_arguments",
            r"unexpected arguments .*"
            r"\b(type|description|required|additionalProperties|properties)\b",
        ),
        (
            "bad_arguments",
            r"is missing |unexpected arguments|must be a string|argument \w+ is empty"
            r"|not valid text|could not be read|are too long|^code is |^prompt is "
            r"|takes two str arguments|takes a list of",
        ),
        ("over_budget", r"budget is used up|tool calls per reply|not available at this depth"),
        ("code_timed_out", r"timed out|TimeoutError|CPULimitError"),
        ("code_raised", r"^\w*(Error|Exception)\b"),
    )
)

ERROR_KINDS: tuple[str, ...] = (*(kind for kind, _ in _RULES), "other_tool_error")
"""Every kind, in a fixed order."""


def error_kind(message: str) -> str:
    """The kind of an error message (the text after "Error: "), "other_tool_error" if none."""
    # The environment's own messages are short: a long one is classified by its start, so the
    # patterns' wildcards never scan far.
    message = message[:2_000].strip()
    return next((kind for kind, rule in _RULES if rule.search(message)), "other_tool_error")
