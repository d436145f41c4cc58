"""The two tools, their schemas, argument checks and execution, reusable without the root loop.

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
import re
from dataclasses import dataclass, field, replace
from typing import Any

from fathom_rlm.agent import prompts
from fathom_rlm.agent.answer import sub_call_answer
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
from fathom_rlm.agent.record import RolloutRecord, SubCallRecord
from fathom_rlm.agent.turns import ToolCall, normalize_assistant, run_turns

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
                f"The slice is at most {max_slice_chars} characters."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "description": "The sub-question."},
                    "slice": {
                        "type": "string",
                        "description": (
                            'A character range "start:end" of doc, or the name of a REPL '
                            "variable holding a str."
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


def parse_arguments(name: str, raw: Any, caps: RolloutCaps) -> dict[str, str]:
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
        if not isinstance(args[key], str):
            kind = type(args[key]).__name__
            raise ToolError(f"{name} argument {key} must be a string, not {kind}.")
        if not args[key].strip():
            raise ToolError(f"{name} argument {key} is empty.")
        if not _encodable(args[key]):
            # A lone surrogate ("\ud800" in JSON) cannot cross the sandbox pipe as UTF-8.
            raise ToolError(f"{name} argument {key} contains characters that are not valid text.")
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


def _sandbox() -> Any:
    from fathom_rlm import sandbox  # imported on first use so pure parts load without it

    return sandbox


def _read_only(document: str, code: str, caps: RolloutCaps) -> Any:
    from fathom_rlm.sandbox.readonly import run_read_only

    return run_read_only(document, code, caps.sandbox or _sandbox().SandboxConfig())


async def _llm_only(document: str, code: str, caps: RolloutCaps, llm: Any) -> Any:
    from fathom_rlm.sandbox.readonly import run_llm_only

    return await run_llm_only(document, code, caps.sandbox or _sandbox().SandboxConfig(), llm)


@dataclass
class _Context:
    """One agent's view: its text (the document or a slice), its depth and its sandbox."""

    document: str
    depth: int
    root_offset: int | None
    """Where `document` starts in the root document, when known (ranges map back exactly)."""
    session: Any = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class RolloutTools:
    """The tools of one rollout. Use as `async with` or call `close()`; both are idempotent."""

    def __init__(
        self,
        document: str,
        chat: ChatFn,
        caps: RolloutCaps | None = None,
        *,
        record: RolloutRecord | None = None,
    ) -> None:
        self.caps = caps or RolloutCaps()
        self.chat = chat
        self.record = record or RolloutRecord()
        self.record.document_chars = len(document)
        self._root = _Context(document, 0, 0)
        self._open: list[_Context] = []
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

    def finish(self, final_message: str | None, ended_by: str) -> RolloutRecord:
        """Store the final reply (None if the turn budget ran out) and return the record."""
        from fathom_rlm.agent.answer import single_answer

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
            await _close_session(ctx)

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

    async def _execute(self, ctx: _Context, call: ToolCall, index_in_turn: int) -> str:
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
            else:
                output = await self._llm_tool(ctx, args["prompt"], args["slice"])
        except ToolError as exc:
            record.tool_errors += 1
            return f"Error: {exc}"
        record.show_text(output)
        return output

    async def _session(self, ctx: _Context) -> Any:
        if ctx.session is None:
            async with ctx.lock:
                if ctx.session is None:
                    if self._closed:
                        raise ToolError("the rollout is over.")
                    sandbox = _sandbox()
                    config = self.caps.sandbox or sandbox.SandboxConfig()
                    # A cell cannot use more sub-calls than the rollout has, so more llm()
                    # requests from one cell are refused in the worker without a round trip.
                    per_run = max(1, min(config.max_llm_calls_per_run, self.caps.max_sub_calls))
                    try:
                        ctx.session = await sandbox.SandboxSession.start(
                            ctx.document,
                            config=replace(config, max_llm_calls_per_run=per_run),
                            llm=self._repl_llm(ctx),
                        )
                    except sandbox.SandboxError as exc:
                        # E.g. the fork server was killed mid-start: this call fails, the next
                        # one tries a fresh worker; the rollout goes on.
                        raise ToolError(f"the REPL could not start ({exc}); try again.") from None
                    if self._closed:
                        # close() ran while the worker was starting and could not see it.
                        await _close_session(ctx)
                        raise ToolError("the rollout is over.")
        return ctx.session

    async def _repl(self, ctx: _Context, code: str) -> str:
        if ctx.session is None:
            # No state yet: a plain read of `doc`, or one llm() over it, needs no worker (most
            # sub-agents start so).
            result = _read_only(ctx.document, code, self.caps)
            if result is None:
                result = await _llm_only(ctx.document, code, self.caps, self._repl_llm(ctx))
            if result is not None:
                if ctx.depth == 0:
                    self.record.touched_document = True
                return format_repl_result(result)
        session = await self._session(ctx)
        try:
            result = await session.run(code)
        except _sandbox().SandboxError as exc:
            # The worker died (memory, a kill): drop it so the next call starts a fresh one.
            await _close_session(ctx)
            raise ToolError(f"the REPL stopped ({exc}); its variables are lost.") from None
        if ctx.depth == 0 and result.touched_document:
            self.record.touched_document = True
        return format_repl_result(result)

    async def _llm_tool(self, ctx: _Context, prompt: str, spec: str) -> str:
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
            if ctx.depth == 0:
                self.record.touched_document = True
        else:
            text = await self._variable(ctx, target)
            source = "variable"
        return await self._sub_call(ctx, prompt, text, "tool", source, root_range)

    async def _variable(self, ctx: _Context, name: str) -> str:
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

    def _repl_llm(self, ctx: _Context) -> Any:
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
                self.record.tool_errors += 1
                # A refusal: the sandbox shows its text and charges its time to the cell.
                raise _sandbox().LLMRefused(str(exc)) from None

        return llm

    # ----------------------------------------------------------------------------- sub-calls

    async def _sub_call(
        self,
        ctx: _Context,
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
        record.depth_used = max(record.depth_used, depth)
        if root_range is not None:
            record.show_range(*root_range)
        else:
            record.show_text(text)

        def on_reply(request: list[Message], schemas: Any, reply: Any) -> None:
            p, c = self._tokens(request, schemas, reply)
            record.sub_prompt_tokens += p
            record.sub_completion_tokens += c
            record.sub_turns += 1
            sub.tokens += p + c
            sub.turns += 1

        if kind == "plain":
            request = [
                {"role": "system", "content": prompts.reader_system_prompt(caps)},
                prompts.reader_message(prompt, text),
            ]
            reply = await self.chat(request, None)
            on_reply(request, None, reply)
            message, _ = normalize_assistant(getattr(reply, "message", None), 0)
            answer = sub_call_answer(message["content"])
        else:
            child = _Context(text, depth, root_range[0] if root_range else None)
            self._open.append(child)
            try:
                messages: list[Message] = [
                    {
                        "role": "system",
                        "content": prompts.sub_system_prompt(len(text), depth, caps),
                    },
                    prompts.question_message(prompt),
                ]
                result = await run_turns(
                    self.chat,
                    messages,
                    self._schemas(depth),
                    caps.sub_max_turns,
                    lambda call, index: self._execute(child, call, index),
                    on_reply,
                )
            finally:
                await _close_session(child)
                if child in self._open:
                    self._open.remove(child)
            if result.final_message is None:
                return "(the sub-call used all its turns without answering)"
            answer = sub_call_answer(result.final_message)
        if not answer:
            return "(the sub-call gave no answer)"
        sub.answered = True
        if len(answer) > caps.max_sub_answer_chars:
            answer = answer[: caps.max_sub_answer_chars] + " [cut]"
        return answer

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
        return "(no output; print() what you want to see)"
    return "\n".join(parts)


async def _close_session(ctx: _Context) -> None:
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
