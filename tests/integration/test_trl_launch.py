"""TRL end to end, in the TRL venv (scripts/test.sh builds it and exports $TRL_PYTHON).

- `gdpo_reference` equals TRL's own advantage computation (its trainer's scoring step) on random
  rewards, for GDPO (`normalize_then_sum`) and GRPO (`sum_then_normalize`).
- Two real training steps through the launcher, GRPO and GDPO, on a tiny random model and the
  GSM8K fixture rows: each reward component is logged, and the advantages TRL trained on
  (its completions log) equal `gdpo_advantages` / `grpo_advantages` on the logged rewards.
- fathom-rlm through TRL's own tool loop (`environment_factory`): one GDPO step whose rollouts
  call the real sandbox and real sub-calls (scripted policy server on loopback), scored by the core.
- Every example file in orchestrator_configs/trl passes `--check` against TRL's `GRPOConfig`.
- A model whose chat template has no tools (SmolLM2) gets the local server's text convention:
  TRL renders what the server sends, byte for byte, and parses the model's calls back.

Under CI (CI=true) a missing TRL venv fails these tests; elsewhere they are skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from gdpo_reference import gdpo_advantages, grpo_advantages

pytestmark = pytest.mark.xdist_group("test_trl_launch")

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).parent / "trl_programs"
FIXTURE = ROOT / "tests" / "gsm8k_multireward" / "fixtures" / "adapters.jsonl"
FIXTURE_ANSWERS = ["29", "27"]  # the first two rows: the run trains on those
WRONG_ANSWER = "30"
TRL_CONFIGS = sorted((ROOT / "orchestrator_configs" / "trl").glob("*.toml"))


@pytest.fixture(scope="module")
def trl_python() -> Path:
    value = os.environ.get("TRL_PYTHON")
    if value and Path(value).is_file():
        # Absolute, not resolved: the venv's python is a symlink, and the venv is where it sits.
        return Path(value).absolute()
    reason = "$TRL_PYTHON names no interpreter: scripts/test.sh builds the TRL venv"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def tiny_model(
    trl_python: Path, trl_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A 2-layer random Llama whose vocabulary holds the fixture answers as whole tokens."""
    out = tmp_path_factory.mktemp("tiny-model")
    _run(
        [trl_python, PROGRAMS / "tiny_model.py", out, *FIXTURE_ANSWERS, WRONG_ANSWER],
        cwd=out,
        env=trl_env,
    )
    return out


@pytest.fixture(scope="module")
def trl_env(offline_env: Callable[..., dict[str, str]]) -> dict[str, str]:
    """No network beyond loopback, quiet TRL, one torch thread (the machine is shared)."""
    return offline_env(TRL_EXPERIMENTAL_SILENCE="1", OMP_NUM_THREADS="1")


def _run(argv: list, cwd: Path, env: dict[str, str], stdin: str | None = None) -> str:
    """Run a TRL-venv command; on failure, show its output. Returns stdout."""
    result = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = f"{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    assert result.returncode == 0, f"{[str(a) for a in argv[:3]]} failed:\n{output}"
    return result.stdout


# ------------------------------------------------------------------ gdpo_advantages against TRL


def _random_case(rng: np.random.Generator, aggregation: str, shape: tuple, weights: list) -> dict:
    rewards = rng.normal(size=shape).round(3)
    binary = rng.integers(0, 2, size=shape).astype(float)
    rewards[..., 0] = binary[..., 0]  # a binary component, as in GSM8K's correct_answer
    # A few rewards that do not apply (TRL's None) and, in one case, a zero-variance group.
    rewards[rng.random(size=shape) < 0.1] = np.nan
    if shape[0] > 2:
        rewards[1, :, -1] = 1.0
    return {
        "aggregation": aggregation,
        "weights": weights,
        "rewards": [
            [[None if np.isnan(v) else float(v) for v in row] for row in g] for g in rewards
        ],
    }


def _as_array(case: dict) -> np.ndarray:
    return np.array(
        [[[np.nan if v is None else v for v in row] for row in g] for g in case["rewards"]]
    )


def test_gdpo_and_grpo_equal_trls_own_advantages(
    trl_python: Path, trl_env: dict[str, str], tiny_model: Path
) -> None:
    rng = np.random.default_rng(2601)
    cases = [
        _random_case(rng, "normalize_then_sum", (3, 4, 2), [1.0, 1.0]),
        _random_case(rng, "normalize_then_sum", (4, 3, 3), [1.0, 0.5, 2.0]),
        _random_case(rng, "normalize_then_sum", (2, 5, 2), [0.3, 1.7]),
        _random_case(rng, "sum_then_normalize", (3, 4, 2), [1.0, 0.5]),
        _random_case(rng, "sum_then_normalize", (2, 5, 3), [1.0, 1.0, 1.0]),
    ]
    request = json.dumps({"model_dir": str(tiny_model), "cases": cases})
    trl_results = json.loads(
        _run([trl_python, PROGRAMS / "trl_advantages.py"], tiny_model, trl_env, request)
    )
    assert len(trl_results) == len(cases)
    for case, trl_advantages in zip(cases, trl_results, strict=True):
        rewards = _as_array(case)
        if case["aggregation"] == "normalize_then_sum":
            ours = gdpo_advantages(rewards, case["weights"])
        else:
            ours = grpo_advantages(rewards, case["weights"])
        # TRL computes in float32; ours in float64.
        np.testing.assert_allclose(
            ours.ravel(), trl_advantages, rtol=1e-4, atol=1e-4, err_msg=str(case)
        )
        assert np.count_nonzero(ours) > rewards.shape[0], "a degenerate case proves nothing"


# ------------------------------------------------------------------ training through the launcher


def _smoke_config(model: Path, out: Path, advantage: str) -> str:
    return f"""
model = "{model}"
advantage = "{advantage}"

[env]
id = "gsm8k-multireward"
reward_keys = ["correct_answer", "length_reward"]
reward_weights = [1.0, 0.5]

[env.args]
dataset_name = "{FIXTURE}"
num_examples = {len(FIXTURE_ANSWERS)}
system_prompt = ""
# The tiny vocabulary holds whole "\\boxed{{N}}" tokens: a 1-2 token correct answer pays both.
length_threshold_tokens = 2
math_verify_max_workers = 1

[trainer]
output_dir = "{out}"
use_cpu = true
max_steps = 2
per_device_train_batch_size = 8
num_generations = 4
max_completion_length = 4
temperature = 1.0
learning_rate = 1e-3
logging_steps = 1
log_completions = true
num_completions_to_print = 1
save_strategy = "no"
report_to = "none"
seed = 0
"""


@pytest.mark.slow
@pytest.mark.parametrize("advantage", ["grpo", "gdpo"])
def test_two_training_steps_through_the_launcher(
    trl_python: Path, trl_env: dict[str, str], tiny_model: Path, tmp_path: Path, advantage: str
) -> None:
    out = tmp_path / "run"
    config = tmp_path / f"smoke-{advantage}.toml"
    config.write_text(_smoke_config(tiny_model, out, advantage))
    _run([trl_python, "-m", "envtools.trl_launch", config], cwd=tmp_path, env=trl_env)

    history = json.loads((out / "log_history.json").read_text())
    steps = [entry for entry in history if "loss" in entry]
    assert [entry["step"] for entry in steps] == [1, 2]
    for entry in steps:
        for key in ("correct_answer", "length_reward"):
            assert f"rewards/{key}/mean" in entry and f"rewards/{key}/std" in entry
    assert (out / "model.safetensors").is_file()

    seen_correct = seen_length = 0.0
    other_gap = 0.0  # how far TRL's advantages are from the *other* aggregation's reference
    for step in (1, 2):
        table = pq.read_table(out / "completions" / f"completions_{step:05d}.parquet").to_pydict()
        prompts = [json.dumps(p, sort_keys=True) for p in table["prompt"]]
        # TRL's sampler lays a batch out as groups of num_generations rollouts of one prompt.
        groups = [prompts[i : i + 4] for i in range(0, len(prompts), 4)]
        assert len(groups) == 2 and all(len(set(g)) == 1 for g in groups)
        rewards = np.stack([table["correct_answer"], table["length_reward"]], axis=-1)
        rewards = rewards.reshape(2, 4, 2)
        logged_mean = next(e for e in steps if e["step"] == step)["rewards/correct_answer/mean"]
        assert rewards[..., 0].mean() == pytest.approx(logged_mean)
        reference = {"gdpo": gdpo_advantages, "grpo": grpo_advantages}
        expected = reference[advantage](rewards, [1.0, 0.5])
        other = reference["grpo" if advantage == "gdpo" else "gdpo"](rewards, [1.0, 0.5])
        np.testing.assert_allclose(table["advantage"], expected.ravel(), rtol=1e-4, atol=1e-4)
        other_gap = max(
            other_gap, float(np.abs(np.array(table["advantage"]) - other.ravel()).max())
        )
        seen_correct += rewards[..., 0].sum()
        seen_length += rewards[..., 1].sum()
    # The fixed seed gives both rewards some successes: the comparison above is not all zeros.
    assert seen_correct > 0 and seen_length > 0
    # ...and the logged rewards tell the two aggregations apart, so a launcher that sent the
    # wrong `multi_objective_aggregation` to TRL would fail the comparison above.
    assert other_gap > 1e-2


REAL_MODEL_GROUPS, REAL_MODEL_GENERATIONS = 1, 4


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("advantage", ["grpo", "gdpo"])
def test_two_training_steps_of_the_real_model(
    trl_python: Path, trl_env: dict[str, str], tmp_path: Path, advantage: str
) -> None:
    """The same launcher on SmolLM2-135M-Instruct (`model = "local:smollm2-135m"`, weights from
    the registry package): two real steps, finite losses, and every logged reward statistic is
    the environment's own score of the completions the model wrote. A 135M model rarely boxes
    an answer in 32 tokens, so its rewards are mostly 0; the tiny model above covers non-zero
    advantages."""
    from gsm8k_multireward.config import GSM8KConfig
    from gsm8k_multireward.grading import MathGrader
    from gsm8k_multireward.rewards import score_completion

    out = tmp_path / "run"
    config = tmp_path / f"real-{advantage}.toml"
    text = _smoke_config(Path("MODEL"), out, advantage)
    text = text.replace('model = "MODEL"', 'model = "local:smollm2-135m"')
    text = text.replace("length_threshold_tokens = 2", "length_threshold_tokens = 24")
    text = text.replace("num_examples = 2", f"num_examples = {REAL_MODEL_GROUPS}")
    text = text.replace('system_prompt = ""\n', "")  # the environment's own prompt
    text = text.replace("per_device_train_batch_size = 8", "per_device_train_batch_size = 4")
    text = text.replace("max_completion_length = 4", "max_completion_length = 32")
    text = text.replace("learning_rate = 1e-3", "learning_rate = 1e-6")
    config.write_text(text)
    _run([trl_python, "-m", "envtools.trl_launch", config], cwd=tmp_path, env=trl_env)

    history = json.loads((out / "log_history.json").read_text())
    steps = [entry for entry in history if "loss" in entry]
    assert [entry["step"] for entry in steps] == [1, 2]
    assert all(np.isfinite(entry["loss"]) for entry in steps)
    gsm8k = GSM8KConfig(dataset_name=str(FIXTURE), length_threshold_tokens=24)
    grader = MathGrader(max_workers=1)
    answers = dict(
        (row["question"], row["answer"].rsplit("####", 1)[1].strip())
        for row in map(json.loads, FIXTURE.read_text().splitlines())
    )
    try:
        for entry in steps:
            step = entry["step"]
            table = pq.read_table(out / "completions" / f"completions_{step:05d}.parquet")
            rows = table.to_pylist()
            assert len(rows) == REAL_MODEL_GROUPS * REAL_MODEL_GENERATIONS
            texts = [row["completion"][-1]["content"] for row in rows]
            assert all(isinstance(t, str) and t.strip() for t in texts), texts  # the model wrote
            for row, completion in zip(rows, texts, strict=True):
                question = row["prompt"][-1]["content"]
                gold = next(a for q, a in answers.items() if q in question)
                ours = score_completion(completion, gold, grader, gsm8k)
                assert row["correct_answer"] == ours["correct_answer"], completion
                if ours["correct_answer"] == 0.0:  # the length reward is gated on it
                    assert row["length_reward"] == 0.0
            for key in ("correct_answer", "length_reward"):
                assert entry[f"rewards/{key}/mean"] == pytest.approx(
                    np.mean([r[key] for r in rows])
                )
    finally:
        grader.close()


def test_example_configs_pass_check_with_trl(
    trl_python: Path, trl_env: dict[str, str], tmp_path: Path
) -> None:
    assert TRL_CONFIGS, "orchestrator_configs/trl has no example files"
    for config in TRL_CONFIGS:
        stdout = _run(
            [trl_python, "-m", "envtools.trl_launch", config, "--check"], cwd=ROOT, env=trl_env
        )
        assert f"{config}: ok" in stdout and "not checked" not in stdout
    # With TRL installed, a misspelt GRPOConfig field fails the check (exit 2), named.
    typo = tmp_path / "typo.toml"
    text = TRL_CONFIGS[0].read_text(encoding="utf-8")
    assert "\nlearning_rate =" in text
    typo.write_text(text.replace("\nlearning_rate =", "\nlearnig_rate =", 1))
    result = subprocess.run(
        [str(trl_python), "-m", "envtools.trl_launch", str(typo), "--check"],
        cwd=ROOT,
        env=trl_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{typo}: [trainer] has fields GRPOConfig does not know: ['learnig_rate']" in (
        result.stderr
    )


# ------------------------------------------------------------------ fathom-rlm through TRL's tools


def _fathom_config(model: Path, out: Path, sub_url: str) -> str:
    return f"""
model = "{model}"
advantage = "gdpo"

[env]
id = "fathom-rlm"
reward_keys = ["correctness", "gated_token_budget", "format_gate"]
reward_weights = [1.0, 0.2, 0.25]

[env.args]
split = "eval"
num_examples = 2
doc_tokens = {FATHOM_DOC_TOKENS}
max_turns = 3
sub_base_url = "{sub_url}"
sub_model = "fathom-reference"

[trainer]
output_dir = "{out}"
use_cpu = true
max_steps = 1
per_device_train_batch_size = 8
num_generations = 4
max_completion_length = 400
temperature = 1.0
logging_steps = 1
log_completions = true
num_completions_to_print = 0
save_strategy = "no"
report_to = "none"
seed = 0
"""


FATHOM_DOC_TOKENS = 16_000


@pytest.mark.slow
def test_fathom_rollouts_call_the_real_tools_through_trl(
    trl_python: Path, trl_env: dict[str, str], tmp_path: Path
) -> None:
    """One GDPO step where TRL runs the root turns: its tool loop calls `repl` (the sandbox) and
    `llm` (sub-calls to the scripted policy server over loopback), and the core scores each
    rollout. The random model's tool calls are whole tokens of its vocabulary."""
    from fathom_lab.evaluate import registered_tasks
    from fathom_rlm.adapters.scoring import load_document
    from fathom_rlm.adapters.trl import final_message
    from fathom_rlm.documents import build_split
    from fathom_rlm.rewards import format_gate

    from envtools.policy_server import policy_server_in_thread

    model = tmp_path / "tool-model"
    _run([trl_python, PROGRAMS / "tiny_model.py", "--tools", model], cwd=tmp_path, env=trl_env)
    rows = build_split("eval", 2, doc_tokens=FATHOM_DOC_TOKENS)
    out = tmp_path / "run"
    config = tmp_path / "fathom-gdpo.toml"
    # The scripted sub-call reader finds these rows (built at the test's document length).
    with registered_tasks(rows), policy_server_in_thread() as url:
        config.write_text(_fathom_config(model, out, url))
        _run([trl_python, "-m", "envtools.trl_launch", config], cwd=tmp_path, env=trl_env)

    [step] = [e for e in json.loads((out / "log_history.json").read_text()) if "loss" in e]
    for key in ("correctness", "gated_token_budget", "format_gate"):
        assert f"rewards/{key}/mean" in step
    assert step["tools/call_frequency"] > 0 and step["tools/failure_frequency"] == 0

    table = pq.read_table(out / "completions" / "completions_00001.parquet").to_pydict()
    tool_messages = [m for c in table["completion"] for m in c if m["role"] == "tool"]
    # The REPL shows printed output without its trailing newline.
    documents = {load_document(row)[:300].rstrip("\n") for row in rows}
    repl_outputs = [m["content"] for m in tool_messages if m["name"] == "repl"]
    llm_outputs = [m["content"] for m in tool_messages if m["name"] == "llm"]
    # `print(doc[:300])` ran in the sandbox over the row's document.
    assert repl_outputs and all(text in documents for text in repl_outputs)
    # Every sub-call reached the policy server and came back with its answer.
    assert llm_outputs and not any(text.startswith("Error") for text in llm_outputs)
    # The core scored each rollout from TRL's completion: its closing reply or none.
    expected_gate = [format_gate(final_message(c)[0]) for c in table["completion"]]
    assert table["format_gate"] == expected_gate
    rewards = np.stack(
        [table["correctness"], table["gated_token_budget"], table["format_gate"]], axis=-1
    ).reshape(2, 4, 3)
    np.testing.assert_allclose(
        table["advantage"], gdpo_advantages(rewards, [1.0, 0.2, 0.25]).ravel(), atol=1e-4
    )


# ------------------------------------------------- a model whose template has no tools: SmolLM2

_SCHEMA = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
_TOOLS = [
    {
        "type": "function",
        "function": {"name": "repl", "description": "Run code.", "parameters": _SCHEMA},
    },
    {"type": "function", "function": {"name": "llm", "description": "Ask — a sub-question."}},
]
_CALL = {"type": "function", "function": {"name": "repl", "arguments": {"code": "print(doc[:9])"}}}
TOOL_CONVERSATIONS = [
    # a system message, a call with text before it, its result, an answer
    [
        [
            {"role": "system", "content": "Answer about the document."},
            {"role": "user", "content": "Who?"},
            {"role": "assistant", "content": "Let me look.", "tool_calls": [_CALL]},
            {"role": "tool", "name": "repl", "content": "Émile Zola"},
            {"role": "assistant", "content": "<answer>Émile Zola</answer>"},
        ],
        _TOOLS,
    ],
    # no system message; two calls in one reply, one with arguments as a JSON string; list content
    [
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Part one. "},
                    {"type": "text", "text": "Two."},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    _CALL,
                    {
                        "type": "function",
                        "function": {
                            "name": "llm",
                            "arguments": json.dumps({"prompt": "p", "slice": "0:10"}),
                        },
                    },
                ],
            },
            {"role": "tool", "content": "a"},
            {"role": "tool", "content": "b"},
        ],
        _TOOLS,
    ],
    # no tools at all: the model's own template, unchanged
    [[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}], None],
]


def test_a_template_without_tools_renders_them_as_the_local_server_does(
    trl_python: Path, trl_env: dict[str, str], tmp_path: Path
) -> None:
    """SmolLM2's template knows no tools, and TRL's tool loop needs one that does: the launcher
    wraps it so TRL renders exactly the text the local server sends (what the fathom warm start
    was trained on), passes TRL's own checks, and reads calls back from the model's reply."""
    call = '<tool_call>{"name": "repl", "arguments": {"code": "print(1)"}}</tool_call>'
    request = {
        "conversations": TOOL_CONVERSATIONS,
        "reply": f"Looking.\n{call}<|im_end|>",
        "cut_reply": '<tool_call>{"name": "repl", "arguments": {"code": "pri',
    }
    out = json.loads(
        _run([trl_python, PROGRAMS / "tool_template.py"], tmp_path, trl_env, json.dumps(request))
    )
    for served, templated in out["pairs"]:
        assert templated == served
    # The wrapped template really carries the tools and the calls.
    first = out["pairs"][0][1]
    assert '"name": "repl"' in first and "Ask — a sub-question." in first
    assert (
        '<tool_call>{"name": "repl", "arguments": {"code": "print(doc[:9])"}}</tool_call>' in first
    )
    assert out["own_template_has_tools"] is False
    assert out["supports_tool_calling"] is True and out["prefix_preserving"] is True
    assert out["call"]["content"] == "Looking."
    assert out["call"]["tool_calls"] == [
        {"type": "function", "function": {"name": "repl", "arguments": {"code": "print(1)"}}}
    ]
    # A call cut by the token cap is no call: TRL keeps the text and runs nothing.
    assert "tool_calls" not in out["cut"] or not out["cut"]["tool_calls"]
