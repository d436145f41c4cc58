"""The two tools at run time: dispatch, sandbox sessions, sub-calls and accounting (schemas and
argument checks are in `fathom_rlm.agent.schemas` and re-exported here).

`RolloutTools` owns everything one rollout's tools need: the root sandbox session (started on
first use), the sub-call machinery (a sub-call below the depth cap is a small agent with its own
sandbox over its slice; at the cap it is one plain completion) and the `RolloutRecord`. An adapter
that drives root turns itself calls `await tools.call(name, arguments)` per tool call,
`tools.account_root_reply(...)` per root model call and `tools.finish(final_message)` at the end;
`run_rollout` in `fathom_rlm.agent.loop` does exactly that.

Every mistake the model can make with a tool (unknown name, malformed JSON, wrong types, missing
or extra arguments, oversize input, unknown variable, empty or oversize slice, exhausted sub-call
budget, a timed-out or crashed cell) comes back as a tool message starting with "Error:"; the
rollout goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from typing import Any

from fathom_rlm.agent import prompts
from fathom_rlm.agent.answer import single_answer, sub_call_answer
from fathom_rlm.agent.caps import RolloutCaps
from fathom_rlm.agent.chat import (
    ChatFn,
    Message,
    ToolSchema,
    chars_to_tokens,
    message_chars,
    reported_usage,
    schema_chars,
)
from fathom_rlm.agent.context import AgentContext, close_session, own_text_lines
from fathom_rlm.agent.record import RolloutRecord, SubCallRecord
from fathom_rlm.agent.schemas import (
    ToolError,
    llm_schema,
    parse_arguments,
    parse_slice,
    repl_schema,
    tool_schemas,
)
from fathom_rlm.agent.turns import ToolCall, normalize_assistant, run_turns

__all__ = [
    "RolloutTools",
    "ToolError",
    "format_repl_result",
    "llm_schema",
    "parse_arguments",
    "parse_slice",
    "repl_schema",
    "tool_schemas",
]


def _sandbox() -> Any:
    from fathom_rlm import sandbox  # imported on first use so pure parts load without it

    return sandbox


def _read_only(document: str, code: str, caps: RolloutCaps) -> Any:
    from fathom_rlm.sandbox.readonly import run_read_only

    return run_read_only(document, code, caps.sandbox or _sandbox().SandboxConfig())


async def _llm_only(document: str, code: str, caps: RolloutCaps, llm: Any) -> Any:
    from fathom_rlm.sandbox.readonly import run_llm_only

    return await run_llm_only(document, code, caps.sandbox or _sandbox().SandboxConfig(), llm)


class RolloutTools:
    """The tools of one rollout. Use as `async with` or call `close()`; both are idempotent."""

    def __init__(
        self,
        document: str,
        chat: ChatFn,
        caps: RolloutCaps | None = None,
        *,
        record: RolloutRecord | None = None,
        sub_transcripts: list[dict[str, Any]] | None = None,
    ) -> None:
        self.caps = caps or RolloutCaps()
        self.chat = chat
        self.record = record or RolloutRecord()
        self.sub_transcripts = sub_transcripts
        """When a list: one entry per sub-call as it starts (`_sub_transcript`), its conversation
        filled in as it runs; for a viewer or a trainer, never read by the reward."""
        self.record.document_chars = len(document)
        self._root = AgentContext(document, 0, 0)
        self._open: list[AgentContext] = []
        self._closed = False
        self._schemas_by_depth: dict[int, list[ToolSchema]] = {}
        self._schema_chars: dict[int, int] = {}
        # Characters per message, so re-sent history is not re-measured every turn. Holding the
        # message itself keeps its id from being reused while the entry exists.
        self._message_chars: dict[int, tuple[Message, int]] = {}
        self.schemas: list[ToolSchema] = self._schemas(0)

    # ----------------------------------------------------------------- root-level entry points

    def system_prompt(self) -> str:
        return prompts.root_system_prompt(len(self._root.document), self.caps)

    async def call(self, name: str | None, arguments: Any, *, index_in_turn: int = 0) -> str:
        """Run one root tool call and return the tool message text (errors included)."""
        output = await self._execute(self._root, ToolCall("", name, arguments), index_in_turn)
        self.record.root_tool_output_tokens += chars_to_tokens(len(output))
        return output

    def account_root_reply(
        self, request: list[Message], schemas: list[ToolSchema] | None, reply: Any
    ) -> None:
        """Count one root model call's tokens (reported usage, else characters / 4)."""
        prompt, completion = self._tokens(request, schemas, reply)
        self.record.root_prompt_tokens += prompt
        self.record.root_completion_tokens += completion
        self.record.turns += 1
        self._root.mark_read(self.record, self._root.document)

    def finish(self, final_message: str | None, ended_by: str) -> RolloutRecord:
        """Store the final reply (None if the turn budget ran out) and return the record."""
        self.record.final_message = final_message
        self.record.final_answer = single_answer(final_message)
        self.record.ended_by = ended_by
        return self.record

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        contexts, self._open = [self._root, *self._open], []
        for ctx in contexts:
            await close_session(ctx)

    async def __aenter__(self) -> RolloutTools:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _schemas(self, depth: int) -> list[ToolSchema]:
        if depth not in self._schemas_by_depth:
            schemas = tool_schemas(depth, self.caps)
            self._schemas_by_depth[depth] = schemas
            self._schema_chars[id(schemas)] = schema_chars(schemas)
        return self._schemas_by_depth[depth]

    # ----------------------------------------------------------------------------- dispatch

    async def _execute(self, ctx: AgentContext, call: ToolCall, index_in_turn: int) -> str:
        record = self.record
        name = call.name
        offered = name == "repl" or (name == "llm" and ctx.depth < self.caps.max_depth)
        record.count_tool(name if offered and name else "invalid")
        try:
            if self._closed:
                raise ToolError("the rollout is over.")
            if index_in_turn >= self.caps.max_tool_calls_per_turn:
                raise ToolError(
                    f"at most {self.caps.max_tool_calls_per_turn} tool calls per reply; "
                    "this one was not run."
                )
            if not offered:
                names = [s["function"]["name"] for s in self._schemas(ctx.depth)]
                available = ", ".join(names)
                shown = "(no name)" if name is None else repr(name[:40])
                raise ToolError(f"unknown tool {shown}. Available tools: {available}.")
            try:
                args = parse_arguments(name, call.arguments, self.caps)
            except ToolError:
                raise
            except Exception as exc:  # a shape no check foresaw is still the model's mistake
                raise ToolError(
                    f"arguments for {name} could not be read ({type(exc).__name__})."
                ) from None
            if name == "repl":
                output = await self._repl(ctx, args["code"])
            elif isinstance(args["slice"], list):
                output = await self._llm_tool_batch(ctx, args["prompt"], args["slice"])
            else:
                output = await self._llm_tool(ctx, args["prompt"], args["slice"])
        except ToolError as exc:
            record.count_error(str(exc))
            return f"Error: {exc}"
        ctx.unread.append(output)
        return output

    async def _session(self, ctx: AgentContext) -> Any:
        if ctx.session is None:
            async with ctx.lock:
                if ctx.session is None:
                    if self._closed:
                        raise ToolError("the rollout is over.")
                    sandbox = _sandbox()
                    config = self.caps.sandbox or sandbox.SandboxConfig()
                    # A cell cannot use more sub-calls than the rollout has, so more llm()
                    # requests from one cell are refused in the worker without a round trip;
                    # nor a batch longer than they could fill, which bounds its frame.
                    caps = self.caps
                    per_run = max(1, min(config.max_llm_calls_per_run, caps.max_sub_calls))
                    batch = per_run * (caps.max_slice_chars + caps.max_prompt_chars)
                    try:
                        ctx.session = await sandbox.SandboxSession.start(
                            ctx.document,
                            config=replace(
                                config,
                                max_llm_calls_per_run=per_run,
                                max_llm_batch_chars=min(config.max_llm_batch_chars, batch),
                                max_llm_parallel=caps.max_parallel_sub_calls,
                            ),
                            llm=self._repl_llm(ctx),
                        )
                    except sandbox.SandboxError as exc:
                        # E.g. the fork server was killed mid-start: this call fails, the next
                        # one tries a fresh worker; the rollout goes on.
                        raise ToolError(f"the REPL could not start ({exc}); try again.") from None
                    if self._closed:
                        # close() ran while the worker was starting and could not see it.
                        await close_session(ctx)
                        raise ToolError("the rollout is over.")
        return ctx.session

    async def _repl(self, ctx: AgentContext, code: str) -> str:
        if ctx.session is None:
            # No state yet: a plain read of `doc`, or one llm() over it, needs no worker (most
            # sub-agents start so).
            result = _read_only(ctx.document, code, self.caps)
            if result is None:
                result = await _llm_only(ctx.document, code, self.caps, self._repl_llm(ctx))
            if result is not None:
                if ctx.depth == 0:
                    self.record.touched_document = True
                return self._repl_output(result)
        session = await self._session(ctx)
        try:
            result = await session.run(code)
        except _sandbox().SandboxError as exc:
            # The worker died (memory, a kill): drop it so the next call starts a fresh one.
            await close_session(ctx)
            raise ToolError(f"the REPL stopped ({exc}); its variables are lost.") from None
        if ctx.depth == 0 and result.touched_document:
            self.record.touched_document = True
        return self._repl_output(result)

    def _repl_output(self, result: Any) -> str:
        """What the model sees of a cell; its time, batches and error go on the record."""
        record = self.record
        record.repl_seconds += max(0.0, result.wall_s - result.llm_wait_s)
        record.llm_batches.extend(result.llm_batches)
        if result.error or result.timed_out:
            record.count_error(result.error or "the cell timed out", refused=False)
        return format_repl_result(result)

    async def _llm_tool(self, ctx: AgentContext, prompt: str, spec: str) -> str:
        target = parse_slice(spec, len(ctx.document))
        root_range: tuple[int, int] | None = None
        if isinstance(target, tuple):
            start, end = target
            if end - start > self.caps.max_slice_chars:
                raise ToolError(
                    f'slice "{spec}" has {end - start:,} characters; the limit is '
                    f"{self.caps.max_slice_chars:,}. Ask about a smaller range."
                )
            text, source = ctx.document[start:end], "range"
            if ctx.root_offset is not None:
                root_range = (ctx.root_offset + start, ctx.root_offset + end)
        else:
            text = await self._variable(ctx, target)
            source = "variable"
        return await self._sub_call(ctx, prompt, text, "tool", source, root_range)

    async def _llm_tool_batch(self, ctx: AgentContext, prompt: str, specs: list[str]) -> str:
        """`llm` over a list of slices: the answers as a JSON list, in order, at most
        `max_parallel_sub_calls` at once; a refused entry is "Error: ..." and the rest go on."""
        gate = asyncio.Semaphore(self.caps.max_parallel_sub_calls)

        async def one(spec: str) -> str:
            async with gate:
                try:
                    return await self._llm_tool(ctx, prompt, spec)
                except ToolError as exc:
                    self.record.count_error(str(exc))
                    return f"Error: {exc}"

        self.record.llm_batches.append(len(specs))
        tasks = [asyncio.ensure_future(one(spec)) for spec in specs]
        try:
            answers = await asyncio.gather(*tasks)
        except BaseException:
            # A failed model call fails the rollout: no sibling sub-call may outlive it.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return json.dumps(answers, ensure_ascii=False)

    async def _variable(self, ctx: AgentContext, name: str) -> str:
        if ctx.session is None:
            raise ToolError(f"no REPL variable named {name!r} (no variable has been assigned yet).")
        try:
            # Bounded in the worker: a huge variable is refused there, never copied over.
            value = await ctx.session.read_variable(name, max_chars=self.caps.max_slice_chars)
        except _sandbox().SandboxError as exc:
            hint = " Slice it smaller first." if "the limit is" in str(exc) else ""
            raise ToolError(f"cannot use REPL variable {name!r}: {exc}.{hint}") from None
        if not isinstance(value, str):
            raise ToolError(f"REPL variable {name!r} is not a str.")
        if len(value) > self.caps.max_slice_chars:
            raise ToolError(
                f"REPL variable {name!r} has {len(value):,} characters; the limit is "
                f"{self.caps.max_slice_chars:,}. Slice it smaller first."
            )
        return value

    def _repl_llm(self, ctx: AgentContext) -> Any:
        async def llm(prompt: str, text: str) -> str:
            # llm() from REPL code takes the same path and checks as the tool; a refusal raises
            # inside the code (the sandbox shows it as LLMError) so a silent bad value never
            # flows into the model's map-reduce.
            try:
                if not isinstance(prompt, str) or not isinstance(text, str):
                    raise ToolError("llm(prompt, text) takes two str arguments.")
                if not prompt.strip() or len(prompt) > self.caps.max_prompt_chars:
                    raise ToolError(
                        f"llm() prompt must be 1 to {self.caps.max_prompt_chars:,} characters."
                    )
                if ctx.depth >= self.caps.max_depth:
                    raise ToolError("llm() is not available at this depth.")
                return await self._sub_call(ctx, prompt, text, "repl", "repl", None)
            except ToolError as exc:
                self.record.count_error(str(exc))
                # A refusal: the sandbox shows its text and charges its time to the cell.
                raise _sandbox().LLMRefused(str(exc)) from None

        return llm

    # ----------------------------------------------------------------------------- sub-calls

    async def _sub_call(
        self,
        ctx: AgentContext,
        prompt: str,
        text: str,
        origin: str,
        source: str,
        root_range: tuple[int, int] | None,
    ) -> str:
        caps, record = self.caps, self.record
        if not text.strip():
            raise ToolError("the slice is empty.")
        if len(text) > caps.max_slice_chars:
            raise ToolError(
                f"the text has {len(text):,} characters; the limit is {caps.max_slice_chars:,}."
            )
        if len(record.sub_calls) >= caps.max_sub_calls:
            raise ToolError(f"the sub-call budget is used up ({caps.max_sub_calls} per rollout).")
        depth = ctx.depth + 1
        kind = "rlm" if depth < caps.max_depth else "plain"
        sub = SubCallRecord(depth, kind, origin, source, len(text), len(prompt))
        record.sub_calls.append(sub)
        started = time.perf_counter()
        try:
            return await self._answer_sub_call(ctx, sub, prompt, text, root_range)
        finally:
            sub.seconds = time.perf_counter() - started

    async def _answer_sub_call(
        self,
        ctx: AgentContext,
        sub: SubCallRecord,
        prompt: str,
        text: str,
        root_range: tuple[int, int] | None,
    ) -> str:
        caps, record = self.caps, self.record
        depth, kind = sub.depth, sub.kind
        record.depth_reached = max(record.depth_reached, depth)
        messages = self._sub_transcript(ctx, sub, prompt, root_range)
        if kind == "plain":
            answer = await self._reader_call(prompt, text, root_range, sub, messages)
        else:
            final = await self._recursive_call(prompt, text, depth, root_range, sub, messages)
            if final is None:
                return "(the sub-call used all its turns without answering)"
            answer = sub_call_answer(final)
        if not answer:
            return "(the sub-call gave no answer)"
        sub.answered = True
        if len(answer) > caps.max_sub_answer_chars:
            answer = answer[: caps.max_sub_answer_chars] + " [cut]"
        return answer

    def _sub_transcript(
        self,
        ctx: AgentContext,
        sub: SubCallRecord,
        prompt: str,
        root_range: tuple[int, int] | None,
    ) -> list[Message]:
        """The list the sub-call's conversation goes into; logged when `sub_transcripts` is a
        list. `parent` is the index of the calling sub-call (None for the root) and `turn` the
        caller's model reply (1-based) whose tool call or cell started it."""
        messages: list[Message] = []
        if self.sub_transcripts is not None:
            # By identity: two sub-calls may hold equal fields.
            calls = self.record.sub_calls
            parent = next((i for i, s in enumerate(calls) if s is ctx.sub), None)
            self.sub_transcripts.append(
                {
                    "index": len(self.record.sub_calls) - 1,
                    "parent": parent,
                    "turn": ctx.sub.turns if ctx.sub is not None else self.record.turns,
                    "depth": sub.depth,
                    "kind": sub.kind,
                    "origin": sub.origin,
                    "slice_source": sub.slice_source,
                    "slice": list(root_range) if root_range is not None else None,
                    "slice_chars": sub.slice_chars,
                    "prompt": prompt,
                    "messages": messages,
                }
            )
        return messages

    def _sub_reply_counter(self, sub: SubCallRecord, child: AgentContext | None) -> Any:
        """The callback that books each model reply of a sub-call (and what its child read)."""
        record = self.record

        def on_reply(request: list[Message], schemas: Any, reply: Any) -> None:
            p, c = self._tokens(request, schemas, reply)
            record.sub_prompt_tokens += p
            record.sub_completion_tokens += c
            record.sub_turns += 1
            sub.tokens += p + c
            sub.turns += 1
            if child is not None:
                child.mark_read(record, self._root.document)

        return on_reply

    async def _reader_call(
        self,
        prompt: str,
        text: str,
        root_range: tuple[int, int] | None,
        sub: SubCallRecord,
        transcript: list[Message],
    ) -> str:
        """A sub-call at the depth cap: one plain model call with the slice in its prompt."""
        record = self.record
        # The slice is in the reader's prompt: it is read, whatever the reader answers.
        sub.read_chars = len(text)
        sub.read_texts.append(text)
        if root_range is not None or own_text_lines(text, self._root.document):
            record.touched_document = True
        if root_range is not None:
            record.show_range(*root_range)
        else:
            record.show_text(text)
        request = [
            {"role": "system", "content": prompts.reader_system_prompt(self.caps)},
            prompts.reader_message(prompt, text),
        ]
        transcript.extend(request)
        reply = await self.chat(request, None)
        self._sub_reply_counter(sub, None)(request, None, reply)
        message, _ = normalize_assistant(getattr(reply, "message", None), 0)
        transcript.append(message)
        return sub_call_answer(message["content"])

    async def _recursive_call(
        self,
        prompt: str,
        text: str,
        depth: int,
        root_range: tuple[int, int] | None,
        sub: SubCallRecord,
        messages: list[Message],
    ) -> str | None:
        """A sub-call below the depth cap: a child loop with its own tools over the slice, its
        conversation kept in `messages`.

        Returns the child's final message, None when it used all its turns without one.
        """
        caps = self.caps
        child = AgentContext(text, depth, root_range[0] if root_range else None, sub)
        self._open.append(child)
        try:
            messages[:] = [
                {"role": "system", "content": prompts.sub_system_prompt(len(text), depth, caps)},
                prompts.question_message(prompt),
            ]
            result = await run_turns(
                self.chat,
                messages,
                self._schemas(depth),
                caps.sub_max_turns,
                lambda call, index: self._execute(child, call, index),
                self._sub_reply_counter(sub, child),
            )
        finally:
            await close_session(child)
            if child in self._open:
                self._open.remove(child)
        return result.final_message

    # ---------------------------------------------------------------------------- accounting

    def _chars(self, message: Message) -> int:
        entry = self._message_chars.get(id(message))
        if entry is None or entry[0] is not message:
            entry = (message, message_chars(message))
            self._message_chars[id(message)] = entry
        return entry[1]

    def _tokens(
        self, request: list[Message], schemas: list[ToolSchema] | None, reply: Any
    ) -> tuple[int, int]:
        usage = reported_usage(getattr(reply, "usage", None))
        if usage is not None:
            self.record.usage_reported_calls += 1
            return usage
        self.record.estimated_calls += 1
        # Our own schema lists live as long as this object, so their ids are stable cache keys.
        cached = self._schema_chars.get(id(schemas)) if schemas is not None else 0
        tools_chars = cached if cached is not None else schema_chars(schemas)
        prompt_chars = tools_chars + sum(self._chars(m) for m in request)
        message = getattr(reply, "message", None)
        completion_chars = message_chars(message) if isinstance(message, dict) else 0
        return chars_to_tokens(prompt_chars), chars_to_tokens(completion_chars)


NO_OUTPUT = "(no output; print() what you want to see)"
"""What the model sees after a cell that printed nothing and raised nothing."""


def format_repl_result(result: Any) -> str:
    """What the model sees after a cell: its printed output, then any error."""
    parts = []
    if result.output:
        parts.append(result.output.rstrip("\n"))
    if result.error:
        parts.append(f"Error: {result.error}".rstrip())
    elif result.timed_out:
        parts.append(f"Error: the cell timed out after {result.wall_s:.1f} s.")
    if not parts:
        return NO_OUTPUT
    return "\n".join(parts)
