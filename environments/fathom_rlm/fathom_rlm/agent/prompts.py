"""System prompts and first messages for the three roles a model plays in a rollout.

The root and the sub-calls with tools are told the size of their text, never its content. Each
system prompt opens with a fixed role line, so a reader of a transcript (or a scripted policy) can
tell the roles apart without guessing.
"""

from __future__ import annotations

from typing import Any

from fathom_rlm.agent.caps import RolloutCaps
from fathom_rlm.agent.chat import Message, chars_to_tokens

ROOT_ROLE = "You answer a question about a long document that you cannot see."
SUB_ROLE = "You answer a sub-question about a text that you cannot see."
READER_ROLE = "You answer a sub-question using only the text given below it."
QUESTION_PREFIX = "Question: "
TEXT_PREFIX = "\n\nText:\n"
NOT_FOUND = "not found"


def _output_cap(caps: RolloutCaps) -> int | None:
    value: Any = getattr(caps.sandbox, "max_output_chars", None)
    return value if isinstance(value, int) else None


def _tools_text(document_chars: int, depth: int, caps: RolloutCaps) -> str:
    out_cap = _output_cap(caps)
    cut = f" Output beyond {out_cap:,} characters is cut." if out_cap else ""
    lines = [
        "Tools:",
        "- repl(code): runs Python in a persistent sandbox where `doc` is the text (a str) and "
        "variables persist between calls. Only what you print() is returned."
        f"{cut} There are no imports: use the helpers re_finditer(pattern, text) (a list of "
        "(start, end, match, groups)), re_search, re_findall, re_count, re_escape, counter and "
        "most_common, and plain Python.",
    ]
    if depth < caps.max_depth:
        nested = (
            "The sub-call gets the same tools over its slice."
            if depth + 1 < caps.max_depth
            else "The sub-call reads the slice and answers in one reply."
        )
        lines.append(
            "- llm(prompt, slice): asks a focused sub-question about part of the text. `slice` is "
            f'a character range "start:end" of doc (for example "1200:5200") or the name of a '
            f"REPL variable holding a str. At most {caps.max_slice_chars:,} characters "
            f"(about {chars_to_tokens(caps.max_slice_chars):,} tokens). {nested} Inside repl "
            "code, llm(prompt, text) does the same with a str and returns the answer, and "
            "llm_batch([(prompt, text), ...]) asks several at once "
            f"({caps.max_parallel_sub_calls} in parallel) and returns their answers in order "
            '(a failed one as "Error: ..."); a list of slices does the same for the llm tool.'
        )
    return "\n".join(lines)


def _answer_rule(caps: RolloutCaps) -> str:
    return (
        "When you know the answer, reply without tool calls and put only the answer (a name, "
        f"place, number or date, at most {caps.max_answer_chars} characters) inside "
        "<answer>...</answer>, exactly once."
    )


def root_system_prompt(document_chars: int, caps: RolloutCaps) -> str:
    return "\n\n".join(
        [
            f"{ROOT_ROLE} The document is the Python str `doc`: {document_chars:,} characters, "
            f"about {chars_to_tokens(document_chars):,} tokens, far more than you can read. "
            "You see only what your tools return.",
            _tools_text(document_chars, 0, caps),
            "Search first (for example re_finditer over doc for a name in the question), then "
            "read only the passages you need; keep tool outputs short. You have "
            f"{caps.max_turns} turns and {caps.max_sub_calls} sub-calls in total.",
            _answer_rule(caps),
        ]
    )


def sub_system_prompt(document_chars: int, depth: int, caps: RolloutCaps) -> str:
    return "\n\n".join(
        [
            f"{SUB_ROLE} The text is the Python str `doc`: {document_chars:,} characters, about "
            f"{chars_to_tokens(document_chars):,} tokens. You see only what your tools return.",
            _tools_text(document_chars, depth, caps),
            f"You have {caps.sub_max_turns} turns. {_answer_rule(caps)} If the text does not "
            f"contain the answer, answer <answer>{NOT_FOUND}</answer>.",
        ]
    )


def reader_system_prompt(caps: RolloutCaps) -> str:
    return (
        f"{READER_ROLE} Reply with the answer inside <answer>...</answer>, at most "
        f"{caps.max_answer_chars} characters. If the text does not contain the answer, reply "
        f"<answer>{NOT_FOUND}</answer>."
    )


def question_message(question: str) -> Message:
    return {"role": "user", "content": f"{QUESTION_PREFIX}{question}"}


def reader_message(prompt: str, text: str) -> Message:
    return {"role": "user", "content": f"{QUESTION_PREFIX}{prompt}{TEXT_PREFIX}{text}"}
