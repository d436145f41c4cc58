"""Bad input to a command is one line on stderr naming the argument, exit 2, no traceback.

Every command runs as the user runs it: a subprocess of the workspace's interpreter, from the
repository root. The commands are independent, so they run a few at a time (one shared fixture)
and each case reads its own result. The verifiers CLIs (`vf-eval`, v1 `eval`) are not ours: they
print the traceback of the environment's loader; its last line must say what is wrong (what the
user sees is in environments/gsm8k_multireward/README.md).
"""

from __future__ import annotations

import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("test_cli_errors")

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
MISSING = "no/such/file.jsonl"
BUSY_PORT = "{busy port}"  # a port this test holds while the commands run
PARALLEL = 3  # subprocesses at once: mostly start-up and imports


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    names: str  # the argument the error line must name
    env: tuple[tuple[str, str], ...] = ()


def _module(name: str, *args: str, names: str, env: dict[str, str] | None = None) -> Case:
    return Case((PYTHON, "-m", name, *args), names, tuple((env or {}).items()))


def _file(path: str, *args: str, names: str) -> Case:
    return Case((PYTHON, path, *args), names)


EVALUATE = "fathom_lab.evaluate"
SERVER = "envtools.policy_server"
SFT = "fathom_lab.sft_export"
SFT_OUT = ("--out", "outputs/never-written.jsonl")
USER_ROWS = "tests/fathom_rlm/userdata/fixtures"
CASES: dict[str, Case] = {
    "evaluate --n 0": _module(EVALUATE, "--n", "0", names="--n"),
    "evaluate --n over the split": _module(EVALUATE, "--n", "201", names="--n"),
    "evaluate --doc-tokens 10": _module(EVALUATE, "--doc-tokens", "10", names="--doc-tokens"),
    "evaluate unknown policy": _module(EVALUATE, "--policies", "nope", names="--policies"),
    "evaluate bad split": _module(EVALUATE, "--split", "dev", names="--split"),
    "evaluate --concurrency 0": _module(EVALUATE, "--concurrency", "0", names="--concurrency"),
    "evaluate --timeout 0": _module(EVALUATE, "--timeout", "0", names="--timeout"),
    "evaluate --resamples 5": _module(EVALUATE, "--resamples", "5", names="--resamples"),
    "evaluate --seed x": _module(EVALUATE, "--seed", "x", names="--seed"),
    "evaluate --max-failed-share 1.5": _module(
        EVALUATE, "--max-failed-share", "1.5", names="--max-failed-share"
    ),
    "evaluate --model alone": _module(EVALUATE, "--model", "m", names="--base-url"),
    "evaluate --base-url not a URL": _module(
        EVALUATE, "--model", "m", "--base-url", "localhost:8000", names="--base-url"
    ),
    "evaluate --temperature -1": _module(EVALUATE, "--temperature", "-1", names="--temperature"),
    "evaluate --max-tokens 0": _module(EVALUATE, "--max-tokens", "0", names="--max-tokens"),
    "evaluate --out a file": _module(EVALUATE, "--out", "README.md", names="--out"),
    "evaluate --data missing": _module(EVALUATE, "--data", MISSING, names="--data"),
    "evaluate --data bad row": _module(
        EVALUATE, "--data", f"{USER_ROWS}/bad_rows.jsonl", names="line 2: answer_kind"
    ),
    "evaluate --data bad format": _module(
        EVALUATE, "--data", f"{USER_ROWS}/harbour.jsonl", "--data-format", "needle", names="line 1"
    ),
    "evaluate --data with --split": _module(
        EVALUATE, "--data", f"{USER_ROWS}/harbour.jsonl", "--split", "eval", names="--split"
    ),
    "evaluate --data-format without --data": _module(
        EVALUATE, "--data-format", "oolong", names="--data-format"
    ),
    "evaluate --format (the old spelling) without --data": _module(
        EVALUATE, "--format", "oolong", names="--data-format"
    ),
    "evaluate --data with a generator-only policy": _module(
        EVALUATE,
        "--data",
        f"{USER_ROWS}/harbour.jsonl",
        "--policies",
        "fathom-frequent-entity",
        names="--policies",
    ),
    "policy_server --port": _module(SERVER, "--port", "70000", names="--port"),
    "policy_server port in use": _module(SERVER, "--port", BUSY_PORT, names="--port"),
    "policy_server --fathom-doc-tokens": _module(
        SERVER, "--fathom-doc-tokens", "10", names="--fathom-doc-tokens"
    ),
    "policy_server --faults": _module(SERVER, "--faults", "drop=2", names="--faults"),
    "policy_server missing gsm8k data": _module(
        SERVER, names="$GSM8K_POLICY_DATA", env={"GSM8K_POLICY_DATA": MISSING}
    ),
    "policy_server --data missing": _module(SERVER, "--data", MISSING, names="--data"),
    "policy_server --data bad row": _module(
        SERVER, "--data", f"{USER_ROWS}/bad_rows.jsonl", names="line 2: answer_kind"
    ),
    "policy_server --data-format without --data": _module(
        SERVER, "--data-format", "oolong", names="--data-format"
    ),
    "policy_server --format (the old spelling) without --data": _module(
        SERVER, "--format", "oolong", names="--data-format"
    ),
    "sft_export --data bad row": _module(
        SFT, "--data", f"{USER_ROWS}/bad_rows.jsonl", *SFT_OUT, names="line 2: answer_kind"
    ),
    "sft_export --data with --doc-tokens": _module(
        SFT,
        "--data",
        f"{USER_ROWS}/harbour.jsonl",
        "--doc-tokens",
        "16000",
        *SFT_OUT,
        names="--doc-tokens",
    ),
    "sft_export --data-format without --data": _module(
        SFT, "--data-format", "oolong", *SFT_OUT, names="--data-format"
    ),
    "openenv server --source bad row": _module(
        "fathom_rlm.openenv.server.app",
        *("--llm-base-url", "http://127.0.0.1:1/v1", "--llm-model", "m"),
        *("--source", f"{USER_ROWS}/bad_rows.jsonl"),
        names="source: ",
    ),
    "openenv server --source with --doc-tokens": _module(
        "fathom_rlm.openenv.server.app",
        *("--llm-base-url", "http://127.0.0.1:1/v1", "--llm-model", "m"),
        *("--source", f"{USER_ROWS}/harbour.jsonl", "--doc-tokens", "16000"),
        names="doc_tokens does not apply with a source",
    ),
    "sft_export --n 0": _module(SFT, "--n", "0", *SFT_OUT, names="--n"),
    "sft_export unknown policy": _module(SFT, "--policy", "nope", *SFT_OUT, names="--policy"),
    "sft_export --roles": _module(SFT, "--roles", "judge", *SFT_OUT, names="--roles"),
    "sft_export --min-reward": _module(SFT, "--min-reward", "2", *SFT_OUT, names="--min-reward"),
    "sft_export without --out": _module(SFT, names="--out"),
    "trl_launch missing file": _module("envtools.trl_launch", MISSING, names="config"),
    "trl_launch bad TOML": _module("envtools.trl_launch", "README.md", names="config"),
    "calibrate --n 0": _module("fathom_lab.ladder.calibrate", "--n", "0", names="--n"),
    "keyword_solver --doc-tokens": _module(
        "fathom_lab.audit.keyword_solver", "--doc-tokens", "1", names="--doc-tokens"
    ),
    "verdict_audit --one-pick-rules": _module(
        "fathom_lab.audit.verdict_audit",
        "--one-pick-rules",
        "rarest guess",
        names="--one-pick-rules",
    ),
    "gsm8k_grading missing data": _file(
        "labs/gsm8k_multireward/benchmarks/gsm8k_grading.py", "--data", MISSING, names="--data"
    ),
    "gsm8k_grading --repeats 0": _file(
        "labs/gsm8k_multireward/benchmarks/gsm8k_grading.py", "--repeats", "0", names="--repeats"
    ),
    "fathom_documents --tokens": _file(
        "labs/fathom_rlm/benchmarks/fathom_documents.py", "--tokens", "10", names="--tokens"
    ),
    "fathom_rollout --tasks 0": _file(
        "labs/fathom_rlm/benchmarks/fathom_rollout.py", "--tasks", "0", names="--tasks"
    ),
    "fathom_sandbox --calls 0": _file(
        "labs/fathom_rlm/benchmarks/fathom_sandbox.py", "--calls", "0", names="--calls"
    ),
    "fathom_soak --faults": _file(
        "labs/fathom_rlm/benchmarks/fathom_soak.py", "--faults", "x=1", names="--faults"
    ),
    "fathom_harness_launch --python": _file(
        "labs/fathom_rlm/benchmarks/fathom_harness_launch.py", "--python", MISSING, names="--python"
    ),
    "serving_pool gsm8k without --data": _file(
        "benchmarks/serving_pool.py",
        "--env",
        "gsm8k-multireward",
        "--base-url",
        "http://127.0.0.1:1/v1",
        names="--data",
    ),
    "validate_prime_rl wrong --prime-rl": _file(
        "scripts/validate_prime_rl.py", "--prime-rl", "no/such/clone", names="--prime-rl"
    ),
    "measure_installs unknown argument": _file(
        "scripts/measure_installs.py", "--online", names="--online"
    ),
    "pool_eval --workers 0": _module(
        "envtools.pool_eval",
        "--env",
        "fathom-rlm",
        "--base-url",
        "http://127.0.0.1:1/v1",
        "--workers",
        "0",
        names="--workers",
    ),
    "pool_eval gsm8k data missing": _module(
        "envtools.pool_eval",
        "--env",
        "gsm8k-multireward",
        "--base-url",
        "http://127.0.0.1:1/v1",
        "--data",
        MISSING,
        names="--data",
    ),
    "openenv_soak data missing": _module(
        "envtools.openenv_soak", "--data", MISSING, names="--data"
    ),
}

# A gsm8k dataset that is not there. Through legacy `vf-eval` (its traceback ends with the
# loader's line), and the hub id with the hub out of reach (the tests run offline) through the
# loader itself: v1 `eval` takes some 15 s to start, and prints the same line last.
LOADER_CASES: dict[str, tuple[str, ...]] = {
    "vf-eval, missing JSONL": (
        str(Path(PYTHON).parent / "vf-eval"),
        "gsm8k-multireward",
        "-m",
        "m",
        "-b",
        "http://127.0.0.1:1/v1",
        "-n",
        "1",
        "-a",
        f'{{"dataset_name": "{MISSING}"}}',
    ),
    "hub unreachable": (
        PYTHON,
        "-c",
        "from gsm8k_multireward import GSM8KConfig, load_examples\n"
        "load_examples(GSM8KConfig(dataset_name='openai/gsm8k', dataset_split='test'))",
    ),
}


# A source file with a bad row through legacy `vf-eval fathom-rlm`: the loader's line is last.
FATHOM_LOADER_CASES: dict[str, tuple[str, ...]] = {
    "vf-eval fathom-rlm, bad source row": (
        str(Path(PYTHON).parent / "vf-eval"),
        "fathom-rlm",
        *("-m", "m", "-b", "http://127.0.0.1:1/v1", "-n", "1"),
        *("-a", f'{{"source": "{USER_ROWS}/bad_rows.jsonl"}}'),
    ),
}


@pytest.fixture(scope="module")
def results(offline_env) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every command's result, run a few at a time."""

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = str(busy.getsockname()[1])

    def run(argv: tuple[str, ...], extra: tuple[tuple[str, str], ...] = ()) -> object:
        argv = tuple(port if a == BUSY_PORT else a for a in argv)
        return subprocess.run(
            argv, cwd=ROOT, env=offline_env(**dict(extra)), capture_output=True, text=True
        )

    # The verifiers CLIs take longest: first, so the rest run beside them.
    jobs = {name: (argv, ()) for name, argv in {**LOADER_CASES, **FATHOM_LOADER_CASES}.items()}
    jobs.update({name: (case.argv, case.env) for name, case in CASES.items()})
    with busy, ThreadPoolExecutor(PARALLEL) as pool:
        futures = {name: pool.submit(run, *job) for name, job in jobs.items()}
        return {name: future.result(timeout=600) for name, future in futures.items()}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_naming_the_argument(
    name: str, results: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    result = results[name]
    lines = result.stderr.splitlines()
    assert result.returncode == 2, f"exit {result.returncode}:\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr
    assert len(lines) == 1, f"{len(lines)} lines on stderr:\n{result.stderr[-3000:]}"
    assert "error:" in lines[0] and CASES[name].names in lines[0], lines[0]
    assert result.stdout == ""


@pytest.mark.parametrize("name", list(LOADER_CASES))
def test_missing_gsm8k_data_ends_verifiers_output_with_one_clear_line(
    name: str, results: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    result = results[name]
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    # The argument, and what it takes (a local file or a hub id).
    assert "dataset_name=" in last and ".jsonl file" in last and "openai/gsm8k" in last, last


@pytest.mark.parametrize("name", list(FATHOM_LOADER_CASES))
def test_a_bad_source_row_ends_verifiers_output_with_the_loaders_line(
    name: str, results: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    result = results[name]
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert "fathom-rlm argument source: " in last and "line 2: answer_kind" in last, last
