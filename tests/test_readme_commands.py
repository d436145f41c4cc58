"""The READMEs' commands run as written; every other documented command of this repository parses.

The READMEs (README.md, environments/*/README.md) are what a user types first: each line of
their fenced `bash` blocks (continuations joined), and each line of an unlabelled fence that
starts like a command (COMMAND), either runs here (RUNS: from a fresh copy of the repository,
offline, against the scripted policy server where it takes a model endpoint) or is listed in
NOT_RUN with the reason. A README command neither run nor listed fails, and so does an entry no
README holds any more. Every command of this repository's own programs written anywhere else in
the docs (reference pages, design docs, results pages; fences and inline spans) has its
arguments checked by that program's own parser, which is quick. Only the runs are slow.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import fathom_runs
import gsm8k_runs
import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
READMES = (
    "README.md",
    "environments/fathom_rlm/README.md",
    "environments/gsm8k_multireward/README.md",
)
DOCS = tuple(
    str(path.relative_to(ROOT))
    for pattern in (
        "README.md",
        "docs/**/*.md",
        "environments/*/README.md",
        "environments/*/docs/*.md",
        "packages/*/README.md",
        "tests/README.md",
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


def _commands(text: str, inline: bool = True) -> list[str]:
    """The commands of a Markdown text: every line of a fenced `bash` block; the lines of an
    unlabelled fence, and (with `inline`) the inline code spans, that start like a command.

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
    prose = FENCE.sub("", text) if inline else ""
    for span in re.findall(r"(?<!`)`([^`]+)`(?!`)", prose):
        span = " ".join(span.split())
        if COMMAND.match(span):
            commands.append(span)
    return commands


def documented_commands(docs: tuple[str, ...], inline: bool) -> dict[str, list[str]]:
    """Each command of `docs` and the documents that hold it."""
    found: dict[str, list[str]] = {}
    for doc in docs:
        for command in _commands((ROOT / doc).read_text(encoding="utf-8"), inline):
            found.setdefault(command, []).append(doc)
    return found


@dataclass(frozen=True)
class Run:
    """How to run one documented command (or a walkthrough of several, in one shell)."""

    commands: tuple[str, ...]
    endpoint: bool = False  # substitute the placeholders with the scripted policy server
    server_ready: str | None = None  # a server: poll this URL (or "printed") and stop it
    ports: tuple[int, ...] = ()  # loopback ports the docs write: a free one is put in each's place
    expect: dict[str, int] = field(default_factory=dict)  # glob in the copy -> at least N lines
    says: tuple[str, ...] = ()  # text the output must hold
    also_runs: tuple[str, ...] = ()  # documented commands that run verbatim inside this one
    # Checks of what the run wrote, given the copy it ran in: the scores a command reports are
    # the core's, so the verifiers version it runs on needs no second run in the matrix tests.
    check: Callable[[Path], None] | None = None


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


RUNS: dict[str, Run] = {
    # The default evaluation takes about a minute: run once, inside the quickstart.
    "quickstart-evaluate": Run(
        ("python -m pip install uv && uv run python -m fathom_lab.evaluate",),
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
    "evaluate-user-rows": Run(
        (
            "uv run python -m fathom_lab.evaluate --data "
            "tests/fathom_rlm/userdata/fixtures/harbour.jsonl",
        ),
        expect={"outputs/eval-harbour/rollouts.jsonl": 60},  # 6 rows x 10 policies
        says=("6 user rows from",),
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
    "trl-launch-check": Run(
        (
            "uv run python -m envtools.trl_launch "
            "orchestrator_configs/trl/gsm8k-multireward-gdpo.toml --check",
        ),
        says=(": ok (gsm8k-multireward",),
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
}

_SAME = "the same run as one that runs here: "
NOT_RUN: dict[str, str] = {
    "uv run pytest": "runs tests of this suite (the suite runs them itself)",
    "bash scripts/test.sh": "the test suite itself",
    (
        "uv run rl @ orchestrator_configs/prime-rl/gsm8k-multireward-grpo.toml   # in a "
        "prime-rl checkout"
    ): "trains on GPUs in a prime-rl checkout (configured, not run)",
    (
        "uv run eval fathom-rlm -m MODEL --client.base-url URL --client.api-key-var KEY_VAR "
        "--env.taskset.doc-tokens 16000 -n 8 --serve.pool.type static "
        "--serve.pool.num-workers 2 --no-push"
    ): _SAME
    + "test_fathom_env_server.py::test_server_backed_eval_pool_matches_in_process (this eval "
    "with these pool flags, read from the README, and every score compared with the core)",
}


# An environment installed from a checkout's path or a git URL: not run here (it installs from the
# package registry) nor listed one by one (the docs show every extra); tests/test_installs.py
# installs each environment those ways (path build, wheel, sdist, git URL) into empty venvs.
ENVIRONMENT_INSTALL = re.compile(
    r"^pip install (?:'?\./environments/\w+|'[\w-]+\[\w+\] @ git\+REPO_URL#subdirectory=)"
)


def test_every_readme_command_is_run_or_listed() -> None:
    documented = {
        command: docs
        for command, docs in documented_commands(READMES, inline=False).items()
        if not ENVIRONMENT_INSTALL.match(command)
    }
    assert len(documented) > 10, "no commands found: has the fence style changed?"
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


def _path() -> str:
    """PATH as a fresh shell has it: without the workspace venv, `python` is the machine's (with
    pip), as in a fresh shell; `uv` first."""
    venv_bin = str(Path(sys.executable).parent)
    entries = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("`uv` must be on PATH: the documented commands call it")
    entries.insert(0, str(Path(uv).parent))
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


@pytest.mark.slow
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
    path = _path()
    *commands, server_ready = _move_ports([*spec.commands, spec.server_ready or ""], spec.ports)
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
PROJECT_MODULE = re.compile(
    r"(envtools|fathom_rlm|gsm8k_multireward|fathom_lab|gsm8k_lab)(\.\w+)+$"
)
PROJECT_SCRIPT = re.compile(r"(labs/\w+/)?(benchmarks|scripts|training)/\w+\.py$")


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
RUN_HERE = {command for spec in RUNS.values() for command in spec.commands + spec.also_runs}
PARSED = sorted(
    command
    for command in documented_commands(DOCS, inline=True)
    if command not in RUN_HERE
    and (call := _project_call(command)) is not None
    and call[0] not in PARSED_ELSEWHERE
)


def test_documented_project_commands_are_parse_checked() -> None:
    """The docs' commands of this repository's programs are found (the fences still parse)."""
    assert len(PARSED) > 30, "no project commands found in the docs"


@pytest.mark.parametrize("command", PARSED)
def test_arguments_of_a_documented_command_parse(
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
