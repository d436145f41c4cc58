"""Correctness grading: an exact fast path, pre-filters, then math-verify in worker processes.

Order of decisions for one answer (``MathGrader.grade``):

1. ``None`` (no boxed answer) scores 0.
2. Longer than ``MAX_ANSWER_CHARS`` scores 0.
3. If both answer and gold read as plain numbers (``answer_forms.plain_number``), they are
   compared exactly and that decides: no symbolic engine is involved. This covers ``18``,
   ``18.0``, ``\\$18``, ``1,000``, ``\\frac{36}{2}``, ``18\\text{ dollars}``, ``18 dollars``.
4. Otherwise a pathological answer (``answer_forms.is_pathological``: deep braces, power
   towers, huge exponents or factorials, sums/products/integrals) scores 0 at once.
5. Otherwise math-verify decides in a worker process, bounded by ``timeout``; an answer that
   runs past it scores 0 and its worker is replaced.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from functools import lru_cache

from gsm8k_multireward.answer_forms import (
    MAX_ANSWER_CHARS,
    is_pathological,
    numbers_equal,
    parse_gold,
    plain_number,
)
from gsm8k_multireward.worker_pool import VerifyWorkerPool

_GOLD_MARKER = "####"
_GOLD_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?|[-+]?\.\d+")


def gold_from_solution(solution: str) -> str:
    """The gold number of a GSM8K solution: the number after the last ``####``, no commas."""
    if _GOLD_MARKER not in solution:
        raise ValueError("GSM8K solution has no '####' final-answer marker")
    tail = solution.rsplit(_GOLD_MARKER, 1)[1].strip()
    match = _GOLD_NUMBER.match(tail.replace("$", "").strip())
    if match is None:
        raise ValueError(f"no number after '####' in GSM8K solution: {tail[:80]!r}")
    return match.group().replace(",", "")


@lru_cache(maxsize=65536)
def _gold_value(gold: str) -> Fraction | None:
    return parse_gold(gold)


def quick_decision(answer: str | None, gold: str, *, prefilter: bool = True) -> float | None:
    """The score when it is decidable without math-verify, else None."""
    if answer is None:
        return 0.0
    answer = answer.strip()
    if not answer or len(answer) > MAX_ANSWER_CHARS:
        return 0.0
    gold_value = _gold_value(gold.strip())
    if gold_value is not None:
        read = plain_number(answer)
        if read is not None:
            return 1.0 if numbers_equal(read, gold_value) else 0.0
    if prefilter and is_pathological(answer):
        return 0.0
    return None


class MathGrader:
    """Thread-safe, async-friendly correctness grader with a hard timeout per answer.

    ``max_workers`` caps both the math-verify worker processes and the threads that wait on
    them; workers start only when an answer needs math-verify. ``prefilter=False`` sends
    pathological answers to math-verify too (they then cost up to ``timeout`` each).
    """

    def __init__(
        self, max_workers: int = 10, timeout: float = 5.0, *, prefilter: bool = True
    ) -> None:
        if not isinstance(max_workers, int) or isinstance(max_workers, bool) or max_workers < 1:
            raise ValueError(f"max_workers must be an integer >= 1, got {max_workers!r}")
        if not isinstance(timeout, int | float) or not timeout > 0:
            raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        self.max_workers = max_workers
        self.timeout = float(timeout)
        self.prefilter = prefilter
        self._pool = VerifyWorkerPool(max_workers=max_workers, timeout=self.timeout)
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._closed = False

    @property
    def pool(self) -> VerifyWorkerPool:
        """The worker pool (exposed for monitoring: live workers, timeouts)."""
        return self._pool

    def grade(self, answer: str | None, gold: str) -> float:
        """1.0 if ``answer`` equals ``gold``, else 0.0. Blocks at most about ``timeout``."""
        self._check_open()
        decided = quick_decision(answer, gold, prefilter=self.prefilter)
        if decided is not None:
            return decided
        assert answer is not None
        return self._pool.verify(answer.strip(), gold.strip())

    async def agrade(self, answer: str | None, gold: str) -> float:
        """Async ``grade``: the fast path runs inline, math-verify waits in a thread."""
        self._check_open()
        decided = quick_decision(answer, gold, prefilter=self.prefilter)
        if decided is not None:
            return decided
        assert answer is not None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._get_executor(), self._pool.verify, answer.strip(), gold.strip()
        )

    def grade_many(self, pairs: Sequence[tuple[str | None, str]]) -> list[float]:
        """Grade ``(answer, gold)`` pairs; math-verify calls run concurrently. Keeps order."""
        self._check_open()
        scores: list[float | None] = [
            quick_decision(answer, gold, prefilter=self.prefilter) for answer, gold in pairs
        ]
        pending = [index for index, score in enumerate(scores) if score is None]
        if len(pending) == 1:
            index = pending[0]
            answer, gold = pairs[index]
            assert answer is not None
            scores[index] = self._pool.verify(answer.strip(), gold.strip())
        elif pending:
            executor = self._get_executor()
            futures = [
                executor.submit(
                    self._pool.verify,
                    (pairs[index][0] or "").strip(),
                    pairs[index][1].strip(),
                )
                for index in pending
            ]
            for index, future in zip(pending, futures, strict=True):
                scores[index] = future.result()
        return [float(score) for score in scores]  # type: ignore[arg-type]

    def close(self) -> None:
        """Stop the worker processes and threads. Idempotent."""
        self._closed = True
        self._pool.close()
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> MathGrader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("MathGrader is closed")

    def _get_executor(self) -> ThreadPoolExecutor:
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self.max_workers, thread_name_prefix="gsm8k-grade"
                )
            return self._executor
