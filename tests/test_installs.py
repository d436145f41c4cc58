"""Each environment installs alone, the way trainers and the environments hub take it: from a
built wheel, an sdist and a git URL with `#subdirectory=`, into an empty venv, with nothing from
this repository but that one artifact and nothing that is not on the public package index. The
code the two environments share (`packages/`) is copied into each at build time
(`<environment>._vendor`), so neither needs an unpublished sibling.

Every case builds a fresh venv and installs with `uv pip install`, the way
`scripts/measure_installs.py` does: from the package registry, with every dependency held to the
workspace lock's version (so a new upstream release cannot change what is tested; uv reuses what
its cache holds, so after `uv sync` little or nothing is downloaded). These are the only tests
that reach beyond loopback, and only to the package registry. Then a probe program runs in that
venv, from an empty folder (the checkout is not on its path):

* plain `gsm8k-multireward`, from its sdist: neither verifiers nor datasets is importable; the
  package imports, reads the JSONL fixture and scores completions through math-verify; hub
  loading and `load_environment` fail with an error naming the extra to install.
* plain `fathom-rlm`, from its wheel: verifiers is not importable; the package imports, runs one
  rollout of the core agent loop (a scripted chat function, a real sandboxed `repl` call on a
  16K-token document) and scores it; `load_environment` names the extra.
* `[verifiers]` from a git URL of each (and verifiers pinned to 0.3.1, the release with both
  APIs): the legacy `load_environment` builds an environment, and the v1 Taskset is exported.
* `[openenv]` from both wheels: each OpenEnv server app is built behind its own copy of the
  guard and answers `/healthz`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import tarfile
import zipfile
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


OPENENV = r"""
import asyncio, json, sys
import httpx
import fathom_rlm, gsm8k_multireward
from fathom_rlm.openenv.server import app as fathom_app
from gsm8k_multireward.openenv.server import app as gsm8k_app
from fathom_rlm._vendor.openenv_guard import guard_settings as fathom_guard
from gsm8k_multireward._vendor.openenv_guard import guard_settings as gsm8k_guard

args = fathom_app.build_parser().parse_args(
    ["--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"]
)
settings = fathom_guard(args)
options = fathom_app.server_options(args, settings)
apps = {"fathom-rlm": fathom_app.create_fathom_app(options, settings)}
args = gsm8k_app.build_parser().parse_args(["--data", sys.argv[1]])
options = gsm8k_app.server_options(args)
apps["gsm8k-multireward"] = gsm8k_app.create_gsm8k_app(options, gsm8k_guard(args))

async def health(app):
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        reply = await client.get("/healthz")
        return reply.status_code, reply.json()

loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("env_adapters", "openenv_guard"))
print(json.dumps({"files": [fathom_rlm.__file__, gsm8k_multireward.__file__], "bare": loaded,
                  "health": {name: asyncio.run(health(app)) for name, app in apps.items()},
                  "guards": [type(app).__module__ for app in apps.values()]}))
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


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel and an sdist of each environment (the wheel built from the sdist, as `uv build`
    does), in a folder of their own."""
    out = tmp_path_factory.mktemp("dist")
    for environment in (FATHOM, GSM8K):
        subprocess.run(
            [INSTALLS.uv(), "build", "--quiet", "--out-dir", str(out), str(environment)],
            check=True,
            capture_output=True,
            env=_clean_env(),
        )
    return out


@pytest.fixture(scope="module")
def git_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A git repository of the working tree as it is (committed or not), as a `git+file` URL."""
    repo = tmp_path_factory.mktemp("repo")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source, target = REPO / name, repo / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@localhost"]
    for args in (["init", "--quiet"], ["add", "--all"], ["commit", "--quiet", "-m", "tree"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    return f"git+file://{repo}"


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_OFFLINE")}


def install(venv: Path, constraints: Path, *requirements: str) -> Path:
    """A fresh venv with `requirements` installed at the lock's versions; returns its python."""
    try:
        return INSTALLS.install(venv, list(requirements), constraints, _clean_env())
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"uv could not install {requirements}:\n{exc.stderr[-4000:]}")


def probe(python: Path, program: str, *args: str, cwd: Path) -> dict:
    """Run `program` in the venv of `python`, from `cwd` (an empty folder: the checkout is not on
    the path), and return the JSON it prints last."""
    cwd.mkdir(exist_ok=True)
    env = {k: v for k, v in _clean_env().items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [str(python), "-c", program, *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env={**env, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def only(folder: Path, pattern: str) -> str:
    (found,) = folder.glob(pattern)
    return str(found)


def test_wheels_carry_the_shared_code_and_need_nothing_unpublished(dist: Path) -> None:
    for name in ("fathom_rlm", "gsm8k_multireward"):
        with zipfile.ZipFile(only(dist, f"{name}-*.whl")) as wheel:
            files = set(wheel.namelist())
            (metadata,) = (f for f in files if f.endswith(".dist-info/METADATA"))
            requires = [
                line for line in wheel.read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:")
            ]  # fmt: skip
            for package in ("env_adapters", "openenv_guard"):
                source = REPO / "packages" / package / package
                for module in source.glob("*.py"):
                    vendored = f"{name}/_vendor/{package}/{module.name}"
                    assert wheel.read(vendored) == module.read_bytes(), vendored
        assert requires and not [r for r in requires if "adapters" in r or "guard" in r], requires
        with tarfile.open(only(dist, f"{name}-*.tar.gz")) as sdist:
            members = {m.name: m for m in sdist.getmembers()}
        vendored = [m for n, m in members.items() if "/_vendor/openenv_guard/" in n]
        assert vendored and all(m.isfile() for m in vendored)  # files, not links out of the sdist


def test_gsm8k_sdist_installs_alone_and_scores_without_verifiers(
    tmp_path: Path, constraints: Path, dist: Path
) -> None:
    python = install(tmp_path / "venv", constraints, only(dist, "gsm8k_multireward-*.tar.gz"))
    out = probe(python, GSM8K_PLAIN, str(FIXTURE), cwd=tmp_path / "run")
    assert out["installed_extras"] == []
    assert out["gold"] == "29"
    assert out["right"]["correct_answer"] == 1.0 and out["right"]["length_reward"] == 1.0
    assert out["wrong"]["correct_answer"] == 0.0 and out["wrong"]["reward"] == 0.0
    assert "GSM8KMultirewardTaskset" not in out["all"]
    assert "gsm8k-multireward[hub]" in out["errors"]["hub"]
    assert "gsm8k-multireward[verifiers]" in out["errors"]["legacy"]


def test_fathom_wheel_installs_alone_and_runs_a_rollout_without_verifiers(
    tmp_path: Path, constraints: Path, dist: Path
) -> None:
    python = install(tmp_path / "venv", constraints, only(dist, "fathom_rlm-*.whl"))
    out = probe(python, FATHOM_PLAIN, cwd=tmp_path / "run")
    assert out["verifiers"] is False
    assert out["repl_output"] and str(out["doc_chars"]) in out["repl_output"][0]
    assert out["scores"]["format_gate"] == 1.0 and out["scores"]["correctness"] == 1.0
    assert out["all"] == []
    assert "fathom-rlm[verifiers]" in out["legacy"]


def test_verifiers_extra_installs_from_a_git_url(
    tmp_path: Path, constraints: Path, git_url: str
) -> None:
    python = install(
        tmp_path / "venv",
        constraints,
        f"fathom-rlm[verifiers] @ {git_url}#subdirectory=environments/fathom_rlm",
        f"gsm8k-multireward[verifiers] @ {git_url}#subdirectory=environments/gsm8k_multireward",
        "verifiers==0.3.1",
    )
    out = probe(python, WITH_VERIFIERS, str(FIXTURE), cwd=tmp_path / "run")
    assert out["verifiers"] == "0.3.1"
    assert out["eager"] == []
    assert out["legacy"][0] and out["legacy"][1]
    assert (out["fathom_v1"], out["gsm8k_v1"]) == ("FathomTaskset", "GSM8KMultirewardTaskset")


def test_openenv_extra_serves_from_the_wheels(
    tmp_path: Path, constraints: Path, dist: Path
) -> None:
    python = install(
        tmp_path / "venv",
        constraints,
        only(dist, "fathom_rlm-*.whl") + "[openenv]",
        only(dist, "gsm8k_multireward-*.whl") + "[openenv]",
    )
    out = probe(python, OPENENV, str(FIXTURE), cwd=tmp_path / "run")
    venv = str(python.parents[1])
    assert all(f.startswith(venv) for f in out["files"]), out["files"]
    assert out["health"] == {
        "fathom-rlm": [200, {"status": "healthy"}],
        "gsm8k-multireward": [200, {"status": "healthy"}],
    }
    assert out["bare"] == []  # each environment runs its own copy of the guard
    assert out["guards"] == [
        "fathom_rlm._vendor.openenv_guard.middleware",
        "gsm8k_multireward._vendor.openenv_guard.middleware",
    ]
