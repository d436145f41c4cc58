"""The prime-rl configs: every env block resolves with verifiers' own loader, the curriculum holds.

The whole-file parse needs prime-rl's own config package (Python 3.12, not on PyPI): that is
`scripts/validate_prime_rl.py`, run here only when a prime-rl clone is named by $PRIME_RL_CHECKOUT
(see `test_whole_files_parse_with_prime_rl`). What runs everywhere is the part prime-rl hands to
verifiers: each `[...source.env]` block, train and eval, of each base file and of each curriculum
stage merged onto its base, resolved by `resolve_env_config` on verifiers 0.3.1 (main venv) and
0.4.0 (matrix venv). The mixed file's user-rows block needs the taskset's `source` argument (a
JSONL file of rows).
"""

from __future__ import annotations

import copy
import functools
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

# Both resolve tests of a verifiers version read one process's output: keep them on one worker.
pytestmark = pytest.mark.xdist_group("test_prime_rl_configs")

REPO = Path(__file__).parents[2]
CONFIG_DIR = REPO / "orchestrator_configs" / "prime-rl"
FATHOM = CONFIG_DIR / "fathom-rlm-grpo.toml"
GSM8K = CONFIG_DIR / "gsm8k-multireward-grpo.toml"
MIXED = CONFIG_DIR / "fathom-rlm-mixed.toml"
STAGES = sorted((CONFIG_DIR / "fathom-rlm-grpo-curriculum").glob("*.toml"))

# Resolves each env block given on argv (a JSON list); prints one JSON line per block, with the
# error text for a block the loader refuses.
_RESOLVE = r"""
import json, sys
from verifiers.v1.utils.loaders import environment_class, harness_class, resolve_env_config
for block in json.loads(sys.argv[1]):
    try:
        env = resolve_env_config(block)
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        continue
    taskset, agent = env.taskset, env.agent
    print(json.dumps({
        "env_class": environment_class(taskset.id, env.id).__name__,
        "taskset_config": type(taskset).__name__,
        "taskset": taskset.model_dump(exclude={"task"}, mode="json"),
        "harness": harness_class(agent.harness.id).__name__,
        "harness_config": agent.harness.model_dump(mode="json"),
        "runtime": agent.runtime.type,
        "rollout_timeout": agent.timeout.rollout,
        "reward_weights": {
            name: reward.weight for name, reward in getattr(taskset.task, "rewards", {}).items()
        },
    }))
"""


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """prime-rl's `@ a.toml @ b.toml` rule: tables merge key by key, anything else (lists of
    tables included) is replaced whole."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(merged.get(key), dict) and isinstance(value, dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def load(*paths: Path) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for path in paths:
        config = deep_merge(config, tomllib.loads(path.read_text()))
    return config


def stacks() -> dict[str, dict[str, Any]]:
    named = {FATHOM.name: load(FATHOM), GSM8K.name: load(GSM8K), MIXED.name: load(MIXED)}
    named.update({f"{FATHOM.name} @ {stage.name}": load(FATHOM, stage) for stage in STAGES})
    return named


def env_blocks(config: dict[str, Any]) -> list[dict[str, Any]]:
    orchestrator = config["orchestrator"]
    sources = orchestrator["train"]["source"] + orchestrator.get("eval", {}).get("source", [])
    return [source["env"] for source in sources]


def resolve(python: Path, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result = subprocess.run(
        [str(python), "-c", _RESOLVE, json.dumps(blocks)],
        capture_output=True,
        text=True,
        timeout=600,
        # A relative `source` is read from the working directory, as prime-rl's would be.
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == len(blocks), result.stdout[-2000:]
    return lines


def test_every_source_has_the_current_shape() -> None:
    for name, config in stacks().items():
        orchestrator = config["orchestrator"]
        assert "env" not in orchestrator, f"{name}: the pre-v0.6 [[orchestrator.env]] shape"
        assert orchestrator["batch_size"] % orchestrator["group_size"] == 0, name
        assert orchestrator["group_size"] > 1, name
        for source in orchestrator["train"]["source"]:
            allowed = {"name", "ratio", "env", "serve", "sampling", "group_size", "algo"}
            assert set(source) <= allowed, name
            assert "args" not in source["env"]["taskset"], "taskset fields are typed"
        # The trainer's samples must fit the inference engine's context.
        assert config["seq_len"] <= config["inference"]["vllm"]["max_model_len"], name
        assert "trainer" in config and "deployment" in config, name


# The root transcript's budget (docs/training.md): the prompt (system prompt, tool schemas,
# question) and, per root turn, a reply and one REPL output.
PROMPT_TOKENS = 1_024
TURN_TOKENS = 2_048


def transcript_tokens(max_turns: int) -> int:
    return PROMPT_TOKENS + max_turns * TURN_TOKENS


def test_the_transcript_budget_covers_the_environments_own_caps() -> None:
    from fathom_rlm.agent import prompts
    from fathom_rlm.agent.caps import RolloutCaps
    from fathom_rlm.agent.schemas import tool_schemas
    from fathom_rlm.sandbox import SandboxConfig
    from fathom_rlm.tokens import CHARS_PER_TOKEN

    caps = RolloutCaps(max_turns=24, max_sub_calls=64)
    prompt_chars = len(prompts.root_system_prompt(800_000, caps))
    prompt_chars += len(json.dumps(tool_schemas(0, caps))) + 400  # a long question
    assert prompt_chars / CHARS_PER_TOKEN <= PROMPT_TOKENS
    # A turn holds one REPL output (capped, plus its truncation note) and a reply of 1,000 tokens.
    output_tokens = (SandboxConfig().max_output_chars + 100) / CHARS_PER_TOKEN
    assert TURN_TOKENS - output_tokens >= 1_000


def test_every_fathom_transcript_fits_its_context() -> None:
    """Train samples fit the trainer's `seq_len`; eval episodes (not trained on) fit the
    inference engines' context, at every stage."""
    for name, config in stacks().items():
        orchestrator = config["orchestrator"]
        context = config["inference"]["vllm"]["max_model_len"]
        for source in orchestrator["train"]["source"]:
            taskset = source["env"]["taskset"]
            if taskset["id"] == "fathom-rlm":
                assert transcript_tokens(taskset["max_turns"]) <= config["seq_len"], name
        for source in orchestrator.get("eval", {}).get("source", []):
            taskset = source["env"]["taskset"]
            if taskset["id"] == "fathom-rlm":
                assert transcript_tokens(taskset["max_turns"]) <= context, name


def test_every_source_has_a_wall_clock_cap() -> None:
    for name, config in stacks().items():
        orchestrator = config["orchestrator"]
        sources = orchestrator["train"]["source"] + orchestrator.get("eval", {}).get("source", [])
        for source in sources:
            agent = source["env"]["agent"]
            assert agent.get("timeout", {}).get("rollout", 0) > 0, f"{name}: {source['name']}"
            if source["env"]["taskset"]["id"] == "fathom-rlm":
                # Every model call of an episode is bounded too.
                assert agent["harness"].get("request_timeout", 0) > 0, source["name"]


def test_curriculum_runs_16k_to_200k_on_one_run() -> None:
    base = load(FATHOM)
    (source,) = base["orchestrator"]["train"]["source"]
    steps = [(source["env"]["taskset"]["doc_tokens"], base["max_steps"])]
    for stage in STAGES:
        merged = load(FATHOM, stage)
        (source,) = merged["orchestrator"]["train"]["source"]
        assert source["name"] == "fathom-rlm"
        assert merged["run"]["name"] == base["run"]["name"], "each stage resumes the same run"
        assert merged["resume"] == {}, "each stage resumes from the latest checkpoint"
        # The eval source (the 200K target) is the base's, untouched by every stage.
        assert merged["orchestrator"]["eval"] == base["orchestrator"]["eval"]
        steps.append((source["env"]["taskset"]["doc_tokens"], merged["max_steps"]))
    doc_tokens = [d for d, _ in steps]
    assert doc_tokens[0] == 16_000 and doc_tokens[-1] == 200_000
    assert doc_tokens == sorted(set(doc_tokens)), "document length grows at every stage"
    assert [s for _, s in steps] == sorted({s for _, s in steps}), "max_steps is cumulative"


# Where the fathom taskset reads a user's rows instead of a generated split; the split's own
# arguments do not apply to them.
USER_ROWS_FIELD = "source"
SPLIT_FIELDS = ("split", "doc_tokens", "family_mix")


def test_the_mixed_file_draws_synthetic_tasks_and_user_rows_by_ratio() -> None:
    from fathom_rlm.userdata import load_rows

    mixed, base = load(MIXED), load(FATHOM)
    synthetic, user = mixed["orchestrator"]["train"]["source"]
    assert synthetic["name"] != user["name"], "prime-rl refuses two sources of one name"
    assert synthetic["env"]["taskset"]["id"] == user["env"]["taskset"]["id"] == "fathom-rlm"
    # The generated split on one side, the user's rows (and nothing of a split) on the other.
    assert USER_ROWS_FIELD not in synthetic["env"]["taskset"]
    assert synthetic["env"]["taskset"]["split"] == "train"
    assert not set(SPLIT_FIELDS) & set(user["env"]["taskset"])
    rows = load_rows(REPO / user["env"]["taskset"][USER_ROWS_FIELD])
    assert len(rows) > 0 and all(r.source == "user" for r in rows)
    # The ratios are sampling weights: the documented 0.7 / 0.3 shares.
    ratios = [synthetic["ratio"], user["ratio"]]
    assert all(r > 0 for r in ratios)
    assert [r / sum(ratios) for r in ratios] == pytest.approx([0.7, 0.3])
    # Both sides run under the same caps, harness, runtime and episode cap.
    caps = {k: v for k, v in synthetic["env"]["taskset"].items() if k not in SPLIT_FIELDS}
    assert {k: v for k, v in user["env"]["taskset"].items() if k != USER_ROWS_FIELD} == caps
    assert synthetic["env"]["agent"] == user["env"]["agent"]
    # Everything else is the curriculum base's: restated in full, it must not drift from it.
    varies = {"max_steps", "seq_len", "run"}
    assert {k: v for k, v in mixed.items() if k not in varies | {"orchestrator"}} == {
        k: v for k, v in base.items() if k not in varies | {"orchestrator"}
    }
    assert {k: v for k, v in mixed["orchestrator"].items() if k != "train"} == {
        k: v for k, v in base["orchestrator"].items() if k != "train"
    }
    assert mixed["orchestrator"]["train"]["sampling"] == base["orchestrator"]["train"]["sampling"]
    assert mixed["run"]["name"] != base["run"]["name"], "a run of its own, not a curriculum stage"


def stack_blocks() -> list[tuple[str, dict[str, Any]]]:
    """(stack name, env block) of every train and eval source of every stack."""
    return [(name, block) for name, config in stacks().items() for block in env_blocks(config)]


def swapped_blocks() -> list[dict[str, Any]]:
    """The first fathom and gsm8k blocks, each with a field of the other taskset."""
    (fathom,) = env_blocks(load(FATHOM))[:1]
    (gsm8k,) = env_blocks(load(GSM8K))[:1]
    return [
        {**fathom, "taskset": {**fathom["taskset"], "length_threshold_tokens": 512}},
        {**gsm8k, "taskset": {**gsm8k["taskset"], "doc_tokens": 16000}},
    ]


def resolved(matrix: Any, verifiers_version: str) -> list[dict[str, Any]]:
    """What verifiers' loader makes of every stack block, then of the swapped blocks."""
    python = Path(sys.executable) if verifiers_version == "0.3.1" else matrix.python("0.4.0")
    return _resolve_all(python)


@functools.cache
def _resolve_all(python: Path) -> list[dict[str, Any]]:
    # One process per interpreter for both tests (importing `verifiers.v1` takes seconds).
    return resolve(python, [block for _, block in stack_blocks()] + swapped_blocks())


@pytest.mark.parametrize("verifiers_version", ["0.3.1", "0.4.0"])
def test_env_blocks_resolve_with_verifiers(matrix: Any, verifiers_version: str) -> None:
    named = stack_blocks()
    results = resolved(matrix, verifiers_version)[: len(named)]
    for (name, block), got in zip(named, results, strict=True):
        assert "error" not in got, f"{name}: {got.get('error')}"
        taskset_id = block["taskset"]["id"]
        expected_taskset = {
            "fathom-rlm": "FathomTasksetConfig",
            "gsm8k-multireward": "GSM8KMultirewardTasksetConfig",
        }[taskset_id]
        assert got["taskset_config"] == expected_taskset, name
        for field, value in block["taskset"].items():
            if field == "source":  # the same file, whether kept relative or made absolute
                assert (REPO / got["taskset"][field]).resolve() == (REPO / value).resolve(), name
                continue
            assert got["taskset"][field] == value, f"{name}: {field}"
        assert got["runtime"] == block["agent"]["runtime"]["type"], name
        if taskset_id == "fathom-rlm":
            assert (got["env_class"], got["harness"]) == ("FathomEnv", "FathomHarness"), name
            assert got["harness_config"]["request_timeout"] == block["agent"]["harness"].get(
                "request_timeout", 600.0
            )
        else:
            # The TOML's length weight reaches the task's reward of that name.
            weight = block["taskset"].get("length_reward_weight", 1.0)
            assert got["reward_weights"]["length_reward"] == weight, name
            assert (got["env_class"], got["harness"]) == ("LocalEnv", "NullHarness"), name
        expected_timeout = block["agent"].get("timeout", {}).get("rollout")
        assert got["rollout_timeout"] == expected_timeout, name


@pytest.mark.parametrize("verifiers_version", ["0.3.1", "0.4.0"])
def test_a_field_of_the_other_taskset_is_refused(matrix: Any, verifiers_version: str) -> None:
    first, second = resolved(matrix, verifiers_version)[len(stack_blocks()) :]
    assert "length_threshold_tokens" in first.get("error", "")
    assert "doc_tokens" in second.get("error", "")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_whole_files_parse_with_prime_rl() -> None:
    """Every file and curriculum stack, parsed whole by prime-rl's `RLConfig`.

    Needs a prime-rl clone ($PRIME_RL_CHECKOUT) and a Python 3.12 ($PRIME_RL_PYTHON, default
    `python3.12`); uv installs offline from its cache (run the script once online to warm it).
    """
    checkout = os.environ.get("PRIME_RL_CHECKOUT")
    python = os.environ.get("PRIME_RL_PYTHON", "python3.12")
    if not checkout or shutil.which(python) is None:
        # Not a CI failure: prime-rl is not on PyPI, so no clone exists unless one is provided.
        pytest.skip("set $PRIME_RL_CHECKOUT (a prime-rl clone) and have Python 3.12 to run this")
    script = REPO / "scripts" / "validate_prime_rl.py"
    result = subprocess.run(
        [sys.executable, script, "--prime-rl", checkout, "--python", python],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "UV_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    ok_lines = [line for line in result.stdout.splitlines() if line.startswith("OK ")]
    # The two GRPO files, the mixed file, each curriculum stack and the SFT warm-start file.
    assert len(ok_lines) == 4 + len(STAGES), result.stdout
