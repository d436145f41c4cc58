"""The TRL launcher's TOML files: the examples parse and name real rewards; bad files fail clearly.

No TRL here: checking a file needs only the environments' cores. Training through the launcher
runs in the TRL venv (tests/integration/test_trl_launch.py).
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest

from envtools.trl_launch import (
    ADVANTAGE_AGGREGATION,
    ConfigError,
    known_reward_keys,
    load_config,
    main,
    parse_config,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "orchestrator_configs" / "trl").glob("*.toml"))

GOOD: dict[str, Any] = {
    "model": "some/model",
    "advantage": "gdpo",
    "env": {
        "id": "gsm8k-multireward",
        "reward_keys": ["correct_answer", "length_reward"],
        "reward_weights": [1.0, 0.5],
        "args": {"length_threshold_tokens": 256},
    },
    "trainer": {"output_dir": "out", "num_generations": 4},
}


def with_change(path: str, value: Any) -> dict[str, Any]:
    """GOOD with one field set (value None deletes it); path like "env.reward_keys"."""
    raw = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    table = raw
    for key in parents:
        table = table[key]
    if value is None:
        del table[last]
    else:
        table[last] = value
    return raw


def test_the_examples_cover_both_environments_and_both_advantages() -> None:
    seen = set()
    for path in EXAMPLES:
        config = load_config(path)
        assert set(config.reward_keys) <= set(known_reward_keys(config.env_id))
        # <env>-<advantage>, or a model's run of it: <model>-<env or its short name>-<advantage>
        names = (config.env_id, config.env_id.split("-")[0])
        assert path.stem == f"{config.env_id}-{config.advantage}" or any(
            path.stem.endswith(f"-{name}-{config.advantage}") for name in names
        ), path.name
        if config.reward_weights is not None:
            assert len(config.reward_weights) == len(config.reward_keys)
        seen.add((config.env_id, config.advantage))
    assert seen == {(e, a) for e in ("gsm8k-multireward", "fathom-rlm") for a in ("gdpo", "grpo")}


def test_fathom_examples_train_the_prime_rl_model_with_it_answering_sub_calls() -> None:
    """Both trainers train the same instruct model on fathom-rlm (no thinking block per root
    turn), and its base model answers the sub-calls under TRL."""
    prime_rl = ROOT / "orchestrator_configs" / "prime-rl" / "fathom-rlm-grpo.toml"
    model = tomllib.loads(prime_rl.read_text(encoding="utf-8"))["model"]["name"]
    fathom = [load_config(p) for p in EXAMPLES if p.stem.startswith("fathom-rlm")]
    assert len(fathom) == 2
    for config in fathom:
        assert config.model == model == config.env_args["sub_model"]


def test_advantage_maps_to_trls_aggregation() -> None:
    assert ADVANTAGE_AGGREGATION == {
        "gdpo": "normalize_then_sum",
        "grpo": "sum_then_normalize",
    }
    assert parse_config(GOOD).multi_objective_aggregation == "normalize_then_sum"
    grpo = parse_config(with_change("advantage", "grpo"))
    assert grpo.multi_objective_aggregation == "sum_then_normalize"
    assert grpo.reward_weights == (1.0, 0.5)
    assert parse_config(with_change("env.reward_weights", None)).reward_weights is None


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("env.id", "gsm8k", "unknown environment id 'gsm8k'"),
        ("env.reward_keys", ["correct_answer", "brevity"], r"\['brevity'\] are not rewards"),
        ("env.reward_keys", [], "non-empty list"),
        ("env.reward_keys", ["length_reward", "length_reward"], "repeats"),
        ("env.reward_weights", [1.0], "1 entries but reward_keys has 2"),
        ("env.reward_weights", [1.0, "high"], "finite numbers"),
        ("env.reward_weights", [1.0, -0.5], r"negative for \['length_reward'\]"),
        ("env.reward_weights", [0, 0.0], "all 0"),
        ("advantage", "gdpo-lite", "`advantage` must be one of"),
        ("advantage", None, "`advantage` must be one of"),
        ("model", "", "`model`"),
        ("env.args", {"length_threshold_tokens": 0}, "length_threshold_tokens"),
        ("env.args", {"unknown_argument": 1}, "unknown_argument"),
        ("env.extra", 1, r"unknown keys \['extra'\] at \[env\]"),
        ("trainer.multi_objective_aggregation", "sum_then_normalize", "derives"),
        ("trainer.reward_weights", [1.0, 1.0], "derives"),
        ("trainer.scale_rewards", "batch", "no effect with advantage = 'gdpo'"),
        ("env", None, r"an \[env\] table is required"),
        ("seed", 3, r"unknown keys \['seed'\] at top level"),
    ],
)
def test_bad_configs_are_rejected_with_the_field_named(path: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(with_change(path, value))


def test_fathom_needs_its_sub_call_endpoint() -> None:
    raw = {
        "model": "m",
        "advantage": "grpo",
        "env": {"id": "fathom-rlm", "reward_keys": ["reward"], "args": {"split": "train"}},
    }
    with pytest.raises(ConfigError, match="sub_base_url and sub_model"):
        parse_config(raw)


@pytest.mark.parametrize(
    ("args", "message"),
    [({"split": "tarin"}, "split must be one of"), ({"doc_tokens": -5}, "doc_tokens must be >=")],
)
def test_fathom_arguments_are_checked_without_building_documents(
    args: dict[str, Any], message: str
) -> None:
    env = {"sub_base_url": "http://127.0.0.1:1/v1", "sub_model": "m", **args}
    raw = {
        "model": "m",
        "advantage": "grpo",
        "env": {"id": "fathom-rlm", "reward_keys": ["reward"], "args": env},
    }
    with pytest.raises(ConfigError, match=message):
        parse_config(raw)


def test_the_command_line_reports_errors_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'model = "m"\nadvantage = "gdpo"\n[env]\nid = "gsm8k-multireward"\n'
        'reward_keys = ["correct_answer"]\nreward_weights = [1.0, 2.0]\n'
    )
    with pytest.raises(SystemExit) as usage_error:
        main([str(bad), "--check"])
    assert usage_error.value.code == 2
    assert f"{bad}: [env] reward_weights has 2 entries" in capsys.readouterr().err
    broken = tmp_path / "broken.toml"
    broken.write_text("model = \n")
    with pytest.raises(SystemExit) as usage_error:
        main([str(broken), "--check"])
    assert usage_error.value.code == 2
    assert str(broken) in capsys.readouterr().err
    assert main([str(EXAMPLES[0]), "--check"]) == 0
    out = capsys.readouterr().out
    assert ": ok (" in out
    # Without TRL (this venv) the [trainer] names are not checked, and the line says so.
    assert "[trainer] names not checked: TRL is not installed" in out
