"""Each environment installs light: the plain install runs its core without verifiers, and the
`[verifiers]` extra brings the adapters.

Every case builds a fresh venv and installs the environment from its local path with
`uv pip install`, the way `scripts/measure_installs.py` does: from the package registry, with every
dependency held to the workspace lock's version (so a new upstream release cannot change what is
tested; uv reuses what its cache holds, so after `uv sync` little or nothing is downloaded). These
are the only tests that reach beyond loopback, and only to the package registry. Then a probe
program runs in that venv:

* plain `gsm8k-multireward`: neither verifiers nor datasets is importable; the package imports,
  reads the JSONL fixture and scores completions through math-verify; hub loading and
  `load_environment` fail with an error naming the extra to install.
* plain `fathom-rlm`: verifiers is not importable; the package imports, runs one rollout of the
  core agent loop (a scripted chat function, a real sandboxed `repl` call on a 16K-token document)
  and scores it; `load_environment` names the extra.
* `[verifiers]` (and verifiers pinned to 0.3.1, the release with both APIs): the legacy
  `load_environment` builds an environment, and the v1 Taskset is exported.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).parents[1]
FATHOM = REPO / "environments" / "fathom_rlm"
GSM8K = REPO / "environments" / "gsm8k_multireward"
FIXTURE = REPO / "tests" / "gsm8k_multireward" / "fixtures" / "adapters.jsonl"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

GSM8K_PLAIN = r"""
import importlib.util, json, sys
import gsm8k_multireward as g
from gsm8k_multireward import GSM8KConfig, MathGrader, load_examples, score_completion
missing = [m for m in ("verifiers", "datasets") if importlib.util.find_spec(m) is not None]
rows = load_examples(GSM8KConfig(dataset_name=sys.argv[1], num_examples=2))
config = GSM8KConfig(length_threshold_tokens=64)
with MathGrader(max_workers=1) as grader:
    # The first row's gold is 29: a LaTeX fraction needs math-verify to be graded equal.
    gold = rows[0]["answer"]
    right = score_completion(r"It holds \boxed{\frac{58}{2}} books.", gold, grader, config)
    wrong = score_completion(r"\boxed{30}", gold, grader, config)
errors = {}
for name, call in {
    "hub": lambda: load_examples(GSM8KConfig()),
    "legacy": lambda: g.load_environment(dataset_name=sys.argv[1]),
}.items():
    try:
        call()
        errors[name] = None
    except ImportError as exc:
        errors[name] = str(exc)
print(json.dumps({"installed_extras": missing, "gold": rows[0]["answer"], "right": right,
                  "wrong": wrong, "all": g.__all__, "errors": errors}))
"""

FATHOM_PLAIN = r"""
import asyncio, importlib.util, json
import fathom_rlm
from fathom_rlm.agent import ChatReply, RolloutCaps, run_rollout
from fathom_rlm.documents import build_split, get_document
from fathom_rlm.rewards import RewardConfig, score_rollout

row = build_split("eval", 1, doc_tokens=16_000)[0]
document = get_document(row.seed, row.doc_tokens).text
seen = []

async def chat(messages, tools):
    # Turn 1: one real sandboxed repl call that prints the supporting spans; turn 2: the gold
    # answer (this checks the install, not a policy).
    if not any(m["role"] == "tool" for m in messages):
        code = "print(len(doc))\n" + "".join(f"print(doc[{s}:{e}])\n" for s, e in row.spans)
        call = {"id": "c1", "type": "function",
                "function": {"name": "repl", "arguments": json.dumps({"code": code})}}
        return ChatReply({"role": "assistant", "content": None, "tool_calls": [call]}, None)
    seen.append(messages[-1]["content"])
    return ChatReply({"role": "assistant", "content": f"<answer>{row.answer}</answer>"}, None)

caps = RolloutCaps()
record = asyncio.run(run_rollout(document, row.question, chat, caps))
scores = score_rollout(record, row, RewardConfig.from_caps(caps), document=document)
try:
    fathom_rlm.load_environment(doc_tokens=16_000)
    legacy = None
except ImportError as exc:
    legacy = str(exc)
print(json.dumps({"verifiers": importlib.util.find_spec("verifiers") is not None,
                  "doc_chars": len(document), "repl_output": seen, "scores": scores,
                  "all": fathom_rlm.__all__, "legacy": legacy}))
"""

WITH_VERIFIERS = r"""
import json, sys
from importlib.metadata import version
import fathom_rlm, gsm8k_multireward
# Importing the packages must not import verifiers (it takes seconds), even when it is installed.
eager = sorted(m for m in sys.modules if m.split(".")[0] in ("verifiers", "datasets"))
fathom_env = fathom_rlm.load_environment(doc_tokens=16_000, num_examples=1)
gsm8k_env = gsm8k_multireward.load_environment(dataset_name=sys.argv[1], num_examples=1)
print(json.dumps({"verifiers": version("verifiers"), "eager": eager,
                  "legacy": [type(fathom_env).__name__, type(gsm8k_env).__name__],
                  "fathom_v1": fathom_rlm.FathomTaskset.__name__,
                  "gsm8k_v1": gsm8k_multireward.GSM8KMultirewardTaskset.__name__}))
"""


def _measure_installs() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "measure_installs", REPO / "scripts" / "measure_installs.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


INSTALLS = _measure_installs()


@pytest.fixture(scope="module")
def constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return INSTALLS.lock_constraints(tmp_path_factory.mktemp("lock") / "constraints.txt")


def install(venv: Path, constraints: Path, *requirements: str) -> Path:
    """A fresh venv with `requirements` installed at the lock's versions; returns its python."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_OFFLINE")}
    try:
        return INSTALLS.install(venv, list(requirements), constraints, env)
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"uv could not install {requirements}:\n{exc.stderr[-4000:]}")


def probe(python: Path, program: str, *args: str) -> dict:
    result = subprocess.run(
        [str(python), "-c", program, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_gsm8k_plain_install_scores_without_verifiers(tmp_path: Path, constraints: Path) -> None:
    python = install(tmp_path / "venv", constraints, str(GSM8K))
    out = probe(python, GSM8K_PLAIN, str(FIXTURE))
    assert out["installed_extras"] == []
    assert out["gold"] == "29"
    assert out["right"]["correct_answer"] == 1.0 and out["right"]["length_reward"] == 1.0
    assert out["wrong"]["correct_answer"] == 0.0 and out["wrong"]["reward"] == 0.0
    assert "GSM8KMultirewardTaskset" not in out["all"]
    assert "gsm8k-multireward[hub]" in out["errors"]["hub"]
    assert "gsm8k-multireward[verifiers]" in out["errors"]["legacy"]


def test_fathom_plain_install_runs_a_rollout_without_verifiers(
    tmp_path: Path, constraints: Path
) -> None:
    python = install(tmp_path / "venv", constraints, str(FATHOM))
    out = probe(python, FATHOM_PLAIN)
    assert out["verifiers"] is False
    assert out["repl_output"] and str(out["doc_chars"]) in out["repl_output"][0]
    assert out["scores"]["format_gate"] == 1.0 and out["scores"]["correctness"] == 1.0
    assert out["all"] == []
    assert "fathom-rlm[verifiers]" in out["legacy"]


def test_verifiers_extra_brings_the_adapters(tmp_path: Path, constraints: Path) -> None:
    python = install(
        tmp_path / "venv",
        constraints,
        f"{FATHOM}[verifiers]",
        f"{GSM8K}[verifiers]",
        "verifiers==0.3.1",
    )
    out = probe(python, WITH_VERIFIERS, str(FIXTURE))
    assert out["verifiers"] == "0.3.1"
    assert out["eager"] == []
    assert out["legacy"][0] and out["legacy"][1]
    assert (out["fathom_v1"], out["gsm8k_v1"]) == ("FathomTaskset", "GSM8KMultirewardTaskset")
