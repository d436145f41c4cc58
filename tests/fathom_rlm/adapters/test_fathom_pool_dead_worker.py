"""A pool worker killed mid-run: `envtools.pool_eval` drives verifiers' own env-server pool (2
workers) against the scripted policy server, one worker is SIGKILLed from outside while it holds
rollouts, and the run still ends: the dead worker's rollouts are recorded with an error within
the rollout timeout, the worker's death is reported, and the exit status is 1.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from envtools.pool_eval import pool_workers

ROLLOUT_TIMEOUT_S = 15  # a live rollout here takes about a second; a dead one waits this long
WORKERS = 2
ROLLOUTS = 12  # 3 tasks x 4, sent at once: every worker holds some when one is killed

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_a_killed_worker_ends_the_run_with_errors_and_exit_1(
    policy_url: str, offline_env: Any, tmp_path: Any
) -> None:
    argv = [sys.executable, "-m", "envtools.pool_eval", "--env", "fathom-rlm"]
    argv += ["--base-url", policy_url, "--workers", str(WORKERS), "--num-examples", "3"]
    argv += ["--rollouts", str(ROLLOUTS // 3), "--doc-tokens", "16000"]
    argv += ["--rollout-timeout", str(ROLLOUT_TIMEOUT_S)]
    run = subprocess.Popen(
        argv, stdout=subprocess.PIPE, text=True, env=offline_env(TMPDIR=str(tmp_path)), cwd=tmp_path
    )
    assert run.stdout is not None
    warm = json.loads(run.stdout.readline())  # every worker has served; the rollouts are sent
    assert warm == {"warmed_up": WORKERS}
    (broker,) = [pid for pid in pool_workers(run.pid) if pool_workers(pid)]
    victim = min(pool_workers(broker))
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()
    rest = run.stdout.read().splitlines()
    assert run.wait(timeout=120) == 1
    ended_after = time.monotonic() - killed_at
    records, summary = [json.loads(line) for line in rest[:-1]], json.loads(rest[-1])
    errors = [r["error"] for r in records if r["error"]]
    assert summary["rollouts"] == len(records) == ROLLOUTS
    assert summary["errors"] == len(errors) > 0
    assert [w["pid"] for w in summary["dead_workers"]] == [victim]
    assert f"no reply within {ROLLOUT_TIMEOUT_S} s; pool worker(s) [{victim}] died" in errors
    assert len(errors) < ROLLOUTS  # the live worker's rollouts finished normally
    assert ended_after < ROLLOUT_TIMEOUT_S + 60
