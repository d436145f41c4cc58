"""Every grading call is bounded, pathological answers score 0, and no process leaks.

No test here times a call: the machine running the tests may be busy. Each asserts that every
call returned with the right score (an unbounded call never returns, and the test's own timeout
fails it) and, where the pool counts it, what bounded the poison.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from gsm8k_multireward import MathGrader, extract_answer
from gsm8k_multireward.worker_pool import PoolClosedError, VerifyWorkerPool

pytestmark = pytest.mark.xdist_group("test_grading_timeouts")

POISON = [
    "1" * 200_000,
    "{" * 5000 + "18" + "}" * 5000,
    "9^{9^{9^9}}",
    "10^{10^{10}}",
]
# (completion, gold, expected): fast-path and math-verify answers mixed.
NORMAL = [
    ("<think>6*3</think> The answer is \\boxed{18}.", "18", 1.0),
    ("<think>6*3</think> \\boxed{2 \\times 9}", "18", 1.0),
    ("<think>...</think> \\boxed{\\sqrt{324}}", "18", 1.0),
    ("<think>...</think> \\boxed{x = 40}", "40", 1.0),
    ("<think>...</think> \\boxed{3 \\cdot 5}", "18", 0.0),
    ("<think>...</think> \\boxed{17}", "18", 0.0),
    ("<think>...</think> \\boxed{\\$1,000}", "1000", 1.0),
]
TIMEOUT = 1.0


def _batch() -> list[tuple[str, str, float]]:
    items = [(f"<think>hmm</think> \\boxed{{{poison}}}", "18", 0.0) for poison in POISON]
    items[-1] = (items[-1][0], "10", 0.0)  # 10^{10^{10}} against a gold that shares digits
    # Interleave so poison sits between normal answers in the same batch.
    mixed: list[tuple[str, str, float]] = []
    for index in range(max(len(items), len(NORMAL))):
        if index < len(NORMAL):
            mixed.append(NORMAL[index])
        if index < len(items):
            mixed.append(items[index])
    return mixed


@pytest.fixture(scope="module")
def poison_grader() -> Iterator[MathGrader]:
    """No pre-filter: every poison answer reaches math-verify and must be cut off there."""
    with MathGrader(max_workers=2, timeout=TIMEOUT, prefilter=False) as shared:
        _warm(shared, 2)
        yield shared
    assert shared.pool.live_workers == 0


def _warm(grader: MathGrader, workers: int) -> None:
    # Start the workers before timing: start-up (imports) is not part of a call's timeout.
    pairs = [("2 \\times 9", "18")] * workers
    assert grader.grade_many(pairs) == [1.0] * workers


def _run_threads(grader: MathGrader, batch: list[tuple[str, str, float]], threads: int) -> list:
    results: list = [None] * len(batch)

    def work(offset: int) -> None:
        for index in range(offset, len(batch), threads):
            completion, gold, _ = batch[index]
            results[index] = grader.grade(extract_answer(completion), gold)

    pool = [threading.Thread(target=work, args=(offset,)) for offset in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=60)
    return results


def test_poison_with_prefilter_in_threads(grader: MathGrader) -> None:
    # The default grader rejects the poison before any worker sees it: no call hits a deadline.
    batch = _batch()
    timeouts = grader.pool.timeouts
    results = _run_threads(grader, batch, threads=4)
    assert results == [expected for _, _, expected in batch]
    assert grader.pool.timeouts == timeouts


@pytest.mark.slow
def test_poison_in_concurrent_threads(poison_grader: MathGrader) -> None:
    batch = _batch()
    results = _run_threads(poison_grader, batch, threads=4)
    assert results == [expected for _, _, expected in batch]


@pytest.mark.slow
def test_poison_in_concurrent_tasks(poison_grader: MathGrader) -> None:
    batch = _batch()

    async def run() -> list[float]:
        return await asyncio.gather(
            *(poison_grader.agrade(extract_answer(text), gold) for text, gold, _ in batch)
        )

    results = asyncio.run(run())
    assert results == [expected for _, _, expected in batch]
    # grade_many on the same batch agrees.
    pairs = [(extract_answer(completion), gold) for completion, gold, _ in batch]
    assert poison_grader.grade_many(pairs) == results


@pytest.mark.slow
def test_close_during_a_call_leaves_no_process(
    poison_grader: MathGrader,
    list_children: Callable[[], set[int]],
    is_alive: Callable[[int], bool],
) -> None:
    # Runs last in this module: it closes the shared grader while a slow answer is in flight.
    before = list_children()
    pids = poison_grader.pool.worker_pids()
    assert pids and set(pids) <= before
    errors: list[BaseException] = []

    def slow_call() -> None:
        try:
            poison_grader.grade("9^{9^{9^9}}", "18")
        except BaseException as exc:  # the call in flight learns that the grader closed
            errors.append(exc)

    thread = threading.Thread(target=slow_call)
    thread.start()
    time.sleep(0.3)
    poison_grader.close()
    thread.join(timeout=20)
    assert not thread.is_alive()
    assert all(isinstance(error, PoolClosedError) for error in errors)
    assert not [pid for pid in pids if is_alive(pid)]
    assert list_children() == before - set(pids)
    with pytest.raises(RuntimeError):
        poison_grader.grade("18", "18")


@pytest.mark.slow
def test_stuck_worker_is_killed_and_replaced(
    list_children: Callable[[], set[int]], is_alive: Callable[[int], bool]
) -> None:
    # The parent deadline (timeout + grace = 0.4 s) is set below the worker's own timer
    # (2 s), so a slow answer forces the parent-side kill that guards against C-level hangs.
    before = list_children()
    pool = VerifyWorkerPool(max_workers=1, timeout=2.0, grace=-1.6)
    try:
        assert pool.verify("2 \\times 9", "18") == 1.0
        first = set(pool.worker_pids())
        assert pool.verify("10^{10^{10}}", "10") == 0.0
        assert pool.timeouts == 1
        assert not [pid for pid in first if is_alive(pid)]  # the stuck worker is gone
        assert pool.verify("\\sqrt{324}", "18") == 1.0  # a fresh worker takes over
        assert pool.started == 2
    finally:
        pids = pool.worker_pids()
        pool.close()
    assert not [pid for pid in pids if is_alive(pid)]
    assert list_children() - before == set()
    with pytest.raises(PoolClosedError):
        pool.verify("1", "1")


_EXIT_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from gsm8k_multireward import MathGrader
    grader = MathGrader(max_workers=1, timeout=5.0)
    assert grader.grade_many([("2 \\\\times 9", "18"), ("\\\\sqrt{324}", "18")]) == [1.0, 1.0]
    print(" ".join(str(pid) for pid in grader.pool.worker_pids()), flush=True)
    if sys.argv[1] == "hang":
        import time
        time.sleep(600)
    # "exit": leave without close(); interpreter exit must stop the workers.
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exit", "hang"])
def test_workers_do_not_outlive_the_parent(mode: str, is_alive: Callable[[int], bool]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _EXIT_SCRIPT, mode],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        pids = [int(pid) for pid in proc.stdout.readline().split()]
        assert pids
        if mode == "hang":
            # The parent is killed outright: no atexit, the kernel must take the workers.
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(is_alive(pid) for pid in pids):
        time.sleep(0.05)
    assert not [pid for pid in pids if is_alive(pid)]
