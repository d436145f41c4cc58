"""Fault injection for the scripted policy server: for robustness tests and the soak benchmark only.

A `FaultPlan` gives each fault a probability per chat-completion request; one seeded draw per
request picks at most one fault. The faults are real, over real HTTP on 127.0.0.1:

* `drop`: the connection is reset after the request is read; no reply at all.
* `slow`: the reply comes after `slow_s` seconds.
* `error`: HTTP 500 with an OpenAI-style error object.
* `malformed`: instead of the policy's reply, an assistant message whose tool call is broken
  (invalid or deeply nested JSON, an unknown tool, wrongly typed arguments), in rotation.
* `empty`: an assistant message with no content and no tool calls.
* `cut`: the policy's own reply cut in half, as a server cuts a reply at `max_tokens`: its text
  and every tool call's arguments end mid-way (mid-JSON), and `finish_reason` is "length".

    uv run python -m envtools.policy_server --faults drop=0.02,error=0.02,malformed=0.05,seed=1

Without a plan the server injects nothing; nothing in the environment itself uses this module.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from dataclasses import dataclass, fields
from typing import Any

FAULTS: tuple[str, ...] = ("drop", "slow", "error", "malformed", "empty", "cut")

_MALFORMED_CALLS: tuple[tuple[str, str], ...] = (
    ("repl", '{"code": "print(1)"'),  # truncated JSON
    ("repl", "[" * 50_000 + "]" * 50_000),  # nesting past any recursion limit
    ("shell", '{"cmd": "ls"}'),  # a tool that does not exist
    ("repl", '{"code": 42}'),  # wrong type
    ("llm", '{"prompt": "?", "slice": "9:1"}'),  # an empty range
)


@dataclass(frozen=True)
class FaultPlan:
    """Per-request probabilities of each fault (their sum at most 1) and the draw's seed."""

    drop: float = 0.0
    slow: float = 0.0
    error: float = 0.0
    malformed: float = 0.0
    empty: float = 0.0
    cut: float = 0.0
    slow_s: float = 2.0
    seed: int = 0

    def __post_init__(self) -> None:
        rates = [getattr(self, name) for name in FAULTS]
        if any(not 0.0 <= r <= 1.0 for r in rates) or sum(rates) > 1.0 + 1e-9:
            raise ValueError("fault rates must each be in [0, 1] and sum to at most 1")
        if self.slow_s < 0:
            raise ValueError("slow_s must be >= 0")

    @classmethod
    def parse(cls, text: str) -> FaultPlan:
        """`"drop=0.05,slow=0.1,slow_s=1.5,seed=3"`; unknown names raise ValueError."""
        known = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, sep, raw = item.partition("=")
            name = name.strip()
            if not sep or name not in known:
                raise ValueError(f"bad fault {item!r}; use name=value with names {sorted(known)}")
            values[name] = int(raw) if name == "seed" else float(raw)
        return cls(**values)


class FaultInjector:
    """Draws the fault of each request from a plan; counts what it injected (thread-safe)."""

    def __init__(self, plan: FaultPlan) -> None:
        self.plan = plan
        self.counts: Counter[str] = Counter()
        self._rng = random.Random(plan.seed)
        self._lock = threading.Lock()

    def draw(self) -> str | None:
        with self._lock:
            x = self._rng.random()
            self.counts["requests"] += 1
            edge = 0.0
            for name in FAULTS:
                edge += getattr(self.plan, name)
                if x < edge:
                    self.counts[name] += 1
                    return name
        return None

    def malformed_message(self) -> dict[str, Any]:
        """The next broken tool call in rotation, as an assistant message."""
        with self._lock:
            index = self.counts["malformed_sent"] % len(_MALFORMED_CALLS)
            self.counts["malformed_sent"] += 1
        name, arguments = _MALFORMED_CALLS[index]
        call = {"id": f"fault_{index}", "function": {"name": name, "arguments": arguments}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}


EMPTY_MESSAGE: dict[str, Any] = {"role": "assistant", "content": None}


def cut_message(message: dict[str, Any]) -> dict[str, Any]:
    """A reply as a server cuts it at `max_tokens`: the first half of its text and of each tool
    call's arguments (so a JSON argument ends mid-way)."""
    content = message.get("content")
    out: dict[str, Any] = {
        "role": "assistant",
        "content": content[: len(content) // 2] if isinstance(content, str) else content,
    }
    calls = []
    for call in message.get("tool_calls") or ():
        function = dict(call.get("function") or {})
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        function["arguments"] = arguments[: len(arguments) // 2]
        calls.append({**call, "function": function})
    if calls:
        out["tool_calls"] = calls
    return out


SERVER_ERROR: dict[str, Any] = {
    "error": {
        "message": "injected fault: internal server error",
        "type": "server_error",
        "param": None,
        "code": None,
    }
}


def describe(plan: FaultPlan) -> str:
    """One line for logs: the non-zero rates."""
    rates = {name: getattr(plan, name) for name in FAULTS if getattr(plan, name)}
    return json.dumps({**rates, "slow_s": plan.slow_s, "seed": plan.seed})
