"""One agent's context in a rollout: its text, its depth, its sandbox and what it has read.

The root and every recursive sub-call is an agent; `RolloutTools` (tools.py) keeps one context
per agent and marks a context's tool outputs read when the agent makes its next model call.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from fathom_rlm.agent.record import RolloutRecord, SubCallRecord


@dataclass
class AgentContext:
    """One agent's view: its text (the document or a slice), its depth and its sandbox."""

    document: str
    depth: int
    root_offset: int | None
    """Where `document` starts in the root document, when known (ranges map back exactly)."""
    sub: SubCallRecord | None = None
    """The sub-call this context is (None for the root)."""
    session: Any = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    unread: list[str] = field(default_factory=list)
    """Tool outputs returned to this agent that it has not read yet (no model call since)."""

    def mark_read(self, record: RolloutRecord, root_document: str) -> None:
        """The agent made a model call: every tool output returned to it so far entered its
        context. Only now do they count as evidence, and, for a sub-agent, the verbatim pieces
        of its own text among them count as its reading."""
        outputs, self.unread = self.unread, []
        for output in outputs:
            record.show_text(output)
            if self.sub is None:
                continue
            lines = own_text_lines(output, self.document)
            if lines:
                self.sub.read_chars += sum(len(line) for line in lines)
                self.sub.read_texts.extend(lines)
                if self.root_offset is not None or own_text_lines(output, root_document):
                    record.touched_document = True


def own_text_lines(output: str, text: str, min_chars: int = 20) -> list[str]:
    """Lines of a tool output (20+ characters) that are verbatim pieces of `text`: what an agent
    read of its own text, as opposed to answers, counts or errors it printed."""
    lines = (line.strip() for line in output.splitlines())
    return [line for line in lines if len(line) >= min_chars and line in text]


async def close_session(ctx: AgentContext) -> None:
    session, ctx.session = ctx.session, None
    if session is None:
        return
    # Shielded so a second cancellation cannot leave a worker process behind.
    task = asyncio.ensure_future(session.close())
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        raise
    except Exception:
        pass
