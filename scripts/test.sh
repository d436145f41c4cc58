#!/usr/bin/env bash
# Lint and the full test suite, from a clean checkout on a machine with only Python >= 3.11 and pip.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -m reward_audit`).
set -euo pipefail
cd "$(dirname "$0")/.."

python -m uv --version >/dev/null 2>&1 || python -m pip install --quiet uv
uv() { python -m uv "$@"; }
export UV_PYTHON_DOWNLOADS=never

uv sync --frozen --all-packages --quiet
uv run --frozen ruff check .
uv run --frozen ruff format --check .

status=0
uv run --frozen pytest "$@" || status=$?
if [ "$status" -eq 5 ]; then
    echo "error: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
