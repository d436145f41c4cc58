"""fathom-rlm loads by id on every cell of the verifiers matrix, each API where it exists.

legacy: verifiers 0.2.0 and 0.3.1 (`load_environment`); v1: 0.3.1 and 0.4.0 (`__all__` with one
Taskset). Each probe runs in the cell's interpreter and prints JSON.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

# Both probes of verifiers 0.3.1 come from one process: keep its tests on one worker.
pytestmark = pytest.mark.xdist_group("test_fathom_adapters_load")

_LEGACY = r"""
import json
import verifiers as vf
import fathom_rlm
env = vf.load_environment("fathom-rlm", doc_tokens=16000, num_examples=2)
rows = env.get_eval_dataset()
row = rows[0]
info = json.loads(row["info"]) if isinstance(row["info"], str) else row["info"]
try:
    vf.load_environment("fathom-rlm", no_such_argument=1)
    unknown = None
except Exception as exc:  # verifiers wraps the TypeError in a RuntimeError
    unknown = str(exc)
print(json.dumps({"legacy": {
    "class": type(env).__name__,
    "rows": len(rows),
    "tools": sorted(t.name for t in env.tool_defs),
    "info_keys": sorted(info),
    "prompt_chars": sum(len(m["content"] or "") for m in row["prompt"]),
    "unknown": unknown,
    "all": fathom_rlm.__all__,
}}))
"""

_V1 = r"""
import json
import fathom_rlm
import verifiers.v1 as vf
from verifiers.v1.utils.loaders import load_environment, resolve_env_config, taskset_class
config = resolve_env_config(
    {"taskset": {"id": "fathom-rlm", "doc_tokens": 16000, "num_examples": 2}}
)
env = load_environment(config)
tasks = list(env.taskset)
exported = [getattr(fathom_rlm, n) for n in fathom_rlm.__all__]
try:
    fathom_rlm.load_environment()
    legacy = "loaded"
except ImportError as exc:
    legacy = str(exc)
print(json.dumps({"v1": {
    "env": type(env).__name__,
    "taskset": taskset_class("fathom-rlm").__name__,
    "tasksets_exported": sum(issubclass(c, vf.Taskset) for c in exported),
    "envs_exported": sum(issubclass(c, vf.Env) for c in exported),
    "harness": config.agent_harnesses()["agent"].id,
    "runtime": config.agent.runtime.type,
    "tasks": len(tasks),
    "data_keys": sorted(tasks[0].data.row),
    "data_chars": len(tasks[0].data.model_dump_json()),
    "legacy": legacy,
}}))
"""


# The APIs each version has; one process per version probes them all (importing verifiers.v1
# alone takes seconds), and both tests of 0.3.1 read it.
PROBES = {"0.2.0": (_LEGACY,), "0.3.1": (_LEGACY, _V1), "0.4.0": (_V1,)}


def _probe(matrix: Any, verifiers_version: str, api: str) -> dict[str, Any]:
    return _run_probes(matrix.python(verifiers_version), PROBES[verifiers_version])[api]


@functools.cache
def _run_probes(python: Path, scripts: tuple[str, ...]) -> dict[str, Any]:
    result = subprocess.run(
        [str(python), "-c", "\n".join(scripts)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-4000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {api: out for line in lines for api, out in line.items()}


@pytest.mark.parametrize("verifiers_version", ["0.2.0", "0.3.1"])
def test_legacy_loads_by_id(matrix: Any, kit: Any, verifiers_version: str) -> None:
    out = _probe(matrix, verifiers_version, "legacy")
    assert out["class"] == "FathomLegacyEnv"
    assert out["rows"] == 2
    assert out["tools"] == ["llm", "repl"]
    assert {"question", "answer", "seed", "doc_tokens", "spans"} <= set(out["info_keys"])
    assert out["prompt_chars"] < 1_000, "the dataset prompt is the question, never the document"
    assert out["unknown"] and "no_such_argument" in out["unknown"]
    # 0.2.0's `verifiers.v1` is an older, incompatible API: nothing is exported for it.
    assert out["all"] == ([] if verifiers_version == "0.2.0" else _V1_EXPORTS)


_V1_EXPORTS = ["FathomTaskset", "FathomHarness", "FathomEnv"]


@pytest.mark.parametrize("verifiers_version", ["0.3.1", "0.4.0"])
def test_v1_loads_by_id(matrix: Any, kit: Any, verifiers_version: str) -> None:
    out = _probe(matrix, verifiers_version, "v1")
    assert out["env"] == "FathomEnv"
    assert out["taskset"] == "FathomTaskset"
    assert out["tasksets_exported"] == 1
    assert out["envs_exported"] == 1
    # Defaults that keep a plain `vf-eval fathom-rlm` local: own harness, subprocess runtime.
    assert out["harness"] == "fathom-rlm"
    assert out["runtime"] == "subprocess"
    assert out["tasks"] == 2
    assert {"question", "answer", "seed", "doc_tokens"} <= set(out["data_keys"])
    assert out["data_chars"] < 10_000, "task data carries the row, never the document"
    if verifiers_version == "0.4.0":
        assert "legacy verifiers API" in out["legacy"]
    else:
        assert out["legacy"] == "loaded"


def test_import_does_not_load_verifiers() -> None:
    # Core users (and the sandbox) must not pay the seconds verifiers.v1 takes to import.
    script = "import sys, fathom_rlm; print('verifiers.v1' in sys.modules, fathom_rlm.__all__)"
    result = subprocess.run(
        [__import__("sys").executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "False"


def test_v1_config_fields_are_the_arguments() -> None:
    from fathom_rlm.adapters.arguments import CAP_FIELDS, FathomArguments
    from fathom_rlm.adapters.v1 import FathomTasksetConfig
    from fathom_rlm.agent import RolloutCaps

    arguments = set(FathomArguments.names())
    own = set(FathomTasksetConfig.model_fields) - {"id", "task", "system_prompt"}
    assert own == arguments
    defaults = FathomArguments()
    config = FathomTasksetConfig()
    assert all(getattr(config, name) == getattr(defaults, name) for name in arguments)
    caps = {f.name for f in dataclasses.fields(RolloutCaps)} - {"sandbox"}
    assert caps == set(CAP_FIELDS) <= arguments
    assert "time_budget_s" in caps


def test_v1_config_documents_every_argument_and_rejects_bad_values_when_read() -> None:
    from fathom_rlm.adapters.arguments import FathomArguments
    from fathom_rlm.adapters.v1 import FathomTasksetConfig
    from pydantic import ValidationError

    fields = FathomTasksetConfig.model_fields
    assert all(fields[name].description for name in FathomArguments.names())
    # Enumerated choices are typed, so `--help` lists them and a typo fails when parsed.
    with pytest.raises(ValidationError, match="'train', 'eval' or 'heldout'"):
        FathomTasksetConfig(split="tarin")
    with pytest.raises(ValidationError, match="'exact_id', 'single_hop'"):
        FathomTasksetConfig(family_mix={"exact": 1.0})
    # The core's own checks run when the config is read, not when the first task loads.
    with pytest.raises(ValidationError, match="doc_tokens must be >= 3000, got 5"):
        FathomTasksetConfig(doc_tokens=5)
    with pytest.raises(ValueError, match=r"unknown task families \['exact'\]"):
        FathomArguments.from_kwargs({"family_mix": {"exact": 1.0}})
