"""SFT export: real rollouts of the scripted reference policy on 16K-token tasks, as chat rows.

The rollouts run through the real loop, sandbox and reward (nothing is faked but the policy).
Checked: every rollout's root and each of its sub-calls become one conversation; each
conversation is well formed (every tool call answered, in order, by a tool message naming it; it
ends with an assistant reply without tool calls); the two formats differ only where they should
(tool-call arguments as a JSON string for prime-rl, as an object for TRL); the reward threshold
keeps the honest policy's rollouts and drops a closed-book policy's; a rollout whose answer names
something its conversation was never shown is left out.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fathom_lab import sft_export
from fathom_rlm.documents import TaskRecord, build_split

from envtools.policies.registry import get_policy

pytestmark = pytest.mark.xdist_group("test_sft_export")

DOC_TOKENS = 16_000
N_TASKS = 3
TRL_PROGRAM = Path(__file__).parent / "trl_programs" / "sft_rows.py"


def first_rows(n: int) -> list[TaskRecord]:
    """The first train row that needs a sub-call (depth 1) and the first `n` - 1 others, so
    the export has sub-call conversations whatever the generator's draw of families."""
    split = build_split("train", 20, doc_tokens=DOC_TOKENS)
    deep = next(r for r in split if r.depth >= 1)
    head = [r for r in split if r is not deep][: n - 1]
    return [*head, deep]


@pytest.fixture(scope="module")
def rows() -> list[TaskRecord]:
    return first_rows(N_TASKS)


@pytest.fixture(scope="module")
def reference(rows: list[TaskRecord]) -> list[sft_export.ExportedRollout]:
    chat = sft_export.policy_chat(get_policy("fathom-reference"))
    return asyncio.run(sft_export.export_rollouts(rows, chat, concurrency=1))


def check_conversation(messages: list[dict[str, Any]], arguments_type: type) -> None:
    assert [m["role"] for m in messages[:2]] == ["system", "user"]
    assert messages[-1]["role"] == "assistant" and "tool_calls" not in messages[-1]
    pending: list[tuple[str, str]] = []
    for message in messages[2:]:
        if message["role"] == "assistant":
            assert not pending, "a reply came before every tool call was answered"
            for call in message.get("tool_calls", []):
                assert call["type"] == "function"
                assert isinstance(call["function"]["arguments"], arguments_type)
                pending.append((call["id"], call["function"]["name"]))
        else:
            assert message["role"] == "tool"
            call_id, name = pending.pop(0)
            assert (message["tool_call_id"], message["name"]) == (call_id, name)
            assert isinstance(message["content"], str)
    assert not pending


def test_every_rollout_yields_its_root_and_each_sub_call(
    reference: list[sft_export.ExportedRollout],
) -> None:
    assert all(r.error is None for r in reference)
    assert sum(r.llm_calls for r in reference) > 0, "the reference policy recurses"
    for rollout in reference:
        roles = [c.role for c in rollout.conversations]
        assert roles == ["root"] + ["sub"] * rollout.llm_calls
        root = rollout.conversations[0]
        assert root.messages[1]["content"].endswith(rollout.row.question)
        assert {t["function"]["name"] for t in root.tools} == {"repl", "llm"}
        assert "<answer>" in root.messages[-1]["content"]
        # Each sub-call is its own exchange: its system prompt differs from the root's.
        for sub in rollout.conversations[1:]:
            assert sub.messages[0]["content"] != root.messages[0]["content"]


@pytest.mark.parametrize(("fmt", "arguments_type"), [("prime-rl", str), ("trl", dict)])
def test_rows_are_well_formed_chats_with_tools(
    reference: list[sft_export.ExportedRollout], fmt: str, arguments_type: type
) -> None:
    rows = sft_export.select_rows(reference, 0.5, fmt)  # type: ignore[arg-type]
    kept = [r for r in reference if r.reward >= 0.5 and not r.ungrounded]
    assert len(rows) == sum(len(r.conversations) for r in kept) > 0
    for row in rows:
        assert set(row) == {"messages", "tools", "metadata"}
        check_conversation(row["messages"], arguments_type)
        tools = json.loads(row["tools"])
        for tool in tools:
            assert tool["type"] == "function" and tool["function"]["parameters"]["type"] == "object"
        metadata = json.loads(row["metadata"])
        assert metadata["reward"] >= 0.5 and metadata["doc_tokens"] == DOC_TOKENS
        if fmt == "prime-rl":
            for message in row["messages"]:
                for call in message.get("tool_calls", []):
                    assert isinstance(json.loads(call["function"]["arguments"]), dict)


def test_threshold_keeps_honest_rollouts_and_drops_closed_book(
    rows: list[TaskRecord], reference: list[sft_export.ExportedRollout]
) -> None:
    assert all(r.reward >= 0.5 for r in reference)
    closed = asyncio.run(
        sft_export.export_rollouts(
            rows, sft_export.policy_chat(get_policy("fathom-closed-book")), concurrency=1
        )
    )
    assert all(r.error is None and r.reward < 0.5 for r in closed)
    assert sft_export.select_rows(closed, 0.5, "trl") == []
    # Above every reward, nothing is kept; the roles filter keeps only roots.
    assert sft_export.select_rows(reference, 1.01, "trl") == []
    roots = sft_export.select_rows(reference, 0.5, "trl", roles=("root",))
    assert [json.loads(r["metadata"])["role"] for r in roots] == ["root"] * N_TASKS


def _conversation(shown: str, answer: str) -> sft_export.Conversation:
    return sft_export.Conversation(
        "sub",
        [
            {"role": "system", "content": "You answer a sub-question. Reisa Hotou."},
            {"role": "user", "content": "Question: Who founded the Mipar Syndicate?"},
            {"role": "assistant", "content": "", "tool_calls": []},
            {"role": "tool", "content": shown},
            {"role": "assistant", "content": f"<answer>{answer}</answer>"},
        ],
        [],
    )


def test_an_answer_names_only_what_its_conversation_was_shown() -> None:
    shown = "The Mipar Syndicate owed its existence to Mistress Hotou, who set it up in 1792."
    ungrounded = sft_export.ungrounded_claims
    assert ungrounded(_conversation(shown, "Mistress Hotou")) == []
    assert ungrounded(_conversation(shown, "mistress hotou.")) == []  # the reward's normalising
    # The first name is in no user or tool message (the system prompt is not evidence).
    assert ungrounded(_conversation(shown, "Reisa Hotou")) == ["Reisa Hotou"]
    assert ungrounded(_conversation(shown, "7")) == []  # a count is computed, not read
    assert ungrounded(_conversation(shown, "not found")) == []
    quote = "who set it up in 1792"
    assert ungrounded(_conversation(shown, f"partial | evidence: {quote}")) == []
    partial = f"partial | next: Reisa Hotou | evidence: {quote} || Hotou retired in 1801"
    assert ungrounded(_conversation(shown, partial)) == ["Reisa Hotou", "Hotou retired in 1801"]


def test_rollouts_that_answer_what_they_never_saw_are_left_out() -> None:
    """A rollout whose closing answer names what its text never showed is not training data,
    whatever its reward. Real rollouts, with one sub-call's answer swapped for a name no
    message of that conversation holds (the honest reference itself answers from its text)."""
    rows = first_rows(4)
    chat = sft_export.policy_chat(get_policy("fathom-reference"))
    rollouts = asyncio.run(sft_export.export_rollouts(rows, chat))
    assert all(not r.ungrounded for r in rollouts)  # the reference answers only what it read
    target = next(
        i
        for i, r in enumerate(rollouts)
        if r.reward >= 0.5 and any(c.role == "sub" for c in r.conversations)
    )
    sub = next(c for c in rollouts[target].conversations if c.role == "sub")
    invented = "Zyxqor Vantablik"
    sub.messages[-1] = {"role": "assistant", "content": f"<answer>{invented}</answer>"}
    assert rollouts[target].ungrounded == [invented]
    kept = sft_export.select_rows(rollouts, 0.5, "trl", roles=("root",))
    kept_tasks = [json.loads(r["metadata"])["task"] for r in kept]
    assert target not in kept_tasks  # the reward threshold alone would have kept it
    assert kept_tasks == [i for i, r in enumerate(rollouts) if r.reward >= 0.5 and not r.ungrounded]


def test_command_writes_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sft.jsonl"
    argv = ["--n", "2", "--doc-tokens", str(DOC_TOKENS), "--format", "prime-rl", "--out", str(out)]
    assert sft_export.main(argv) == 0
    lines = out.read_text().splitlines()
    assert lines and all(json.loads(line)["messages"] for line in lines)
    assert "2 rollouts: 2 kept" in capsys.readouterr().out
    # A policy whose rollouts all score under the threshold writes no rows and fails loudly.
    assert sft_export.main([*argv, "--policy", "fathom-closed-book"]) == 1
    assert out.read_text() == ""
    # A threshold above the reward's range is a usage error.
    with pytest.raises(SystemExit) as usage_error:
        sft_export.main([*argv, "--min-reward", "1.01"])
    assert usage_error.value.code == 2


def test_command_exports_user_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--data` exports from the user's own rows: the model is asked each question with its
    answer-kind line, and the row's id rides in the metadata."""
    rows = Path(__file__).resolve().parents[1] / "fathom_rlm" / "userdata" / "fixtures"
    out = tmp_path / "sft.jsonl"
    argv = ["--data", str(rows / "harbour.jsonl"), "--n", "3", "--roles", "root"]
    assert sft_export.main([*argv, "--out", str(out)]) == 0
    assert "3 rollouts: 3 kept" in capsys.readouterr().out
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    ids = [json.loads(row["metadata"])["id"] for row in exported]
    assert ids == ["founder", "ships", "storm-year"]
    asked = [row["messages"][1]["content"] for row in exported]
    assert asked[1].endswith("Answer with a number.") and asked[2].endswith("Answer with a year.")


def _without_nulls(value: Any) -> Any:
    # What a JSON dataset's schema union adds (null-filled keys), stripped back out.
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def test_rows_load_with_datasets_as_each_trainer_reads_them(
    reference: list[sft_export.ExportedRollout], tmp_path: Path
) -> None:
    import datasets  # a dev dependency (the [verifiers] extras): missing is a failure, not a skip

    # TRL: the documented `from_list(..., on_mixed_types="use_json")` keeps every row exactly.
    trl_rows = sft_export.select_rows(reference, 0.5, "trl")
    loaded = datasets.Dataset.from_list(trl_rows, on_mixed_types="use_json")
    assert [loaded[i]["messages"] for i in range(len(loaded))] == [r["messages"] for r in trl_rows]
    # prime-rl: `load_dataset(<dir>, split="train")` on a directory holding train.jsonl; after
    # its null-field stripping every message is as written, arguments still JSON strings.
    prime_rows = sft_export.select_rows(reference, 0.5, "prime-rl")
    folder = tmp_path / "fathom-sft"
    folder.mkdir()
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in prime_rows))
    loaded = datasets.load_dataset(str(folder), split="train")
    assert [_without_nulls(loaded[i]["messages"]) for i in range(len(loaded))] == [
        r["messages"] for r in prime_rows
    ]
    assert loaded[0]["tools"] == prime_rows[0]["tools"]


def test_trl_sft_trainer_reads_the_trl_rows(
    reference: list[sft_export.ExportedRollout], tmp_path: Path
) -> None:
    """TRL's own SFTTrainer prepares the rows (tools column, tool calls) and trains a step on one.

    Runs in the TRL venv ($TRL_PYTHON, built by scripts/test.sh); skipped elsewhere, failed under
    CI when that venv is missing.
    """
    python = os.environ.get("TRL_PYTHON")
    if not python or not Path(python).is_file():
        reason = "$TRL_PYTHON names no interpreter: scripts/test.sh builds the TRL venv"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    rows = sft_export.select_rows(reference, 0.5, "trl")[:4]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    result = subprocess.run(
        [python, str(TRL_PROGRAM), str(path), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert math.isfinite(out["loss"])
    for row, text in zip(rows, out["texts"], strict=True):
        # The tools column reached the chat template as a list of schemas.
        assert text.startswith("TOOLS [") and '"name": "repl"' in text
        for message in row["messages"]:
            if message.get("content"):
                assert message["content"] in text
        # Every tool call rendered with its arguments as a JSON object (not a re-encoded string).
        calls = [c for m in row["messages"] for c in m.get("tool_calls", [])]
        rendered = re.findall(r"<call>(\w+) (.*?)</call>", text, flags=re.DOTALL)
        assert len(rendered) == len(calls) > 0
        for (name, arguments), call in zip(rendered, calls, strict=True):
            assert name == call["function"]["name"]
            assert json.loads(arguments) == call["function"]["arguments"]
