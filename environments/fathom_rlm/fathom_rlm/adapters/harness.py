"""The fathom-rlm harness for verifiers v1: the core's agent loop, run in-process per rollout.

Every model call (root turns and every sub-call at any depth) is an HTTP request to the rollout's
interception endpoint, so verifiers traces and counts all of them, and sub-calls reach the same
policy model. verifiers allows a harness to run its loop in-process as long as its model calls go
through the endpoint (see `Harness.launch`); doing so skips the per-rollout program start that a
uv-script harness pays. Model-written code still runs only in the core's sandbox worker process.

Selected by id `fathom-rlm` (the package exports this class), which is also the taskset's default.
"""

from __future__ import annotations

import ssl
from functools import cache
from typing import Any

import httpx
import verifiers.v1 as vf

from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.adapters.endpoint import endpoint_chat
from fathom_rlm.adapters.scoring import document_text
from fathom_rlm.agent import ChatFn, RolloutRecord, run_rollout
from fathom_rlm.documents.tasks.record import TaskRecord
from fathom_rlm.serving import open_serving_scope
from fathom_rlm.userdata.grading import task_question


class FathomHarnessConfig(vf.HarnessConfig):
    """Knobs under `--env.agent.harness.*`."""

    request_timeout: float = 600.0
    """Seconds one model call may take before the rollout fails."""


@cache
def _tls_context() -> ssl.SSLContext:
    # Loading the CA bundle costs ~50 ms; build it once, and only for a tunnelled (https) endpoint.
    return ssl.create_default_context()


def interception_client(endpoint: str, secret: str, timeout: float) -> httpx.AsyncClient:
    """An HTTP client for the rollout's interception endpoint (bearer `secret`)."""
    verify: ssl.SSLContext | bool = _tls_context() if endpoint.startswith("https") else False
    return httpx.AsyncClient(
        base_url=endpoint.rstrip("/") + "/",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=httpx.Timeout(timeout, connect=10.0),
        verify=verify,
    )


def interception_chat(
    client: httpx.AsyncClient, model: str, max_completion_tokens: int | None = None
) -> ChatFn:
    """The core's `ChatFn` over the chat-completions route of the interception endpoint.

    verifiers overrides any sampling knob the run sets (including max tokens), so
    `max_completion_tokens` applies only when the run leaves max tokens unset.
    """
    return endpoint_chat(client, model, max_completion_tokens)


class FathomHarness(vf.Harness[FathomHarnessConfig]):
    """Runs `fathom_rlm.agent.run_rollout` for the task row, in the rollout's own process."""

    APPENDS_SYSTEM_PROMPT = True  # the loop writes its own system prompt; never fold one in
    EXECUTES_CODE = False  # the model's code runs in the core's sandbox worker, not the runtime
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: Any,
        trace: Any,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: Any,
        **kwargs: Any,
    ) -> vf.ProgramResult:
        task = TaskRecord.from_json(data.row)
        # Made here, in the rollout's process: a `source`'s rows (and their documents) load.
        args = FathomArguments(**data.arguments)
        # This process's sandbox scratch root and janitor (an env-server worker's, or the
        # eval's own): closed by `FathomEnv.stop`, removed by the janitor if the process dies.
        open_serving_scope()
        document = await document_text(task)
        # The record fills in as the rollout runs, so a rollout that a verifiers stop or limit
        # interrupts is still scored on what it did (its missing answer scores 0).
        record = RolloutRecord()
        trace.state.record = record
        async with interception_client(endpoint, secret, self.config.request_timeout) as client:
            chat = interception_chat(client, ctx.model)
            sub_chat = interception_chat(client, ctx.model, args.sub_max_completion_tokens)
            try:
                question = task_question(task)
                caps = args.caps()
                await run_rollout(document, question, chat, caps, sub_chat=sub_chat, record=record)
            except Exception as exc:
                if trace.stop_condition is None:
                    raise
                # A stop hook or a rollout limit ended the exchange; verifiers expects that.
                record.ended_by = "stopped"
                trace.info["fathom"] = record.summary()
                return vf.ProgramResult(exit_code=1, stdout="", stderr=repr(exc))
        trace.info["fathom"] = record.summary()
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")
