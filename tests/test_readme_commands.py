"""Every command in the READMEs and docs runs as written.

Each line of a fenced `bash` block (continuations joined) is a command. A command that needs no
network runs here, from a fresh copy of the repository, with the workspace's venv and the offline
settings of the other subprocess tests; one that takes a model endpoint (`MODEL`, `URL`,
`KEY_VAR` and their `<model>`-style spellings) runs against the scripted policy server on
127.0.0.1. The rest (package registries, hub data, a GPU, a prime-rl checkout, the suite itself)
are listed in NOT_RUN with the reason. A command that is neither run nor listed fails the test,
and so does a table entry that no document holds any more.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DOCS = (
    "README.md",
    "environments/fathom_rlm/README.md",
    "environments/gsm8k_multireward/README.md",
    "docs/evaluation.md",
    "docs/serving.md",
    "docs/training.md",
)
# What a fresh copy leaves out: venvs, caches, outputs of earlier runs.
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", ".venvs", "outputs", "__pycache__", ".pytest_cache", ".ruff_cache"
)
# The model, endpoint and key variable that placeholders stand for.
ENDPOINT_MODEL = "fathom-reference"
KEY_VAR = "POLICY_API_KEY"
SERVER_ARGV = [sys.executable, "-m", "envtools.policy_server", "--port", "0"]
TIMEOUT_S = 1800  # per command; the slowest (the default evaluation) takes about a minute


def _commands(text: str) -> list[str]:
    """The commands of the fenced bash blocks of a Markdown text, continuations joined."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
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
    ports: tuple[int, ...] = ()  # fixed loopback ports the commands bind
    expect: dict[str, int] = field(default_factory=dict)  # glob in the copy -> at least N lines
    says: tuple[str, ...] = ()  # text the output must hold
    also_runs: tuple[str, ...] = ()  # documented commands that run verbatim inside this one


RUNS: dict[str, Run] = {
    # The default evaluation takes about a minute: run once, inside the quickstart.
    "quickstart-evaluate": Run(
        ("python -m pip install uv && uv run python -m envtools.evaluate",),
        expect={"outputs/eval/report.md": 20, "outputs/eval/rollouts.jsonl": 36},
        says=("# fathom-rlm evaluation",),
        also_runs=("uv run python -m envtools.evaluate",),
    ),
    "eval-in-process": Run(
        (
            "uv run eval fathom-rlm -m MODEL --client.base-url URL --client.api-key-var KEY_VAR "
            "--env.taskset.doc-tokens 16000 -n 8 --no-serve --no-push",
        ),
        endpoint=True,
        expect={"outputs/*/traces.jsonl": 8},
    ),
    "eval-env-server-pool": Run(
        (
            "uv run eval fathom-rlm -m MODEL --client.base-url URL --client.api-key-var KEY_VAR "
            "--env.taskset.doc-tokens 16000 -n 8 --serve.pool.type static "
            "--serve.pool.num-workers 4 --no-push",
        ),
        endpoint=True,
        expect={"outputs/*/traces.jsonl": 8},
    ),
    "openenv-soak": Run(
        (
            "uv run python -m envtools.openenv_soak --data "
            "tests/gsm8k_multireward/fixtures/adapters.jsonl --sessions 500",
        ),
        says=('"honest_failed": 0', '"hostile_not_refused": []'),
    ),
    "openenv-server": Run(
        (
            "uv run python -m fathom_rlm.adapters.openenv --port 8000 --llm-base-url URL "
            "--llm-model MODEL",
        ),
        endpoint=True,
        server_ready="http://127.0.0.1:8000/healthz",
        ports=(8000,),
    ),
    "vf-eval-v1": Run(
        (
            "vf-eval fathom-rlm -m <model> --client.base-url <url> --client.api-key-var "
            "<API_KEY_VAR> -n 5 -r 2 --env.taskset.doc-tokens 16000 --no-push",
        ),
        endpoint=True,
        venv="VERIFIERS_0_4_0_PYTHON",
    ),
    "vf-eval-legacy": Run(
        (
            "vf-eval fathom-rlm -m <model> -b <url> -k <API_KEY_VAR> -n 5 -r 2 "
            """-a '{"doc_tokens": 16000}'""",
        ),
        endpoint=True,
        venv="",  # the workspace venv (verifiers 0.3.1)
        says=("reward",),
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
    "measure-installs": Run(
        ("python scripts/measure_installs.py --offline",), says=("| fathom-rlm[verifiers] |",)
    ),
    "sft-export": Run(
        (
            "uv run python -m envtools.sft_export --policy fathom-reference --split train --n 16 "
            "--doc-tokens 16000 --min-reward 0.5 --format prime-rl "
            "--out outputs/sft/fathom-train-16k.prime-rl.jsonl",
        ),
        expect={"outputs/sft/fathom-train-16k.prime-rl.jsonl": 1},
    ),
}

_REGISTRY = "installs from a package registry (network)"
_GPU = "trains on GPUs in a prime-rl checkout (configured, not run)"
_TRL_VENV = (
    "needs the TRL venv (torch) that scripts/test.sh builds; "
    "tests/integration/test_trl_launch.py runs the launcher"
)
NOT_RUN: dict[str, str] = {
    "bash scripts/test.sh": "the test suite itself",
    (
        "pip install 'gsm8k-multireward[verifiers]' 'fathom-rlm[verifiers]'   # vf-eval "
        "and prime-rl"
    ): _REGISTRY,
    (
        "pip install 'gsm8k-multireward[trl]' 'fathom-rlm[trl]'               # TRL (torch "
        "installed first)"
    ): _REGISTRY,
    (
        "pip install fathom-rlm               # the core: documents, sandbox, agent loop, "
        "rewards (RestrictedPython only)"
    ): _REGISTRY,
    (
        "pip install 'fathom-rlm[verifiers]'  # + the verifiers adapters: what vf-eval and "
        "prime-rl need"
    ): _REGISTRY,
    (
        "pip install gsm8k-multireward               # the core: parsing, grading, "
        "rewards, JSONL data (math-verify only)"
    ): _REGISTRY,
    (
        "pip install 'gsm8k-multireward[hub]'        # + datasets, to load openai/gsm8k "
        "from the Hugging Face Hub"
    ): _REGISTRY,
    (
        "pip install 'gsm8k-multireward[verifiers]'  # + verifiers and datasets: what "
        "vf-eval and prime-rl need"
    ): _REGISTRY,
    (
        "pip install 'gsm8k-multireward[trl]'        # + trl (>= 0.27) and datasets, for "
        "TRL's GRPOTrainer"
    ): _REGISTRY,
    (
        "uv run rl @ orchestrator_configs/prime-rl/gsm8k-multireward-grpo.toml   # in a "
        "prime-rl checkout"
    ): _GPU,
    "uv run rl @ orchestrator_configs/prime-rl/gsm8k-multireward-grpo.toml": _GPU,
    "uv run rl @ orchestrator_configs/prime-rl/fathom-rlm-grpo.toml": _GPU,
    (
        "uv run rl @ orchestrator_configs/prime-rl/fathom-rlm-grpo.toml                    "
        "   # stage 1"
    ): _GPU,
    (
        "uv run rl @ orchestrator_configs/prime-rl/fathom-rlm-grpo.toml @ "
        "orchestrator_configs/prime-rl/fathom-rlm-grpo-curriculum/stage-2-32k.toml      # "
        "stage 2, ..."
    ): _GPU,
    "uv run python benchmarks/gsm8k_grading.py --data PATH/TO/gsm8k/test.jsonl": (
        "needs the GSM8K test set from the hub (PATH/TO stands for where it was saved)"
    ),
    (
        "uv run python -m envtools.evaluate --model NAME --base-url http://HOST:PORT/v1 "
        "[--api-key-var VAR]"
    ): (
        "a usage synopsis (`[...]` marks an optional argument); the eval-in-process and "
        "vf-eval commands here run a model behind an endpoint"
    ),
    (
        "uv run python -m envtools.evaluate --split heldout --n 60 --doc-tokens 200000 "
        "--out outputs/eval-heldout-200k"
    ): (
        "the held-out evaluation at 200K tokens takes many minutes on a 2-core machine; "
        "the default evaluation runs here"
    ),
    (
        "uv run python -m envtools.evaluate --split heldout --n 200 --doc-tokens 200000 "
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
        "fathom-openenv fathom_rlm.adapters.openenv --host 0.0.0.0 --port 8000 "
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
    "python -m venv .venvs/trl": (
        "the TRL venv recipe: the next lines install from a package registry"
    ),
    (
        ".venvs/trl/bin/pip install torch==2.13.0           # or the CUDA build your GPU "
        "machine needs"
    ): _REGISTRY,
    ".venvs/trl/bin/pip install --no-deps -r ci/requirements/trl-1.16.0.txt": _REGISTRY,
    (
        ".venvs/trl/bin/pip install --no-deps --no-build-isolation -e . -e "
        "environments/gsm8k_multireward -e environments/fathom_rlm"
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
        "accelerate launch --num_processes 8 -m envtools.trl_launch "
        "orchestrator_configs/trl/gsm8k-multireward-gdpo.toml"
    ): "trains on 8 GPUs; configured, not run",
}


def test_every_documented_command_is_run_or_listed() -> None:
    documented = documented_commands()
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


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _substitute(command: str, url: str) -> str:
    """The placeholders of an endpoint command, filled in for the scripted policy server."""
    values = {"MODEL": ENDPOINT_MODEL, "URL": url, "KEY_VAR": KEY_VAR}
    command = re.sub(r"(?<![\w-])(MODEL|URL|KEY_VAR)(?![\w-])", lambda m: values[m[1]], command)
    for name, value in (("<model>", ENDPOINT_MODEL), ("<url>", url), ("<API_KEY_VAR>", KEY_VAR)):
        command = command.replace(name, value)
    return command


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
    elif spec.venv is not None:
        python = os.environ.get(spec.venv)
        if not python or not Path(python).is_file():
            reason = f"${spec.venv} names no interpreter: scripts/test.sh builds that venv"
            if os.environ.get("CI") == "true":
                pytest.fail(reason)
            pytest.skip(reason)
        entries.insert(0, str(Path(python).parent))
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
    for port in spec.ports:
        if not _port_free(port):
            pytest.skip(f"127.0.0.1:{port}, which the command binds, is in use by another process")
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=COPY_IGNORE, symlinks=True)
    path = _path(spec)
    commands = list(spec.commands)
    if spec.endpoint:
        url = request.getfixturevalue("endpoint_url")
        commands = [_substitute(c, url) for c in commands]
    env = offline_env(
        # `uv run` in the copy uses the workspace's venv as it is: nothing is synced or fetched.
        UV_PROJECT_ENVIRONMENT=sys.prefix,
        UV_NO_SYNC="1",
        UV_OFFLINE="1",
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
            _wait_ready(process, log, spec.server_ready)
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
