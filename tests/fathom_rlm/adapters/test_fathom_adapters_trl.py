"""The TRL adapter (`environment_factory`) driven exactly as TRL's tool loop drives it.

TRL resets one environment instance per rollout, calls the instance's methods with each tool
call's parsed JSON arguments, appends the results as `{"role": "tool", "name", "content"}`
messages and, at the end, calls each reward function with `environments=[...]`. Here the
scripted reference policy plays the trained model (root turns, in process) and the scripted
policy server answers the sub-calls over loopback HTTP; the same holds on the user's own rows
(`source`). The TRL-side checks (tool schemas from the docstrings) are in
tests/integration/test_trl_launch.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fathom_lab.ladder.overlap_reader import reading_any_text
from fathom_rlm.adapters.endpoint import Endpoint
from fathom_rlm.adapters.scoring import load_document
from fathom_rlm.adapters.trl import (
    LOGGED_KEYS,
    REWARD_KEYS,
    check_arguments,
    final_message,
    load_trl_environment,
    sub_call_endpoint,
)
from fathom_rlm.documents import TaskRecord
from fathom_rlm.rewards import SCORE_NAMES, TIMING_NAMES
from fathom_rlm.userdata import task_question

from envtools.policies.registry import get_policy

POLICY = "fathom-reference"


def _load(kit: Any, policy_url: str, n: int) -> Any:
    return load_trl_environment(
        split="eval",
        num_examples=n,
        doc_tokens=kit.doc_tokens,
        sub_base_url=policy_url,
        sub_model=POLICY,
    )


async def _drive(
    env: Any, prompt: list[dict[str, Any]], max_rounds: int, root_policy: str = POLICY
) -> list[dict[str, Any]]:
    """TRL's tool loop: generate, run every tool call, append the results, until a plain reply."""
    policy = get_policy(root_policy)
    messages = [dict(m) for m in prompt]
    completion: list[dict[str, Any]] = []
    schemas = [
        {"type": "function", "function": {"name": name, "parameters": {}}}
        for name in ("repl", "llm")
    ]
    for _ in range(max_rounds + 1):
        reply = (await policy.respond(messages, schemas)).message
        assistant = {"role": "assistant", "content": reply.get("content") or ""}
        if reply.get("tool_calls"):
            assistant["tool_calls"] = reply["tool_calls"]
        messages.append(assistant)
        completion.append(assistant)
        if not reply.get("tool_calls"):
            break
        for call in reply["tool_calls"]:
            function = call["function"]
            arguments = json.loads(function["arguments"])
            result = await getattr(env, function["name"])(**arguments)
            tool = {"role": "tool", "name": function["name"], "content": str(result)}
            tool["tool_call_id"] = call.get("id")  # kept for the scripted policy's bookkeeping
            messages.append(tool)
            completion.append(tool)
    return completion


def _rewards(
    loaded: Any,
    env: Any,
    prompt: list[dict[str, Any]],
    completion: list[dict[str, Any]],
    completion_ids: list[list[int]] | None = None,
) -> dict[str, float]:
    return {
        key: fn(
            prompts=[prompt],
            completions=[completion],
            environments=[env],
            completion_ids=completion_ids,
            trainer_state=None,
        )[0]
        for key, fn in loaded.reward_funcs.items()
    }


# The depth-0 rung reads only through the root's own repl output: its evidence counts only
# because the root's replies after that output are charged as reading it.
@pytest.mark.parametrize("root_policy", [POLICY, "fathom-reference-d0"])
def test_a_reference_rollout_scores_as_the_core_scores_it(
    kit: Any, policy_url: str, root_policy: str
) -> None:
    loaded = _load(kit, policy_url, 3)
    try:
        assert list(loaded.reward_funcs) == list(LOGGED_KEYS)
        assert list(LOGGED_KEYS[: len(REWARD_KEYS)]) == list(REWARD_KEYS)
        assert [fn.__name__ for fn in loaded.reward_funcs.values()] == list(LOGGED_KEYS)
        assert loaded.reward_weights["reward"] == 1.0
        assert sum(loaded.reward_weights.values()) == 1.0
        row = loaded.train_dataset[0]
        task = TaskRecord.from_json(json.loads(row["info"]))
        env = loaded.environment_factory()
        assert env.reset(**row) is None  # nothing for TRL to append: the prompt is complete
        prompt = row["prompt"]
        assert [m["role"] for m in prompt] == ["system", "user"]
        assert f"{len(load_document(task)):,} characters" in prompt[0]["content"]
        rounds = loaded.trainer_defaults["max_tool_calling_iterations"]
        completion = asyncio.run(_drive(env, prompt, rounds, root_policy))
        # No token ids: root tokens are estimated from characters, as the in-process replay does.
        got = _rewards(loaded, env, prompt, completion)
        expected = kit.replay_scores(task, root_policy)
        for key in ("format_gate", "correctness", "recursion_efficiency"):
            assert got[key] == expected[key], key
        assert got["correctness"] == 1.0 and got["reward"] > 0.75
        assert got["token_budget"] == pytest.approx(expected["token_budget"], abs=0.05)
    finally:
        loaded.close()


def test_user_rows_score_as_the_core_scores_them(
    kit: Any, user_policy_url: str, user_rows: list[TaskRecord]
) -> None:
    loaded = load_trl_environment(
        source=str(kit.user_rows_path),
        num_examples=kit.user_row_count,
        sub_base_url=user_policy_url,
        sub_model=POLICY,
    )
    try:
        rounds = loaded.trainer_defaults["max_tool_calling_iterations"]
        assert len(loaded.train_dataset) == len(user_rows)
        for row, want in zip(loaded.train_dataset, user_rows, strict=True):
            task = TaskRecord.from_json(json.loads(row["info"]))
            assert task == want
            prompt = row["prompt"]
            # The question as the model is asked it: a number or year row ends with its line.
            assert prompt[1]["content"].endswith(task_question(task))
            env = loaded.environment_factory()
            env.reset(**row)
            with reading_any_text():  # the root plays the reference as the policy server does
                completion = asyncio.run(_drive(env, prompt, rounds))
            got = _rewards(loaded, env, prompt, completion)
            expected = kit.replay_scores(task, POLICY)
            full = env._score(prompt, completion, None)
            assert set(SCORE_NAMES) <= set(full)
            # Root tokens are estimated from what TRL hands back (as in the synthetic test), so
            # the token terms agree closely; every other score exactly.
            tokens = {"token_budget", "gated_token_budget", REWARD_KEYS[0]}
            for name in SCORE_NAMES:
                if "tokens" not in name and name not in {*tokens, *TIMING_NAMES}:
                    assert full[name] == expected[name], (name, task.row_id)
            for key in tokens:
                assert got[key] == pytest.approx(expected[key], abs=0.05), key
            assert got["correctness"] == 1.0
    finally:
        loaded.close()


def test_user_rows_prompts_state_each_documents_own_length(tmp_path: Any) -> None:
    """All user rows have seed 0, and these two documents the same length in tokens: the
    prompt's stated size is still each document's own."""
    rows = [
        {"document": "a" * 399 + ".", "question": "What?", "answer": "dots"},
        {"document": "b" * 397 + ".", "question": "What?", "answer": "dots"},
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_trl_environment(
        source=str(path), sub_base_url="http://127.0.0.1:9/v1", sub_model="m"
    )
    stated = [row["prompt"][0]["content"] for row in loaded.train_dataset]
    assert "400 characters" in stated[0] and "398 characters" in stated[1]
    loaded.close()


def test_an_answer_without_reading_scores_zero(kit: Any, policy_url: str) -> None:
    loaded = _load(kit, policy_url, 1)
    try:
        row = loaded.train_dataset[0]
        env = loaded.environment_factory()
        env.reset(**row)
        guess = [{"role": "assistant", "content": f"<answer>{row['answer']}</answer>"}]
        got = _rewards(loaded, env, row["prompt"], guess, completion_ids=[[0] * 50])
        # The right words, but the document was never read: no evidence, no credit.
        assert got["format_gate"] == 1.0
        assert got["correctness"] == 0.0 and got["reward"] == 0.0
    finally:
        loaded.close()


def test_a_rollout_cut_off_mid_tool_call_has_no_answer() -> None:
    cut = [
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "repl"}}]},
        {"role": "tool", "name": "repl", "content": "..."},
    ]
    assert final_message(cut) == (None, 1)
    assert final_message([{"role": "assistant", "content": "<answer>x</answer>"}]) == (
        "<answer>x</answer>",
        1,
    )


def test_missing_sub_call_endpoint_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="sub_base_url and sub_model"):
        load_trl_environment(split="eval", num_examples=1, doc_tokens=4_000)
    with pytest.raises(TypeError, match="unknown arguments"):
        load_trl_environment(no_such=1, sub_base_url="http://127.0.0.1:9", sub_model="m")


def test_the_sub_call_endpoint_is_the_shared_endpoint_config_under_sub_names() -> None:
    url = "http://127.0.0.1:9/v1"
    # TRL's defaults: the OpenAI key variable, 120 s, one timeout for connecting and answering.
    assert sub_call_endpoint({"sub_base_url": url, "sub_model": "m"}) == Endpoint(
        url, "m", "OPENAI_API_KEY", 120.0, None
    )
    given = {"sub_api_key_var": "K", "sub_timeout_s": "30", "sub_connect_timeout_s": 5}
    assert sub_call_endpoint({"sub_base_url": url, "sub_model": "m", **given}) == Endpoint(
        url, "m", "K", 30.0, 5.0
    )
    with pytest.raises(ValueError, match=r"sub_timeout_s must be > 0, got 0\.0"):
        check_arguments(sub_base_url=url, sub_model="m", sub_timeout_s=0)


def test_the_trl_extra_requires_a_release_with_environment_factory() -> None:
    """`environment_factory` (TRL running `repl`/`llm` as tools, `environments=` passed to the
    reward functions) first shipped in trl 0.29; an older TRL would accept the trainer arguments
    of the launcher but not this adapter."""
    import tomllib
    from pathlib import Path

    from packaging.requirements import Requirement
    from packaging.version import Version

    pyproject = Path(__file__).parents[3] / "environments" / "fathom_rlm" / "pyproject.toml"
    extra = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["trl"]
    [trl] = [Requirement(r) for r in extra if Requirement(r).name == "trl"]
    assert not trl.specifier.contains(Version("0.28.99")), trl
    assert trl.specifier.contains(Version("0.29.0")), trl
