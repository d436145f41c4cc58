"""The prime-rl source entry for fathom-rlm: its env block resolves with verifiers' own loader.

prime-rl itself (GPU-only, not on PyPI) is not installed here; its `[...source.env]` block is the
verifiers `EnvConfig` that prime-rl narrows with the same loader, so that part is checked for real
on the main venv (0.3.1) and on the 0.4.0 venv.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

CONFIG = Path(__file__).parents[3] / "orchestrator_configs" / "prime-rl" / "fathom-rlm-grpo.toml"

# Prints what the resolved env block names; run in the interpreter of each verifiers version.
_RESOLVE = r"""
import json, sys
from verifiers.v1.utils.loaders import environment_class, harness_class, resolve_env_config
from fathom_rlm.adapters.arguments import FathomArguments
env = resolve_env_config(json.loads(sys.argv[1]))
taskset = env.taskset
print(json.dumps({
    "env_class": environment_class(taskset.id, env.id).__name__,
    "taskset_config": type(taskset).__name__,
    "arguments": taskset.arguments().as_dict(),
    "harness": harness_class(env.agent.harness.id).__name__,
    "runtime": env.agent.runtime.type,
}))
"""


def _source() -> dict[str, Any]:
    data = tomllib.loads(CONFIG.read_text())
    (source,) = data["orchestrator"]["train"]["source"]
    return source


def test_config_shape() -> None:
    data = tomllib.loads(CONFIG.read_text())
    orchestrator = data["orchestrator"]
    assert orchestrator["group_size"] > 1
    assert orchestrator["batch_size"] % orchestrator["group_size"] == 0
    assert orchestrator["train"]["sampling"]["max_completion_tokens"] > 0
    assert "env" not in orchestrator, "the pre-v0.6 [[orchestrator.env]] shape is gone"
    source = _source()
    assert set(source) <= {"name", "ratio", "env", "serve", "sampling", "group_size", "algo"}
    assert source["env"]["taskset"]["id"] == "fathom-rlm"
    assert "args" not in source["env"]["taskset"], "taskset fields are typed, not an args dict"


@pytest.mark.parametrize("verifiers_version", ["0.3.1", "0.4.0"])
def test_env_block_resolves(matrix: Any, kit: Any, verifiers_version: str) -> None:
    python = matrix.python(verifiers_version)
    env = _source()["env"]
    result = subprocess.run(
        [str(python), "-c", _RESOLVE, json.dumps(env)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    resolved = json.loads(result.stdout.strip().splitlines()[-1])
    assert resolved["env_class"] == "FathomEnv"
    assert resolved["taskset_config"] == "FathomTasksetConfig"
    assert resolved["harness"] == "FathomHarness"
    assert resolved["runtime"] == "subprocess"
    for name, value in env["taskset"].items():
        if name != "id":
            assert resolved["arguments"][name] == value, name


@pytest.mark.parametrize("verifiers_version", ["0.3.1", "0.4.0"])
def test_unknown_taskset_field_is_rejected(matrix: Any, kit: Any, verifiers_version: str) -> None:
    python = matrix.python(verifiers_version)
    env = _source()["env"]
    env["taskset"] = {**env["taskset"], "length_threshold_tokens": 1024}
    result = subprocess.run(
        [str(python), "-c", _RESOLVE, json.dumps(env)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "length_threshold_tokens" in result.stderr
