"""Train an environment with TRL's `GRPOTrainer` from a TOML file: GRPO or GDPO advantages.

    python -m envtools.trl_launch orchestrator_configs/trl/gsm8k-multireward-gdpo.toml
    python -m envtools.trl_launch CONFIG.toml --check   # validate only, no training

The file (schema in docs/training.md, examples in orchestrator_configs/trl/):

    model = "Qwen/Qwen2.5-1.5B-Instruct"      # a model id, a local directory (with tokenizer),
                                              # or "local:smollm2-135m" (envtools.local_model)
    advantage = "gdpo"                        # "gdpo" or "grpo"

    [env]
    id = "gsm8k-multireward"                  # an environment with a TRL adapter
    reward_keys = ["correct_answer", "length_reward"]
    reward_weights = [1.0, 1.0]               # optional: the environment's own weights
    [env.args]                                # the environment's arguments
    length_threshold_tokens = 384

    [trainer]                                 # any other `GRPOConfig` field, passed through
    output_dir = "outputs/trl/gsm8k-gdpo"

`advantage = "gdpo"` sets `multi_objective_aggregation = "normalize_then_sum"` (each reward
z-scored in its group, weighted sum, batch z-score; `gdpo_reference.gdpo_advantages`);
`"grpo"` sets `"sum_then_normalize"` (weighted sum, then a group z-score). Each reward key
becomes one TRL reward function, logged as `rewards/<key>/mean` and `rewards/<key>/std`.
After training the launcher writes `log_history.json` to the output directory.

Checking a file needs no TRL; building the trainer does (a separate venv: docs/training.md).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envtools import cli, local_model, tool_calls

ADVANTAGE_AGGREGATION: dict[str, str] = {
    "gdpo": "normalize_then_sum",
    "grpo": "sum_then_normalize",
}
"""The `advantage` setting to TRL's `GRPOConfig.multi_objective_aggregation`."""

TRL_ADAPTERS: dict[str, str] = {
    "gsm8k-multireward": "gsm8k_multireward.adapters.trl",
    "fathom-rlm": "fathom_rlm.adapters.trl",
}
"""Environment id to the module with its TRL adapter (`REWARD_KEYS`, `check_arguments`,
`load_trl_environment`)."""

# Set by the launcher from `advantage` and `[env]`; setting them in [trainer] too is a conflict.
_LAUNCHER_FIELDS = ("multi_objective_aggregation", "reward_weights")
LOCAL_PREFIX = "local:"
"""`model = "local:smollm2-135m"`: a model of `envtools.local_model`, whose weights come from a
package of the registry (no hub)."""
_TOP_KEYS = {"model", "advantage", "env", "trainer"}
_ENV_KEYS = {"id", "args", "reward_keys", "reward_weights"}


class ConfigError(ValueError):
    """A launcher TOML file that cannot run; the message names the file and the field."""


@dataclass(frozen=True)
class LaunchConfig:
    """A checked launcher file."""

    model: str
    advantage: str
    env_id: str
    env_args: dict[str, Any]
    reward_keys: tuple[str, ...]
    reward_weights: tuple[float, ...] | None
    """None: the environment's own weights for these keys."""
    trainer: dict[str, Any] = field(default_factory=dict)

    @property
    def multi_objective_aggregation(self) -> str:
        return ADVANTAGE_AGGREGATION[self.advantage]


def load_config(path: str | Path) -> LaunchConfig:
    """Read and check a launcher file; raises ConfigError naming the first problem."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    try:
        return parse_config(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def parse_config(raw: Mapping[str, Any]) -> LaunchConfig:
    """Check a parsed launcher file (see the module docstring for its fields)."""
    _no_unknown(raw, _TOP_KEYS, "top level")
    model = raw.get("model")
    if not isinstance(model, str) or not model.strip():
        raise ConfigError("`model` must be a model id, a local directory or local:<name>")
    if model.startswith(LOCAL_PREFIX) and model[len(LOCAL_PREFIX) :] not in local_model.MODELS:
        raise ConfigError(
            f"`model` {model!r} names no registry-packaged model; known: "
            f"{[LOCAL_PREFIX + name for name in local_model.MODELS]}"
        )
    advantage = raw.get("advantage")
    if advantage not in ADVANTAGE_AGGREGATION:
        raise ConfigError(
            f"`advantage` must be one of {sorted(ADVANTAGE_AGGREGATION)}, got {advantage!r}"
        )
    env = raw.get("env")
    if not isinstance(env, Mapping):
        raise ConfigError("an [env] table is required (id, reward_keys, optional args)")
    _no_unknown(env, _ENV_KEYS, "[env]")
    env_id = env.get("id")
    if env_id not in TRL_ADAPTERS:
        raise ConfigError(
            f"unknown environment id {env_id!r}; the TRL launcher knows {sorted(TRL_ADAPTERS)}"
        )
    args = env.get("args", {})
    if not isinstance(args, Mapping):
        raise ConfigError("[env.args] must be a table of the environment's arguments")
    try:
        _adapter(env_id).check_arguments(**args)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[env.args] for {env_id!r}: {exc}") from exc
    keys = _reward_keys(env.get("reward_keys"), env_id)
    weights = _reward_weights(env.get("reward_weights"), keys)
    trainer = raw.get("trainer", {})
    if not isinstance(trainer, Mapping):
        raise ConfigError("[trainer] must be a table of GRPOConfig fields")
    for name in _LAUNCHER_FIELDS:
        if name in trainer:
            raise ConfigError(
                f"[trainer] sets {name!r}, which the launcher derives from `advantage` and "
                "[env] reward_weights; remove it"
            )
    if advantage == "gdpo" and "scale_rewards" in trainer:
        raise ConfigError(
            "[trainer] scale_rewards has no effect with advantage = 'gdpo' (it always "
            "normalises each reward per group, then the sum over the batch); remove it"
        )
    return LaunchConfig(
        model=model,
        advantage=advantage,
        env_id=env_id,
        env_args=dict(args),
        reward_keys=keys,
        reward_weights=weights,
        trainer=dict(trainer),
    )


def known_reward_keys(env_id: str) -> tuple[str, ...]:
    """The reward keys an environment's TRL adapter offers (imports the environment's core):
    what it may train on, and what it logs at weight 0 (`LOGGED_KEYS`, where it has them)."""
    adapter = _adapter(env_id)
    return tuple(getattr(adapter, "LOGGED_KEYS", adapter.REWARD_KEYS))


def _adapter(env_id: str) -> Any:
    module = TRL_ADAPTERS[env_id]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"environment {env_id!r} is not installed here ({module}: {exc}); install its package"
        ) from exc


def _reward_keys(value: Any, env_id: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(key, str) for key in value):
        raise ConfigError("[env] reward_keys must be a non-empty list of reward names")
    duplicates = sorted({key for key in value if value.count(key) > 1})
    if duplicates:
        raise ConfigError(f"[env] reward_keys repeats {duplicates}")
    known = known_reward_keys(env_id)
    unknown = [key for key in value if key not in known]
    if unknown:
        raise ConfigError(
            f"[env] reward_keys {unknown} are not rewards of {env_id!r}; it has {list(known)}"
        )
    return tuple(value)


def _reward_weights(value: Any, keys: Sequence[str]) -> tuple[float, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        isinstance(w, int | float) and not isinstance(w, bool) and math.isfinite(w) for w in value
    ):
        raise ConfigError("[env] reward_weights must be a list of finite numbers")
    if len(value) != len(keys):
        raise ConfigError(
            f"[env] reward_weights has {len(value)} entries but reward_keys has {len(keys)} "
            f"({list(keys)}); give one weight per key"
        )
    # Every reward of these environments is "higher is better": a negative weight trains the
    # policy against it, and all-zero weights leave every advantage 0 (no learning signal).
    negative = [key for key, w in zip(keys, value, strict=True) if w < 0]
    if negative:
        raise ConfigError(
            f"[env] reward_weights are negative for {negative}; every reward here is higher-is-"
            "better, so a negative weight trains against it (use 0 to log a reward unweighted)"
        )
    if not any(value):
        raise ConfigError("[env] reward_weights are all 0: no reward would reach the advantages")
    return tuple(float(w) for w in value)


def _no_unknown(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"unknown keys {unknown} at {where}; allowed: {sorted(allowed)}")


# ------------------------------------------------------------------------ building the trainer


@dataclass
class Launch:
    """A built run: the trainer and the environment behind it (close it when done)."""

    trainer: Any
    environment: Any
    reward_weights: tuple[float, ...]


def build(config: LaunchConfig) -> Launch:
    """The environment, its reward functions and a `GRPOTrainer` (needs TRL installed)."""
    from trl import GRPOConfig, GRPOTrainer

    environment = _adapter(config.env_id).load_trl_environment(**config.env_args)
    try:
        weights = config.reward_weights or tuple(
            float(environment.reward_weights[key]) for key in config.reward_keys
        )
        # The environment's needs (fathom-rlm: its turn cap) unless the file sets them.
        trainer_fields = {**environment.trainer_defaults, **config.trainer}
        args = grpo_config(GRPOConfig, trainer_fields, config, weights)
        model = resolve_model(config.model)
        extra: dict[str, Any] = {}
        if environment.environment_factory is not None:
            extra["environment_factory"] = environment.environment_factory
            extra["processing_class"] = tool_tokenizer(model)
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=[environment.reward_funcs[key] for key in config.reward_keys],
            args=args,
            train_dataset=environment.train_dataset,
            **extra,
        )
    except BaseException:
        environment.close()
        raise
    return Launch(trainer, environment, weights)


def resolve_model(model: str) -> str:
    """What `GRPOTrainer` loads: a `local:<name>` model is converted from its registry package's
    GGUF once (`envtools.local_model.converted_dir`) and loaded from that directory."""
    if model.startswith(LOCAL_PREFIX):
        return str(local_model.converted_dir(model[len(LOCAL_PREFIX) :]))
    return model


def tool_tokenizer(model: str) -> Any:
    """The model's tokenizer for an environment with tools. A chat template with roles and text
    only (SmolLM2's ChatML) gets the text convention the local model server uses
    (`envtools.tool_calls`): tool schemas in the system message, calls as ``<tool_call>`` blocks,
    so a model fine-tuned on served conversations sees the same text in TRL's tool loop."""
    from transformers import AutoTokenizer
    from trl.chat_template_utils import supports_tool_calling

    # The sides TRL sets when it loads the tokenizer itself.
    tokenizer = AutoTokenizer.from_pretrained(model, truncation_side="left", padding_side="left")
    if supports_tool_calling(tokenizer):
        return tokenizer
    template = tokenizer.chat_template
    if not isinstance(template, str) or "<|im_start|>" not in template:
        raise ConfigError(
            f"{model}: its chat template renders no tool calls and is not ChatML; give a model "
            "whose template supports tools"
        )
    tokenizer.chat_template = tool_calls.chat_template(template)
    tokenizer.response_template = tool_calls.RESPONSE_TEMPLATE
    return tokenizer


def grpo_config(
    config_class: type,
    trainer_fields: Mapping[str, Any],
    config: LaunchConfig,
    weights: Sequence[float],
) -> Any:
    """`GRPOConfig` from [trainer] plus the aggregation and weights the launcher derives."""
    try:
        return config_class(
            **trainer_fields,
            multi_objective_aggregation=config.multi_objective_aggregation,
            reward_weights=list(weights),
        )
    except TypeError as exc:
        # An unknown field: name it with the table it came from.
        raise ConfigError(f"[trainer]: {exc}") from exc


def train(config: LaunchConfig) -> list[dict[str, Any]]:
    """Build, train, save the model and `log_history.json`; returns the log history."""
    launch = build(config)
    try:
        launch.trainer.train()
        output_dir = Path(launch.trainer.args.output_dir)
        launch.trainer.save_model(str(output_dir))
        history = list(launch.trainer.state.log_history)
        (output_dir / "log_history.json").write_text(json.dumps(history, indent=1))
        return history
    finally:
        launch.environment.close()


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.trl_launch", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("config", type=Path, help="the launcher TOML file")
    parser.add_argument(
        "--check",
        action="store_true",
        help="validate the file (and, with TRL installed, its [trainer] field names); no training",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    options = parser.parse_args(argv)
    parser.require_file("config", options.config, "a launcher TOML file")
    try:
        config = load_config(options.config)
        if options.check:
            checked = _check_trainer_fields(config, options.config)
            print(
                f"{options.config}: ok ({config.env_id}, advantage={config.advantage} -> "
                f"{config.multi_objective_aggregation}, rewards {list(config.reward_keys)})"
                + ("" if checked else "; [trainer] names not checked: TRL is not installed here")
            )
            return 0
    except ConfigError as exc:
        parser.error(f"argument config: {exc}")
    train(config)
    return 0


def _check_trainer_fields(config: LaunchConfig, path: Path) -> bool:
    """Every [trainer] key must be a `GRPOConfig` field; False when TRL is not installed (nothing
    checked). Building the GRPOConfig itself would also check values against this machine (bf16
    without a GPU fails), so `--check` does not."""
    try:
        from trl import GRPOConfig
    except ImportError:
        return False  # the [trainer] fields are checked where TRL is installed
    known = {f.name for f in dataclasses.fields(GRPOConfig)}
    unknown = sorted(set(config.trainer) - known)
    if unknown:
        raise ConfigError(f"{path}: [trainer] has fields GRPOConfig does not know: {unknown}")
    return True


if __name__ == "__main__":
    sys.exit(main())
