"""Parse every prime-rl config of this repository with prime-rl's own config loader.

    python scripts/validate_prime_rl.py --prime-rl PATH [--rev HEAD] [--python python3.12]

PATH is a clone of the prime-rl repository (a bare clone works too). The script exports
`packages/prime-rl-configs` at `--rev` with `git archive` into a temporary directory, installs it
with uv into a temporary venv together with this repository's two environments (each with its
`[verifiers]` extra; the resolver picks the verifiers release both pins allow), then loads each
config (and each curriculum stage deep-merged onto its base) through `pydantic_config.cli` into
`RLConfig` (`SFTConfig` for `*-sft.toml`): the loading path of `uv run rl @ file.toml --dry-run`
(`uv run sft @ file.toml`). prime-rl imports the taskset
named by each env block while validating, so a parse also proves the environment is importable.

Nothing of prime-rl is written into this repository. Exits non-zero if any config fails to parse.
prime-rl-configs requires Python 3.12; pass its interpreter with `--python`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# envtools.cli is standard library only: taken from the source tree, as this script runs under
# any Python >= 3.11, with or without the workspace installed.
sys.path.append(str(ROOT / "src"))
from envtools import cli  # noqa: E402

CONFIG_DIR = ROOT / "orchestrator_configs" / "prime-rl"
ENVIRONMENTS = ("environments/fathom_rlm", "environments/gsm8k_multireward")

# Runs inside the temporary venv: parse each stack of files, print one JSON line per stack.
_PARSE_PROGRAM = r"""
import json, sys
from pydantic_config import cli
from prime_rl.configs.rl import RLConfig

from prime_rl.configs.sft import SFTConfig

for stack in json.loads(sys.argv[1]):
    args = [part for path in stack for part in ("@", path)] + ["--plain"]
    is_sft = stack[0].endswith("-sft.toml")
    try:
        config = cli(SFTConfig if is_sft else RLConfig, args=args)
    except BaseException as exc:  # ConfigFileError, or SystemExit from the CLI's error panel
        print(json.dumps({"stack": stack, "ok": False, "error": f"{type(exc).__name__}: {exc}"}))
        continue
    if is_sft:
        print(json.dumps({
            "stack": stack,
            "ok": True,
            "config": "SFTConfig",
            "model": config.model.name,
            "trainer_seq_len": config.model.seq_len,
            "data": config.data.model_dump(mode="json", include={"name", "seq_len", "loss_mask"}),
        }))
        continue
    eval_sources = config.orchestrator.eval.source if config.orchestrator.eval else []
    print(json.dumps({
        "stack": stack,
        "ok": True,
        "config": "RLConfig",
        "model": config.trainer.model.name,
        "max_steps": config.trainer.max_steps,
        "trainer_seq_len": config.trainer.model.seq_len,
        "orchestrator_seq_len": config.orchestrator.seq_len,
        "deployment": [config.deployment.num_train_gpus, config.deployment.num_infer_gpus],
        "inference_dp": config.inference.vllm.data_parallel_size if config.inference else None,
        "renderer": config.orchestrator.renderer.name,
        "sources": [
            {
                "name": source.resolved_name,
                # A train source's sampling weight among the train sources; None for eval.
                "ratio": source.ratio if i < len(config.orchestrator.train.source) else None,
                "taskset": type(source.env.taskset).__name__,
                "fields": source.env.taskset.model_dump(
                    exclude={"id", "task"}, exclude_unset=True, mode="json"
                ),
                "harness": type(source.env.agent.harness).__name__,
                "runtime": source.env.agent.runtime.type,
            }
            for i, source in enumerate([*config.orchestrator.train.source, *eval_sources])
        ],
    }))
"""


def config_stacks() -> list[list[Path]]:
    """Each base config alone, and each curriculum stage on top of the base it extends.

    A stage directory `<base-stem>-curriculum/` holds files that deep-merge onto `<base-stem>.toml`.
    """
    stacks: list[list[Path]] = []
    for base in sorted(CONFIG_DIR.glob("*.toml")):
        stacks.append([base])
        stage_dir = CONFIG_DIR / f"{base.stem}-curriculum"
        stacks.extend([base, stage] for stage in sorted(stage_dir.glob("*.toml")))
    return stacks


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, text=True, capture_output=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-4000:]}")
    return result


def uv_command() -> list[str]:
    """uv from its Python package if this interpreter has it, else from PATH."""
    try:
        import uv  # type: ignore[import-not-found]

        return [uv.find_uv_bin()]
    except ImportError:
        found = shutil.which("uv")
        if found is None:
            raise RuntimeError("uv is needed: pip install uv") from None
        return [found]


def export_configs_package(prime_rl: Path, rev: str, into: Path) -> tuple[str, Path]:
    """`git archive` prime-rl's configs package at `rev` into `into`; returns (commit, path)."""
    commit = run(["git", "-C", str(prime_rl), "rev-parse", f"{rev}^{{commit}}"]).stdout.strip()
    archive = into / "prime-rl-configs.tar"
    with archive.open("wb") as handle:
        subprocess.run(
            ["git", "-C", str(prime_rl), "archive", commit, "packages/prime-rl-configs"],
            check=True,
            stdout=handle,
        )
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return commit, into / "packages" / "prime-rl-configs"


def build_venv(python: str, package: Path, venv: Path) -> dict[str, str]:
    """A venv with prime-rl-configs and both environments; returns the key package versions."""
    uv = uv_command()
    run([*uv, "venv", "--quiet", "--python", python, str(venv)])
    venv_python = venv / "bin" / "python"
    environments = [f"{ROOT / path}[verifiers]" for path in ENVIRONMENTS]
    install = [*uv, "pip", "install", "--quiet", "--python", str(venv_python)]
    run([*install, str(package), *environments])
    listed = run([*uv, "pip", "list", "--format", "json", "--python", str(venv_python)]).stdout
    wanted = {"prime-rl-configs", "verifiers", "renderers", "prime-pydantic-config", "pydantic"}
    return {p["name"]: p["version"] for p in json.loads(listed) if p["name"] in wanted}


def parse_all(venv: Path, stacks: list[list[Path]]) -> list[dict[str, object]]:
    payload = json.dumps([[str(path) for path in stack] for stack in stacks])
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-c", _PARSE_PROGRAM, payload],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the parse program crashed:\n{result.stderr[-4000:]}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python scripts/validate_prime_rl.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--prime-rl", type=Path, required=True, help="a clone of prime-rl")
    parser.add_argument("--rev", default="HEAD", help="the prime-rl revision to check against")
    parser.add_argument(
        "--python", default="python3.12", help="a Python 3.12 interpreter (prime-rl's requirement)"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON lines")
    parser.add_argument(
        "stacks",
        nargs="*",
        help="config stacks to parse instead of the repository's, each `a.toml` or `a.toml@b.toml`",
    )
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The arguments, checked against the disk: a usage error (exit 2) names the bad one."""
    parser = build_parser()
    args = parser.parse_args(argv)
    git = ["git", "-C", str(args.prime_rl)]
    if subprocess.run([*git, "rev-parse", "--git-dir"], capture_output=True).returncode:
        parser.reject("--prime-rl", "a clone of the prime-rl repository", str(args.prime_rl))
    where = f"{args.rev}:packages/prime-rl-configs"
    if subprocess.run([*git, "cat-file", "-e", where], capture_output=True).returncode:
        parser.reject("--rev", "a revision of that clone with packages/prime-rl-configs", args.rev)
    if shutil.which(args.python) is None:
        parser.reject("--python", "a Python 3.12 interpreter on PATH or its path", args.python)
    args.stacks = [[Path(p).resolve() for p in s.split("@")] for s in args.stacks]
    for path in (p for stack in args.stacks for p in stack):
        parser.require_file("stacks", path, "a prime-rl TOML config")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stacks = args.stacks or config_stacks()
    try:
        with tempfile.TemporaryDirectory(prefix="prime-rl-configs-") as tmp:
            commit, package = export_configs_package(args.prime_rl, args.rev, Path(tmp))
            versions = build_venv(args.python, package, Path(tmp) / "venv")
            results = parse_all(Path(tmp) / "venv", stacks)
    except RuntimeError as exc:  # uv missing, or an install failed: its log, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"prime-rl {commit}; " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    failed = 0
    for result in results:
        names = " @ ".join(_shown(Path(p)) for p in result["stack"])  # type: ignore[union-attr]
        if args.json:
            print(json.dumps(result))
        if result["ok"]:
            detail = (
                f"data {result['data']}"
                if result["config"] == "SFTConfig"
                else "; ".join(
                    f"{s['name']}"
                    + (f" (ratio {s['ratio']:g})" if s.get("ratio") is not None else "")
                    + f": {s['taskset']} {s['fields']}"
                    for s in result["sources"]  # type: ignore[union-attr]
                )
            )
            print(
                f"OK    {names} ({result['config']})\n"
                f"      seq_len {result['trainer_seq_len']}, {detail}"
            )
        else:
            failed += 1
            print(f"FAIL  {names}\n      {result['error']}")
    if len(results) != len(stacks):
        print(f"error: parsed {len(results)} of {len(stacks)} config stacks", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
