"""The two OpenEnv environment packages (`fathom_rlm.openenv`, `gsm8k_multireward.openenv`)
without a server: their flags are derived from the configs they build (one per field, with the
field's help and default, and each value reaching the config), their typed clients read what
openenv-core's server writes and write what it reads, and their manifests ship as package data.
The live servers driven by the typed clients are in tests/fathom_rlm/adapters/test_fathom_openenv*
and tests/gsm8k_multireward/test_openenv.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import socket
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml
from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.adapters.endpoint import Endpoint
from fathom_rlm.openenv import FathomAction, FathomEnvClient, FathomObservation, FathomState
from fathom_rlm.openenv.server import app as fathom_app
from gsm8k_multireward import GSM8KConfig
from gsm8k_multireward.openenv import Gsm8kAction, Gsm8kEnvClient, Gsm8kObservation, Gsm8kState
from gsm8k_multireward.openenv.server import app as gsm8k_app
from openenv.core.env_server.serialization import deserialize_action, serialize_observation

FIXTURE = Path(__file__).parents[1] / "gsm8k_multireward" / "fixtures" / "adapters.jsonl"

pytestmark = pytest.mark.xdist_group("test_environment_packages")


def flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The parser's actions by destination."""
    return {action.dest: action for action in parser._actions}


def documented(config: type, names: tuple[str, ...] | None = None) -> dict[str, str]:
    fields = [f for f in dataclasses.fields(config) if f.init]
    return {f.name: f.metadata["help"] for f in fields if names is None or f.name in names}


CASES = [
    # (parser, config, its argument names, the flags' prefix, the older flag names it keeps)
    (fathom_app.build_parser, FathomArguments, FathomArguments.names(), "", {}),
    (fathom_app.build_parser, Endpoint, None, "llm_", {}),
    (gsm8k_app.build_parser, GSM8KConfig, None, "", gsm8k_app.FLAG_ALIASES),
]


@pytest.mark.parametrize(("build", "config", "names", "prefix", "aliases"), CASES)
def test_every_config_field_is_a_flag_with_its_help_and_default(
    build: Any, config: type, names: Any, prefix: str, aliases: dict[str, tuple[str, ...]]
) -> None:
    actions = flags(build())
    helps = documented(config, names)
    assert len(helps) == len(names or helps) and helps  # the config has documented fields
    defaults = {f.name: f.default for f in dataclasses.fields(config)}
    for name, text in helps.items():
        action = actions[prefix + name]
        assert "--" + (prefix + name).replace("_", "-") in action.option_strings
        assert set(aliases.get(name, ())) <= set(action.option_strings)
        assert action.help is not None and action.help.replace("%%", "%") == text
        if defaults[name] is dataclasses.MISSING:
            assert action.required
        else:
            assert action.default == defaults[name] and not action.required


def test_the_old_flag_names_still_work() -> None:
    fathom = ["--llm-base-url", "http://127.0.0.1:1/v1", "--llm-model", "m"]
    old = ["--split", "train", "--num-examples", "3", "--doc-tokens", "16000"]
    old += ["--max-depth", "1", "--max-turns", "5", "--max-sub-calls", "4"]
    args = fathom_app.build_parser().parse_args([*fathom, *old, "--llm-api-key-var", "K"])
    assert (args.split, args.num_examples, args.doc_tokens) == ("train", 3, 16000)
    assert (args.max_depth, args.max_turns, args.max_sub_calls) == (1, 5, 4)
    assert args.llm_api_key_var == "K"
    old = ["--data", "x.jsonl", "--split", "test", "--num-examples", "2"]
    old += ["--length-threshold-tokens", "300", "--length-reward-weight", "0.5"]
    args = gsm8k_app.build_parser().parse_args(old)
    assert (args.dataset_name, args.dataset_split, args.num_examples) == ("x.jsonl", "test", 2)
    assert (args.length_threshold_tokens, args.length_reward_weight) == (300, 0.5)


def test_fathom_flags_build_its_arguments_and_endpoint() -> None:
    argv = ["--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"]
    argv += ["--llm-timeout-s", "30", "--llm-connect-timeout-s", "None"]
    argv += ["--doc-tokens", "16000", "--max-answer-chars", "40", "--time-budget-s", "None"]
    argv += ["--family-mix", '{"temporal": 2, "exact_id": 1}', "--sub-max-completion-tokens", "64"]
    args = fathom_app.build_parser().parse_args(argv)
    options = fathom_app.server_options(args, _settings(args))
    assert options.endpoint == Endpoint("http://127.0.0.1:9/v1", "m", None, 30.0, None)
    assert options.arguments == FathomArguments(
        doc_tokens=16000,
        max_answer_chars=40,
        time_budget_s=None,
        family_mix={"temporal": 2, "exact_id": 1},
        sub_max_completion_tokens=64,
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--split", "dev"], "split must be one of"),
        (["--family-mix", '{"exact": 1}'], "unknown task families ['exact']"),
        (["--llm-timeout-s", "0"], "llm_timeout_s must be > 0"),
        (["--max-answer-chars", "0"], "max_answer_chars must be >= 1"),
    ],
)
def test_fathom_flag_values_are_checked_by_the_configs(
    argv: list[str], message: str, start_failure: Any
) -> None:
    base = ["--llm-base-url", "http://127.0.0.1:1/v1", "--llm-model", "m"]
    assert message in start_failure(fathom_app.main, [*base, *argv], {})


def test_gsm8k_flags_build_its_config_and_load_the_rows() -> None:
    argv = ["--data", str(FIXTURE), "--split", "test", "--system-prompt", "Answer."]
    argv += ["--length-threshold-tokens", "None", "--chars-per-token", "3.5"]
    argv += ["--math-verify-max-workers", "2", "--math-verify-timeout", "7", "--num-examples", "4"]
    options = gsm8k_app.server_options(gsm8k_app.build_parser().parse_args(argv))
    assert options.config == GSM8KConfig(
        dataset_name=str(FIXTURE),
        dataset_split="test",
        system_prompt="Answer.",
        length_threshold_tokens=None,
        chars_per_token=3.5,
        math_verify_max_workers=2,
        math_verify_timeout=7.0,
        num_examples=4,
    )


def test_a_bad_gsm8k_value_fails_at_start(start_failure: Any) -> None:
    argv = ["--data", str(FIXTURE), "--chars-per-token", "0"]
    assert "chars_per_token must be a finite number > 0" in start_failure(gsm8k_app.main, argv, {})


def test_a_port_in_use_fails_before_the_start_up_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server binds before it says it listens: a taken port is one error line (exit 2),
    never "listening on ..." followed by uvicorn's bind failure (exit 3)."""
    for name in ("OPENENV_TOKEN", "OPENENV_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            gsm8k_app.main(["--data", str(FIXTURE), "--port", str(port)])
    out, err = capsys.readouterr()
    assert exited.value.code == 2
    assert err == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    assert out == ""


def _settings(args: argparse.Namespace) -> Any:
    from fathom_rlm._vendor.openenv_guard import guard_settings

    return guard_settings(args)


# --------------------------------------------------------------------------- typed clients


def test_the_fathom_client_round_trips_through_openenv_cores_serialization() -> None:
    client = FathomEnvClient("http://127.0.0.1:1")
    action = FathomAction(tool="llm", prompt="who?", slice="0:400", call_index=1)
    payload = client._step_payload(action)
    assert payload == {"tool": "llm", "prompt": "who?", "slice": "0:400", "call_index": 1}
    assert deserialize_action(payload, FathomAction) == action
    final = FathomObservation(
        done=True,
        reward=0.75,
        rewards={"correctness": 1.0},
        metrics={"sub_calls": 2.0},
        ended_by="answer",
    )
    result = client._parse_result(serialize_observation(final))
    assert isinstance(result.observation, FathomObservation)
    assert result.observation == final and result.reward == 0.75 and result.done
    state = FathomState(episode_id="e", step_count=3, task_index=2, question="q?", turns=1)
    assert client._parse_state(state.model_dump()) == state


def test_the_gsm8k_client_round_trips_through_openenv_cores_serialization() -> None:
    client = Gsm8kEnvClient("http://127.0.0.1:1", token="t" * 20)
    action = Gsm8kAction(message="\\boxed{29}", completion_tokens=12)
    payload = client._step_payload(action)
    assert payload == {"message": "\\boxed{29}", "completion_tokens": 12}
    assert deserialize_action(payload, Gsm8kAction) == action
    first = Gsm8kObservation(messages=[{"role": "user", "content": "2 + 2?"}])
    result = client._parse_result(serialize_observation(first))
    assert isinstance(result.observation, Gsm8kObservation)
    assert result.observation == first and result.reward is None and not result.done
    state = Gsm8kState(episode_id="e", step_count=1, task_index=0, question="2 + 2?", done=True)
    assert client._parse_state(state.model_dump()) == state


# ----------------------------------------------------------------------------- manifests


@pytest.mark.parametrize(
    ("package", "name"),
    [("fathom_rlm.openenv", "fathom-rlm"), ("gsm8k_multireward.openenv", "gsm8k-multireward")],
)
def test_each_package_ships_its_openenv_manifest(package: str, name: str) -> None:
    manifest = yaml.safe_load(files(package).joinpath("openenv.yaml").read_text())
    assert manifest["spec_version"] == 1 and manifest["name"] == name
    assert manifest["runtime"] == "fastapi" and manifest["port"] == 8000
