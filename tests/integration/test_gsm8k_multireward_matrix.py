"""gsm8k-multireward end to end on every cell of the verifiers matrix.

Each test runs the version's own `vf-eval` as a subprocess of the matching venv against the
scripted policy server on loopback, then checks the saved results: both reward names are there,
each value equals what the core computes for the same completion, and the total is
correct + weight x length. The workspace's own version (0.3.1) runs the README walkthrough's
commands in tests/test_readme_commands.py, with the same checks (tests/support/gsm8k_runs.py);
the prime-rl config's env block is resolved on both versions in tests/configs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gsm8k_lab.policies import Gsm8kPolicy
from gsm8k_multireward import MathGrader
from gsm8k_runs import EXPECTED, FIXTURE, QUESTIONS, check_scores, legacy_rows, v1_rows

from envtools.policies.base import ChatResult
from envtools.policy_server import policy_server_in_thread

REPO = Path(__file__).resolve().parents[2]
# The ladder answers the fixture's questions in turn as these policies would.
LADDER = ["gold", "verbose", "wrong", "noanswer", "gold", "verbose"]
WEIGHT = 0.5


class LadderPolicy:
    """Every rung of the gsm8k ladder in one model, chosen by the question's fixture row."""

    name = "gsm8k-ladder"

    def __init__(self) -> None:
        self.rungs = {style: Gsm8kPolicy(style, data_path=FIXTURE) for style in EXPECTED}

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ChatResult:
        return await self.rungs[style_of(messages[-1]["content"])].respond(messages, tools)


def style_of(question: str) -> str:
    return LADDER[QUESTIONS.index(question.strip())]


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    policies = {
        "gsm8k-ladder": LadderPolicy,
    }
    with policy_server_in_thread(policies=policies) as url:
        yield url


@pytest.fixture(scope="module")
def grader() -> Iterator[MathGrader]:
    with MathGrader(max_workers=2, timeout=5.0) as shared:
        yield shared


@pytest.mark.slow
@pytest.mark.timeout(900)  # a vf-eval run takes minutes on a loaded 2-core machine
# 0.3.1, the workspace's version, runs the README walkthrough's own commands in
# tests/test_readme_commands.py, whose saved results go through the same checks (gsm8k_runs).
@pytest.mark.parametrize("verifiers_version", ["0.2.0"])
def test_legacy_vf_eval(
    verifiers_version: str, matrix: Any, base_url: str, grader: MathGrader, tmp_path: Path
) -> None:
    """The README's legacy command (plus `-s` to save), with the ladder as the model."""
    python = matrix.python(verifiers_version)
    args = {"length_threshold_tokens": 1024, "dataset_name": str(FIXTURE)}
    matrix.run(
        [
            matrix.script(python, "vf-eval"),
            "gsm8k-multireward",
            *("-m", "gsm8k-ladder", "-b", base_url, "-k", "POLICY_API_KEY"),
            *("-n", "20", "-r", "3", "-t", "1024", "-T", "0.7", "-a", json.dumps(args), "-s"),
        ],
        cwd=tmp_path,
    )
    # -n 20 takes the whole six-row fixture.
    rows = legacy_rows(tmp_path)
    check_scores(rows, grader, 1.0, expected_rollouts=3 * len(QUESTIONS), style_of=style_of)


# The v1 CLI is `eval` in 0.3.1 and `vf-eval` in 0.4.0; `-o` sets the output directory.
V1_SCRIPTS = {"0.3.1": "eval", "0.4.0": "vf-eval"}


def run_v1_command(
    matrix: Any, tmp_path: Path, script: str, verifiers_version: str, *arguments: Any
) -> None:
    """Run a v1 command of this verifiers version on gsm8k-multireward, offline."""
    python = matrix.python(verifiers_version)
    matrix.run([matrix.script(python, script), "gsm8k-multireward", *arguments], cwd=tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(900)  # a vf-eval run takes minutes on a loaded 2-core machine
@pytest.mark.parametrize("verifiers_version", ["0.4.0"])  # 0.3.1: the README walkthrough
def test_v1_eval_runs_locally(
    verifiers_version: str, matrix: Any, base_url: str, grader: MathGrader, tmp_path: Path
) -> None:
    run_v1_command(
        matrix,
        tmp_path,
        V1_SCRIPTS[verifiers_version],
        verifiers_version,
        *("-m", "gsm8k-ladder", "--client.base-url", base_url),
        *("--client.api-key-var", "POLICY_API_KEY", "-n", "6", "-r", "1"),
        *("--env.taskset.dataset-name", FIXTURE),
        *("--env.taskset.length-reward-weight", str(WEIGHT)),
        *("--no-push", "-o", tmp_path / "out"),
    )
    rows = v1_rows(tmp_path / "out", WEIGHT)
    check_scores(rows, grader, WEIGHT, expected_rollouts=6, style_of=style_of)


# verifiers' model-free check: `validate` in 0.3.1, `vf-validate` in 0.4.0.
VALIDATE_SCRIPTS = {"0.3.1": "validate", "0.4.0": "vf-validate"}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("verifiers_version", ["0.4.0"])  # 0.3.1: the README's validate
def test_verifiers_validate_command_passes_every_gold_answer(
    verifiers_version: str, matrix: Any, tmp_path: Path
) -> None:
    run_v1_command(
        matrix,
        tmp_path,
        VALIDATE_SCRIPTS[verifiers_version],
        verifiers_version,
        *("-n", str(len(QUESTIONS)), "--rich", "false"),
        # verifiers' validate defaults to Prime's remote runtime; these tasks need none.
        *("--runtime.type", "subprocess"),
        *("--taskset.dataset-name", FIXTURE),
        *("--run.name", "check", "-o", tmp_path / "out"),
    )
    summary = json.loads((tmp_path / "out" / "check" / "summary.json").read_text())
    assert summary["total"] == len(QUESTIONS)
    assert summary["outcomes"]["valid"] == len(QUESTIONS), summary
    # 0.4.0 also scores each untouched task (no reply): it must not already pass.
    if verifiers_version == "0.4.0":
        assert summary["checks"]["noop"]["valid"] == len(QUESTIONS), summary


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_v1_env_server_pool_matches_in_process(
    matrix: Any, base_url: str, grader: MathGrader, tmp_path: Path
) -> None:
    """verifiers 0.4.0's own env server (`serve_env`, a static pool of 2 workers, each with its
    own math-verify pool) driven by an `EnvClient` on its loopback address."""
    python = matrix.python("0.4.0")
    runs = tmp_path / "runs.json"
    matrix.run(
        [
            python,
            REPO / "benchmarks" / "serving_pool.py",
            *("--env", "gsm8k-multireward", "--base-url", base_url, "--model", "gsm8k-ladder"),
            *("--workers", "2", "--num-examples", "6", "--rollouts", "1", "--data", FIXTURE),
            *("--length-reward-weight", str(WEIGHT), "--json-out", runs),
        ],
        cwd=tmp_path,
    )
    (served,) = json.loads(runs.read_text())
    assert served["workers"] == 2 and served["exitcode"] == 0
    rows = [
        {
            "question": result["data"]["prompt"],
            "completion": result["last_reply"].strip(),
            "gold": result["data"]["answer"],
            "tokens": result["completion_tokens"],
            "correct_answer": result["scores"]["correct_answer"],
            "length_reward": result["scores"]["length_reward"],
            "reward": result["reward"],
        }
        for result in served["results"]
    ]
    check_scores(rows, grader, WEIGHT, expected_rollouts=6, style_of=style_of)


PACKAGE_SURFACE = """
import json
import gsm8k_multireward as g
try:
    g.load_environment(dataset_name=__import__("sys").argv[1], num_examples=1)
    legacy = "ok"
except ImportError as error:
    legacy = str(error)
print(json.dumps({"all": g.__all__, "legacy": legacy}))
"""


@pytest.mark.parametrize(
    ("verifiers_version", "has_legacy", "has_v1"),
    [("0.2.0", True, False), ("0.4.0", False, True)],
)
def test_each_version_sees_only_the_api_it_has(
    verifiers_version: str, has_legacy: bool, has_v1: bool, matrix: Any, tmp_path: Path
) -> None:
    python = matrix.python(verifiers_version)
    result = matrix.run([python, "-c", PACKAGE_SURFACE, FIXTURE], tmp_path)
    surface = json.loads(result.stdout.strip().splitlines()[-1])
    assert ("GSM8KMultirewardTaskset" in surface["all"]) is has_v1
    assert ("LocalEnv" in surface["all"]) is has_v1
    if has_legacy:
        assert surface["legacy"] == "ok"
    else:
        assert "legacy verifiers API" in surface["legacy"]
