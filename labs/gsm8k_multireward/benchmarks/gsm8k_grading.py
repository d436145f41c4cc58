"""Benchmark the gsm8k-multireward grader against plain math-verify on the GSM8K test set.

Completions are built from the gold solutions: the reasoning goes in a think block and the
answer in a box, written canonically, in equivalent forms (``\\$18``, ``18.0``, ``\\frac``,
units, thousands commas), in symbolic forms that need math-verify (``x = 18``, ``19 - 1``),
and perturbed into wrong answers. Reported, as medians of ``--repeats`` runs in this process:

* answers graded per second by ``MathGrader`` (extraction included) and by plain
  ``math_verify.verify(parse(gold), parse(completion))`` on the same completions;
* the agreement between the two, with the disagreeing forms;
* latency of pathological answers (and of the normal answers around them) while several
  threads keep the grader busy, with and without the pre-filters.

Run from the workspace root: ``uv run python labs/gsm8k_multireward/benchmarks/gsm8k_grading.py``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from gsm8k_multireward import MathGrader, extract_answer, gold_from_solution

from envtools import cli

DEFAULT_DATA = Path(__file__).resolve().parents[3] / ".." / "shared/data/gsm8k/test.jsonl"

POISON = {
    "200 KB of digits": "1" * 200_000,
    "braces nested 5000 deep": "{" * 5000 + "18" + "}" * 5000,
    "9^{9^{9^9}}": "9^{9^{9^9}}",
    "10^{10^{10}}": "10^{10^{10}}",
}


def build_completions(rows: list[dict]) -> list[tuple[str, str, str]]:
    """``(form, completion, gold)`` triples, about 4.25 per question, right and wrong.

    Plain-number forms dominate, as in real model output on GSM8K; every fourth question also
    gets a symbolic answer that only math-verify can decide.
    """
    items = []
    for index, row in enumerate(rows):
        gold = gold_from_solution(row["answer"])
        value = int(gold)
        reasoning = row["answer"].rsplit("####", 1)[0].strip()

        def wrap(boxed: str, reasoning: str = reasoning) -> str:
            return f"<think>{reasoning}</think>\nThe answer is \\boxed{{{boxed}}}."

        equivalent = [
            ("\\$gold", f"\\${gold}"),
            ("gold.0", f"{gold}.0"),
            ("\\frac{2g}{2}", f"\\frac{{{2 * value}}}{{2}}"),
            ("gold\\text{ units}", f"{gold}\\text{{ dollars}}"),
            ("thousands commas", f"{value:,}"),
        ][index % 5]
        wrong = [
            ("gold + 1 (wrong)", str(value + 1)),
            ("10 * gold (wrong)", str(10 * value)),
            ("gold / 100 (wrong)", f"{value / 100:g}"),
            ("gold + 1e-7 (wrong)", f"{gold}.0000001"),
        ][index % 4]
        items.append(("canonical", wrap(gold), gold))
        items.append((equivalent[0], wrap(equivalent[1]), gold))
        items.append((wrong[0], wrap(wrong[1]), gold))
        items.append(("no box (wrong)", f"<think>{reasoning}</think>\nI am not sure.", gold))
        if index % 4 == 0:
            symbolic = [
                ("x = gold (symbolic)", f"x = {gold}"),
                ("(g+1) - 1 (symbolic)", f"{value + 1} - 1"),
                ("g + 2 (symbolic, wrong)", f"{gold} + 2"),
            ][(index // 4) % 3]
            items.append((symbolic[0], wrap(symbolic[1]), gold))
    return items


def time_median(run: Callable[[], list[float]], repeats: int) -> tuple[float, list[float], list]:
    timings = []
    result: list[float] = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings), timings, result


def run_math_verify(items: list[tuple[str, str, str]]) -> list[float]:
    from math_verify import parse, verify

    return [1.0 if verify(parse(gold), parse(text)) else 0.0 for _, text, gold in items]


def run_math_verify_boxed(pairs: list[tuple[str, str]]) -> list[float]:
    """Plain math-verify on already extracted answers, both sides boxed (as the workers do)."""
    from math_verify import parse, verify

    return [
        1.0 if verify(parse(f"\\boxed{{{gold}}}"), parse(f"\\boxed{{{answer}}}")) else 0.0
        for answer, gold in pairs
    ]


def latency_under_load(
    grader: MathGrader, normal: list[tuple[str, str]], threads: int
) -> dict[str, float]:
    """Grade ``normal`` from ``threads`` threads while each poison answer is graded once."""
    normal_latencies: list[float] = []
    poison_latencies: dict[str, float] = {}
    poison_scores: dict[str, float] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def background(offset: int) -> None:
        local = []
        index = offset
        while not stop.is_set():
            answer, gold = normal[index % len(normal)]
            started = time.perf_counter()
            grader.grade(answer, gold)
            local.append(time.perf_counter() - started)
            index += threads
        with lock:
            normal_latencies.extend(local)

    def poison(name: str, answer: str) -> None:
        started = time.perf_counter()
        poison_scores[name] = grader.grade(answer, "18")
        poison_latencies[name] = time.perf_counter() - started

    workers = [threading.Thread(target=background, args=(i,)) for i in range(threads)]
    for thread in workers:
        thread.start()
    time.sleep(0.2)
    poisoners = [
        threading.Thread(target=poison, args=(name, answer)) for name, answer in POISON.items()
    ]
    started = time.perf_counter()
    for thread in poisoners:
        thread.start()
    for thread in poisoners:
        thread.join()
    poison_wall = time.perf_counter() - started
    time.sleep(0.2)
    stop.set()
    for thread in workers:
        thread.join()
    normal_latencies.sort()
    return {
        "poison_max_s": max(poison_latencies.values()),
        "poison_all_wall_s": poison_wall,
        "poison_scores": poison_scores,
        "poison_latency_s": poison_latencies,
        "normal_graded": len(normal_latencies),
        "normal_p50_ms": 1000 * normal_latencies[len(normal_latencies) // 2],
        "normal_p99_ms": 1000 * normal_latencies[int(len(normal_latencies) * 0.99)],
        "normal_max_ms": 1000 * normal_latencies[-1],
    }


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python labs/gsm8k_multireward/benchmarks/gsm8k_grading.py",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument(
        "--data",
        default=os.environ.get("GSM8K_TEST_JSONL", str(DEFAULT_DATA)),
        help="GSM8K test JSONL (default: $GSM8K_TEST_JSONL or ../shared/data/gsm8k/test.jsonl)",
    )
    parser.add_argument("--limit", type=cli.integer(1), help="use the first N questions")
    parser.add_argument(
        "--repeats", type=cli.integer(1), default=3, help="timed runs per grader (median)"
    )
    parser.add_argument(
        "--max-workers", type=cli.integer(1), default=10, help="math_verify_max_workers"
    )
    parser.add_argument(
        "--timeout", type=cli.number(0.01), default=5.0, help="math_verify_timeout (s)"
    )
    parser.add_argument(
        "--load-threads", type=cli.integer(1), default=8, help="threads in the load test"
    )
    parser.add_argument("--skip-baseline", action="store_true", help="skip plain math-verify")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    return parser


def bench_grader(
    grader: MathGrader, pairs_input: list[tuple[str, str]], repeats: int, results: dict
) -> list[float]:
    """MathGrader's throughput over every completion; returns its scores."""

    def ours() -> list[float]:
        return grader.grade_many([(extract_answer(text), gold) for text, gold in pairs_input])

    # Warm-up run: starts the worker processes (imports) outside the timed runs.
    warm_started = time.perf_counter()
    ours()
    warm = time.perf_counter() - warm_started
    median, timings, our_scores = time_median(ours, repeats)
    to_workers = grader.pool.started
    needed = sum(1 for text, gold in pairs_input if _needs_worker(extract_answer(text), gold))
    count = len(pairs_input)
    results["ours"] = {
        "answers_per_s": count / median,
        "runs_s": timings,
        "warmup_s": warm,
        "share_to_math_verify": needed / count,
        "workers_started": to_workers,
        "correct": sum(our_scores),
    }
    print(
        f"MathGrader: {count / median:,.0f} answers/s (median of "
        f"{repeats}: {', '.join(f'{t:.2f}s' for t in timings)}); "
        f"{needed / count:.0%} of answers went to math-verify workers; "
        f"{sum(our_scores):.0f} graded correct"
    )
    return our_scores


def bench_worker_path(
    grader: MathGrader,
    pairs_input: list[tuple[str, str]],
    repeats: int,
    baseline: bool,
    results: dict,
) -> None:
    """Only the answers that need math-verify: the speed of the bounded worker path."""
    hard = [
        (extract_answer(text), gold)
        for text, gold in pairs_input
        if _needs_worker(extract_answer(text), gold)
    ]
    median_hard, timings_hard, _ = time_median(lambda: grader.grade_many(hard), repeats)
    results["ours_math_verify_path"] = {
        "answers": len(hard),
        "answers_per_s": len(hard) / median_hard,
        "runs_s": timings_hard,
    }
    print(
        f"MathGrader, math-verify path only ({len(hard)} answers): "
        f"{len(hard) / median_hard:,.0f} answers/s"
    )
    if baseline:
        median_hb, timings_hb, _ = time_median(lambda: run_math_verify_boxed(hard), repeats)
        results["math_verify_same_path_in_process"] = {
            "answers_per_s": len(hard) / median_hb,
            "runs_s": timings_hb,
        }
        print(
            f"plain math-verify in this process on the same {len(hard)} extracted answers: "
            f"{len(hard) / median_hb:,.0f} answers/s"
        )


def bench_poison(
    grader: MathGrader, pairs_input: list[tuple[str, str]], threads: int, results: dict
) -> None:
    """Poison answers among normal ones under load, with the pre-filter on and off."""
    normal = [(extract_answer(text), gold) for text, gold in pairs_input]
    for prefilter in (True, False):
        grader.prefilter = prefilter
        load = latency_under_load(grader, normal, threads)
        key = "load_prefilter" if prefilter else "load_no_prefilter"
        results[key] = load
        scores = ", ".join(
            f"{name}: {load['poison_scores'][name]:.0f} in {load['poison_latency_s'][name]:.2f}s"
            for name in POISON
        )
        print(
            f"Poison under load ({threads} threads, pre-filter "
            f"{'on' if prefilter else 'off'}): worst {load['poison_max_s']:.3f}s; {scores}; "
            f"normal answers meanwhile: {load['normal_graded']} graded, p50 "
            f"{load['normal_p50_ms']:.2f} ms, p99 {load['normal_p99_ms']:.1f} ms, max "
            f"{load['normal_max_ms']:.0f} ms"
        )
    grader.prefilter = True


def bench_plain_math_verify(
    items: list[tuple[str, str, str]], our_scores: list[float], repeats: int, results: dict
) -> None:
    """Plain math-verify over every completion, and where it disagrees with MathGrader."""
    median_mv, timings_mv, mv_scores = time_median(lambda: run_math_verify(items), repeats)
    agree = sum(1 for a, b in zip(our_scores, mv_scores, strict=True) if a == b)
    disagreements = Counter(
        f"{form}: ours {a:.0f} / math-verify {b:.0f}"
        for (form, _, _), a, b in zip(items, our_scores, mv_scores, strict=True)
        if a != b
    )
    results["math_verify"] = {
        "answers_per_s": len(items) / median_mv,
        "runs_s": timings_mv,
        "correct": sum(mv_scores),
        "agreement": agree / len(items),
        "disagreements": dict(disagreements),
    }
    print(
        f"plain math-verify: {len(items) / median_mv:,.0f} answers/s (median of "
        f"{repeats}: {', '.join(f'{t:.2f}s' for t in timings_mv)}); "
        f"{sum(mv_scores):.0f} graded correct"
    )
    print(f"agreement: {agree}/{len(items)} ({agree / len(items):.2%})")
    for line, count in disagreements.most_common():
        print(f"  {count:5d}  {line}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    what = "GSM8K test JSONL, 'question'/'answer' rows; or set $GSM8K_TEST_JSONL"
    data = parser.require_file("--data", args.data, what)
    with data.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    if args.limit:
        rows = rows[: args.limit]
    items = build_completions(rows)
    pairs_input = [(text, gold) for _, text, gold in items]
    print(
        f"{len(rows)} questions, {len(items)} completions; python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start"
    )

    results: dict = {"questions": len(rows), "completions": len(items)}
    with MathGrader(max_workers=args.max_workers, timeout=args.timeout) as grader:
        our_scores = bench_grader(grader, pairs_input, args.repeats, results)
        bench_worker_path(grader, pairs_input, args.repeats, not args.skip_baseline, results)
        bench_poison(grader, pairs_input, args.load_threads, results)
    if not args.skip_baseline:
        bench_plain_math_verify(items, our_scores, args.repeats, results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def _needs_worker(answer: str | None, gold: str) -> bool:
    from gsm8k_multireward.grading import quick_decision

    return quick_decision(answer, gold) is None


if __name__ == "__main__":
    sys.exit(main())
