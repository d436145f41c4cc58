"""Install each environment (plain and with extras) into a fresh venv; print time, size, packages.

    python scripts/measure_installs.py [--unpinned]

Each row is one `uv pip install <local path>[extra]` into a new temporary venv, from the package
registry (uv reuses the files its cache already holds, e.g. after `uv sync`). By default every
dependency is held to the version in the workspace's `uv.lock` (`uv export` as constraints), so
the rows are reproducible; `--unpinned` resolves the newest releases, as a user's
`pip install` would today. Size is the venv's site-packages on disk. The `[trl]` extra is not
measured: it pulls torch, which is installed separately.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# envtools.cli is standard library only: taken from the source tree, as this script runs under
# any Python >= 3.11, with or without the workspace installed.
sys.path.append(str(ROOT / "src"))
from envtools import cli  # noqa: E402

INSTALLS: dict[str, str] = {
    "gsm8k-multireward": "environments/gsm8k_multireward",
    "gsm8k-multireward[hub]": "environments/gsm8k_multireward[hub]",
    "gsm8k-multireward[verifiers]": "environments/gsm8k_multireward[verifiers]",
    "fathom-rlm": "environments/fathom_rlm",
    "fathom-rlm[verifiers]": "environments/fathom_rlm[verifiers]",
}


def uv() -> str:
    found = shutil.which("uv")
    if found is None:
        raise SystemExit("error: uv is not on PATH (pip install uv)")
    return found


def tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def lock_constraints(path: Path) -> Path:
    """Write the workspace lock's versions of every third-party package to `path` (pip format)."""
    subprocess.run(
        [uv(), "export", "--frozen", "--all-packages", "--all-groups", "--all-extras",
         "--no-hashes", "--no-emit-workspace", "--no-header", "--quiet", "-o", str(path)],
        check=True,
        cwd=ROOT,
    )  # fmt: skip
    return path


def install(
    venv: Path, requirements: list[str], constraints: Path | None, env: dict[str, str]
) -> Path:
    """A fresh venv at `venv` with `requirements` installed; returns its python.

    Raises CalledProcessError (with uv's stderr captured) when uv cannot install them.
    """
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([uv(), "venv", "--quiet", "--python", base, str(venv)], check=True, env=env)
    python = venv / "bin" / "python"
    pinned = ["-c", str(constraints)] if constraints else []
    subprocess.run(
        [uv(), "pip", "install", "--quiet", "--python", str(python), *pinned, *requirements],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return python


def measure(
    name: str, requirement: str, workdir: Path, constraints: Path | None, env: dict[str, str]
) -> dict[str, object]:
    venv = workdir / name.replace("[", "-").replace("]", "")
    start = time.perf_counter()
    python = str(install(venv, [str(ROOT / requirement)], constraints, env))
    seconds = time.perf_counter() - start
    listed = subprocess.run(
        [uv(), "pip", "list", "--format", "json", "--python", python],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    packages = {p["name"]: p["version"] for p in json.loads(listed)}
    (site,) = venv.glob("lib/python*/site-packages")
    return {
        "install": name,
        "seconds": round(seconds, 1),
        "site_packages_mb": round(tree_bytes(site) / 1e6, 1),
        "packages": len(packages),
        "verifiers": packages.get("verifiers", "-"),
        "datasets": packages.get("datasets", "-"),
    }


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python scripts/measure_installs.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--unpinned", action="store_true", help="newest releases instead of the lock's versions"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    print("| install | seconds | site-packages MB | packages | verifiers | datasets |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="measure-installs-") as tmp:
        constraints = None if args.unpinned else lock_constraints(Path(tmp) / "constraints.txt")
        for name, requirement in INSTALLS.items():
            try:
                row = measure(name, requirement, Path(tmp), constraints, env)
            except subprocess.CalledProcessError as exc:
                why = (exc.stderr or "").strip().splitlines()[:1] or [f"uv exit {exc.returncode}"]
                print(f"error: installing {name} failed: {why[0]}", file=sys.stderr)
                return 1
            print("| " + " | ".join(str(v) for v in row.values()) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
