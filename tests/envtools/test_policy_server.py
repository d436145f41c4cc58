"""The scripted policy server, exercised over loopback with the `openai` client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import openai
import pytest
from gsm8k_lab.policies import VERBOSE_TOKENS, Gsm8kPolicy, estimate_tokens

from envtools.policies.base import ChatResult
from envtools.policies.registry import UnknownPolicyError, get_policy, policy_names
from envtools.policy_server import policy_server_in_thread, serve_policies

QUESTION = "A baker fills 6 trays with 12 rolls each and sells 20 rolls. How many rolls are left?"


@pytest.fixture
def data_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "problems.jsonl"
    rows = [
        {"question": QUESTION, "answer": "6*12=72 rolls, 72-20=52.\n#### 52"},
        {"question": "How many legs do 3 stools with 3 legs have?", "answer": "#### 9"},
        {"question": "What is 1,000 plus 250?", "answer": "1,000 + 250 = 1,250\n#### 1,250"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    monkeypatch.setenv("GSM8K_POLICY_DATA", str(path))
    return path


class EchoToolPolicy:
    """Calls a tool on its first turn, then answers with what the tool returned."""

    name = "echo-tool"

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ChatResult:
        if messages[-1]["role"] == "tool":
            return ChatResult(
                {"role": "assistant", "content": f"tool said {messages[-1]['content']}"}
            )
        call = {"function": {"name": "lookup", "arguments": {"key": "x", "n": 2}}}
        return ChatResult({"role": "assistant", "content": None, "tool_calls": [call]})


class SlowPolicy:
    """Holds each request half a second and counts how many it holds at once."""

    name = "slow"
    in_flight = 0
    most_in_flight = 0

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ChatResult:
        cls = type(self)
        cls.in_flight += 1
        cls.most_in_flight = max(cls.most_in_flight, cls.in_flight)
        try:
            await asyncio.sleep(0.5)
        finally:
            cls.in_flight -= 1
        return ChatResult({"role": "assistant", "content": "done"})


def test_registry_lists_the_gsm8k_ladder() -> None:
    names = policy_names()
    for name in ("gsm8k-gold", "gsm8k-verbose", "gsm8k-wrong", "gsm8k-noanswer"):
        assert name in names
        assert get_policy(name).name == name
    with pytest.raises(UnknownPolicyError):
        get_policy("no-such-policy")


def test_gsm8k_policies_over_the_openai_client(data_path: Path) -> None:
    with policy_server_in_thread() as base_url:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
        assert {m.id for m in client.models.list().data} >= {"gsm8k-gold", "gsm8k-wrong"}

        def ask(model: str, question: str = QUESTION) -> Any:
            return client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": question}]
            )

        gold = ask("gsm8k-gold")
        assert gold.object == "chat.completion" and gold.model == "gsm8k-gold"
        assert gold.choices[0].finish_reason == "stop"
        content = gold.choices[0].message.content
        assert content.endswith("\\boxed{52}.") and "</think>" in content
        assert gold.usage.completion_tokens == len(content) // 4
        assert (
            "\\boxed{1250}"
            in ask("gsm8k-gold", "What is 1,000 plus 250?").choices[0].message.content
        )

        verbose = ask("gsm8k-verbose")
        assert "\\boxed{52}" in verbose.choices[0].message.content
        assert verbose.usage.completion_tokens > VERBOSE_TOKENS
        assert "\\boxed{53}" in ask("gsm8k-wrong").choices[0].message.content
        assert "\\boxed" not in ask("gsm8k-noanswer").choices[0].message.content
        # Deterministic given the question.
        assert ask("gsm8k-gold").choices[0].message.content == content

        with pytest.raises(openai.NotFoundError) as not_found:
            ask("gpt-nonexistent")
        assert not_found.value.body["code"] == "model_not_found"
        with pytest.raises(openai.UnprocessableEntityError, match="question not found"):
            ask("gsm8k-gold", "A question the data does not have?")


def test_question_inside_a_longer_prompt(data_path: Path) -> None:
    policy = Gsm8kPolicy("gold")
    prompt = f"Solve and put the answer in \\boxed{{}}.\n\n{QUESTION}"
    assert policy.compose(prompt).endswith("\\boxed{52}.")


def test_gold_policy_without_data_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GSM8K_POLICY_DATA", raising=False)
    with pytest.raises(ValueError, match="GSM8K_POLICY_DATA"):
        Gsm8kPolicy("gold").compose(QUESTION)


def test_usage_estimate() -> None:
    assert estimate_tokens("") == 1
    assert estimate_tokens("x" * 41) == 10


def test_tool_calls_are_wire_shaped() -> None:
    with policy_server_in_thread(policies={"echo-tool": EchoToolPolicy}) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "go"}]
        first = client.chat.completions.create(model="echo-tool", messages=messages)
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert first.usage is None
        (call,) = choice.message.tool_calls
        assert call.type == "function" and call.id.startswith("call_")
        assert json.loads(call.function.arguments) == {"key": "x", "n": 2}
        messages += [
            choice.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "42"},
        ]
        second = client.chat.completions.create(model="echo-tool", messages=messages)
        assert second.choices[0].message.content == "tool said 42"


def test_streaming_sends_the_whole_answer_as_events(data_path: Path) -> None:
    with policy_server_in_thread() as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
        stream = client.chat.completions.create(
            model="gsm8k-gold",
            messages=[{"role": "user", "content": QUESTION}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.endswith("\\boxed{52}.")
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == len(text) // 4


def test_streamed_tool_calls_keep_their_index() -> None:
    with policy_server_in_thread(policies={"echo-tool": EchoToolPolicy}) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
        stream = client.chat.completions.create(
            model="echo-tool", messages=[{"role": "user", "content": "go"}], stream=True
        )
        chunks = list(stream)
    (call,) = chunks[0].choices[0].delta.tool_calls
    assert call.index == 0 and call.function.name == "lookup"
    assert json.loads(call.function.arguments) == {"key": "x", "n": 2}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def _post(url: str, body: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_malformed_requests_get_openai_style_errors() -> None:
    with policy_server_in_thread() as base_url:
        url = f"{base_url}/chat/completions"
        status, body = _post(url, b"{not json")
        assert status == 400 and "not valid JSON" in body["error"]["message"]
        status, body = _post(url, b'{"model": "gsm8k-gold"}')
        assert status == 400 and "messages" in body["error"]["message"]
        status, body = _post(f"{base_url}/completions", b"{}")
        assert status == 404


def test_requests_are_served_concurrently() -> None:
    # Counted, not timed: a serial server never holds two requests at once, however fast it is.
    SlowPolicy.most_in_flight = 0

    async def eight_at_once() -> list[Any]:
        async with serve_policies(policies={"slow": SlowPolicy}) as base_url:
            client = openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
            replies = await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="slow", messages=[{"role": "user", "content": str(i)}]
                    )
                    for i in range(8)
                )
            )
            await client.close()
        return replies

    replies = asyncio.run(eight_at_once())
    assert [r.choices[0].message.content for r in replies] == ["done"] * 8
    assert SlowPolicy.most_in_flight >= 4, SlowPolicy.most_in_flight


def test_command_line_prints_the_url_first(data_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "envtools.policy_server", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "GSM8K_POLICY_DATA": str(data_path)},
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
        reply = client.chat.completions.create(
            model="gsm8k-gold", messages=[{"role": "user", "content": QUESTION}]
        )
        assert "\\boxed{52}" in reply.choices[0].message.content
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_fathom_task_index_serves_the_requested_document_length() -> None:
    # `--fathom-doc-tokens N` sets these lengths: the reference policy must find a question of a
    # 16K-token run, and a smaller `num_examples` asks the first rows of the same split.
    from fathom_lab.policies import TaskIndex
    from fathom_rlm.documents import build_split

    row = build_split("eval", 1, doc_tokens=16_000)[0]
    index = TaskIndex(autoload_splits=("eval",), autoload_doc_tokens=(16_000,))
    assert index.lookup(row.question) == row


def test_command_line_data_lets_the_reference_answer_user_rows() -> None:
    """With `--data` the fathom reference reads the user's own text (word overlap), as
    `fathom_lab.evaluate --data` does; without it, the same rollout finds nothing."""
    import openai
    from fathom_lab.eval_runner import openai_chat
    from fathom_rlm.agent import run_rollout
    from fathom_rlm.documents import task_document
    from fathom_rlm.rewards import score_rollout
    from fathom_rlm.sandbox import shutdown_fork_servers
    from fathom_rlm.userdata import load_rows, task_question

    rows = Path(__file__).resolve().parents[1] / "fathom_rlm" / "userdata" / "fixtures"
    task = load_rows(rows / "harbour.jsonl")[0]  # a text row with evidence

    def correctness(*flags: str) -> float:
        command = [sys.executable, "-m", "envtools.policy_server", "--port", "0", *flags]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            base_url = process.stdout.readline().strip()

            async def rollout() -> Any:
                client = openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
                async with client:
                    chat = openai_chat(client, "fathom-reference")
                    return await run_rollout(task_document(task), task_question(task), chat)

            record = asyncio.run(rollout())
        finally:
            shutdown_fork_servers()
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
        return score_rollout(record, task)["correctness"]

    assert correctness("--data", str(rows / "harbour.jsonl")) == 1.0
    assert correctness() == 0.0
