"""Install each environment (plain and with extras) into a fresh venv; print time, size, packages.

    python scripts/measure_installs.py [--offline]

Each row is one `uv pip install <local path>[extra]` into a new temporary venv. With `--offline`
uv installs from its cache only (warm it with one online run or a workspace sync first), so the
time is the install itself rather than downloads. Size is the venv's site-packages on disk.
The `[trl]` extra is not measured: it pulls torch, which is installed separately.
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


def measure(name: str, requirement: str, workdir: Path, env: dict[str, str]) -> dict[str, object]:
    venv = workdir / name.replace("[", "-").replace("]", "")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([uv(), "venv", "--quiet", "--python", base, str(venv)], check=True, env=env)
    python = str(venv / "bin" / "python")
    start = time.perf_counter()
    subprocess.run(
        [uv(), "pip", "install", "--quiet", "--python", python, str(ROOT / requirement)],
        check=True,
        env=env,
    )
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
    parser.add_argument("--offline", action="store_true", help="install from uv's cache only")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    if args.offline:
        env["UV_OFFLINE"] = "1"
    print("| install | seconds | site-packages MB | packages | verifiers | datasets |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="measure-installs-") as tmp:
        for name, requirement in INSTALLS.items():
            try:
                row = measure(name, requirement, Path(tmp), env)
            except subprocess.CalledProcessError as exc:  # uv said why, above
                cache = "; --offline installs only what uv's cache holds" if args.offline else ""
                print(
                    f"error: installing {name} failed (uv exit {exc.returncode}){cache}",
                    file=sys.stderr,
                )
                return 1
            print("| " + " | ".join(str(v) for v in row.values()) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
