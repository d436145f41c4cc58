"""What one rollout did: tokens, tool calls, depth, turns, evidence shown, final answer.

Token accounting (documented in docs/rewards.md):

* Every model call (root turn or a turn inside a sub-call) is counted as prompt + completion
  tokens: the server's reported usage when it gives both numbers, else characters / 4 of the
  request (messages plus tool schemas) and of the reply.
* `root_tool_output_tokens` is characters / 4 of every tool message returned to the root.
* The budget the reward charges is `budget_tokens = total_tokens`: every token of every model
  call, the root's own prompts and completions included, so code the root writes is not free.

Evidence accounting: a text counts as seen only once it entered a model's context, i.e. the slice
in a plain reader's prompt, or a tool output that the agent who called the tool then read (it made
another model call). Handing a range to a sub-agent shows nothing by itself; what that sub-agent
then printed and read does. `depth_used` counts a level only if a sub-call at it read text.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from fathom_rlm.agent.errors import error_kind


@dataclass
class SubCallRecord:
    """One `llm()` sub-call, from the tool or from REPL code, at any depth."""

    depth: int
    kind: str
    """"rlm" (a small agent with tools) or "plain" (one completion, at the depth cap)."""
    origin: str
    """"tool" (the llm tool) or "repl" (llm() called inside REPL code)."""
    slice_source: str
    """"range" (`start:end`), "variable" (a REPL variable) or "repl" (text passed from code)."""
    slice_chars: int
    prompt_chars: int
    turns: int = 0
    tokens: int = 0
    answered: bool = False
    read_chars: int = 0
    """Characters of its own text that entered its context: the whole slice for a plain reader;
    for an agent, the lines of its tool outputs that are verbatim pieces of its text, counted
    once it read them. 0 means it never read its text (its depth level does not count)."""
    read_texts: list[str] = field(default_factory=list)
    """The pieces of its own text that entered its context (what `read_chars` counts): the
    reward credits the level only if they hold a supporting sentence."""
    seconds: float = 0.0
    """Wall seconds from its start to its answer."""


@dataclass
class RolloutRecord:
    """Mutable while the rollout runs; `summary()` is the JSON-serialisable view for traces."""

    document_chars: int = 0
    root_prompt_tokens: int = 0
    root_completion_tokens: int = 0
    root_tool_output_tokens: int = 0
    sub_prompt_tokens: int = 0
    sub_completion_tokens: int = 0
    usage_reported_calls: int = 0
    estimated_calls: int = 0
    turns: int = 0
    sub_turns: int = 0
    tool_calls: dict[str, int] = field(default_factory=dict)
    """Calls by tool name at any depth; names that are not tools are counted under "invalid"."""
    tool_errors: int = 0
    """Tool calls the environment refused (a `ToolError`), at any depth and from REPL code."""
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    """Refused calls and cells that failed, by `errors.error_kind`."""
    repl_seconds: float = 0.0
    """Wall seconds of REPL code at any depth, the sub-calls it waited for left out."""
    llm_batches: list[int] = field(default_factory=list)
    """The size of every batch of sub-calls (`llm_batch`, or the llm tool over a list)."""
    sub_calls: list[SubCallRecord] = field(default_factory=list)
    depth_reached: int = 0
    """Deepest sub-call started, whether or not it read anything (see `depth_used`)."""
    touched_document: bool = False
    """The root's code touched `doc`, a plain reader was shown part of it, or a sub-agent read
    part of its slice."""
    shown_ranges: list[tuple[int, int]] = field(default_factory=list)
    """Character ranges of the root document that were in a plain reader's prompt."""
    shown_texts: dict[str, None] = field(default_factory=dict)
    """Every other text that entered a model's context (tool outputs the caller then read, slices
    passed to plain readers from code), de-duplicated, in order."""
    final_message: str | None = None
    final_answer: str | None = None
    """The inner text of the final message's single `<answer>` block, if it has exactly one."""
    ended_by: str = "running"
    """"answer" (a reply without tool calls), "max_turns" (turn budget exhausted),
    "truncated" (the last reply was cut at the completion-token cap: no final answer),
    "time_budget" (past `RolloutCaps.time_budget_s`), or "stopped" (interrupted from outside,
    e.g. by a trainer's limit)."""

    @property
    def root_tokens(self) -> int:
        return self.root_prompt_tokens + self.root_completion_tokens

    @property
    def sub_tokens(self) -> int:
        return self.sub_prompt_tokens + self.sub_completion_tokens

    @property
    def total_tokens(self) -> int:
        return self.root_tokens + self.sub_tokens

    @property
    def budget_tokens(self) -> int:
        """T in the token-budget reward: every model token, root and sub-calls."""
        return self.total_tokens

    @property
    def depth_used(self) -> int:
        """Deepest level at which a sub-call read text (0 if none did)."""
        return max((s.depth for s in self.sub_calls if s.read_chars > 0), default=0)

    @property
    def repl_calls(self) -> int:
        return self.tool_calls.get("repl", 0)

    @property
    def llm_calls(self) -> int:
        """Sub-calls started at any depth, from the llm tool or from REPL code."""
        return len(self.sub_calls)

    @property
    def total_tool_calls(self) -> int:
        return sum(self.tool_calls.values())

    @property
    def sub_call_seconds(self) -> float:
        """Wall seconds of every sub-call, summed (those of one batch overlap)."""
        return sum(s.seconds for s in self.sub_calls)

    def count_error(self, message: str, *, refused: bool = True) -> None:
        """A refused tool call (counted in `tool_errors` too) or, `refused=False`, a cell whose
        code failed; by the kind its message names."""
        self.tool_errors += refused
        kind = error_kind(message)
        self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1

    def count_tool(self, name: str) -> None:
        self.tool_calls[name] = self.tool_calls.get(name, 0) + 1

    def show_text(self, text: str) -> None:
        if text:
            self.shown_texts[text] = None

    def show_range(self, start: int, end: int) -> None:
        self.shown_ranges.append((start, end))

    def summary(self) -> dict[str, Any]:
        """Counts and the answer, without the shown texts (small enough for any trace)."""
        return {
            "document_chars": self.document_chars,
            "root_tokens": self.root_tokens,
            "sub_tokens": self.sub_tokens,
            "total_tokens": self.total_tokens,
            "budget_tokens": self.budget_tokens,
            "root_prompt_tokens": self.root_prompt_tokens,
            "root_completion_tokens": self.root_completion_tokens,
            "root_tool_output_tokens": self.root_tool_output_tokens,
            "sub_prompt_tokens": self.sub_prompt_tokens,
            "sub_completion_tokens": self.sub_completion_tokens,
            "usage_reported_calls": self.usage_reported_calls,
            "estimated_calls": self.estimated_calls,
            "turns": self.turns,
            "sub_turns": self.sub_turns,
            "tool_calls": dict(self.tool_calls),
            "repl_calls": self.repl_calls,
            "llm_calls": self.llm_calls,
            "tool_errors": self.tool_errors,
            "errors_by_kind": dict(self.errors_by_kind),
            "repl_seconds": round(self.repl_seconds, 3),
            "sub_call_seconds": round(self.sub_call_seconds, 3),
            "llm_batches": list(self.llm_batches),
            "depth_used": self.depth_used,
            "depth_reached": self.depth_reached,
            "touched_document": self.touched_document,
            "final_answer": self.final_answer,
            "ended_by": self.ended_by,
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything, including the evidence shown; `from_dict` restores it."""
        data = asdict(self)
        data["shown_texts"] = list(self.shown_texts)
        data["shown_ranges"] = [list(r) for r in self.shown_ranges]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RolloutRecord:
        data = dict(data)
        data.pop("depth_used", None)  # derived from the sub-calls
        data["sub_calls"] = [SubCallRecord(**s) for s in data.get("sub_calls", ())]
        data["shown_texts"] = dict.fromkeys(data.get("shown_texts", ()))
        data["shown_ranges"] = [(int(a), int(b)) for a, b in data.get("shown_ranges", ())]
        return cls(**data)
