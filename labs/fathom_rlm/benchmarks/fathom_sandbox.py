"""Benchmark the fathom-rlm sandbox: start-up, round trip, memory, and many live sessions.

Usage: uv run python labs/fathom_rlm/benchmarks/fathom_sandbox.py [--sessions 30] [--calls 300] \\
    [--alive 256]
       uv run python labs/fathom_rlm/benchmarks/fathom_sandbox.py --loop-lag-only

Event-loop lag: a ticker coroutine sleeps 1 ms at a time and records how late it wakes while
the sandbox starts its fork server, and while 24 MB texts cross the pipe (llm() from REPL code,
read_variable); the largest delay is what every other rollout on the loop waits.

Baselines measured in the same run: plain in-process `exec`, RestrictedPython compile + exec
in-process (the language layer alone), and a fresh `python` process per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from fathom_lab.soak import memory_kb
from fathom_rlm.sandbox import (
    SandboxConfig,
    SandboxError,
    SandboxSession,
    cells,
    fork_server_cpu_seconds,
    isolation_report,
    shutdown_fork_servers,
    warm_up,
)
from fathom_rlm.sandbox import restricted as restricted_layer

from envtools import cli

SLICE = "doc[1000:2000]"
REGEX = "re_findall(r'velmora', doc)"
PLAIN_REGEX = "re.findall(r'velmora', doc)"
# \b in front defeats sre's literal-prefix scan: every position is tried (about 10x slower).
REGEX_B = "re_findall(r'\\bvelmora\\b', doc)"
PLAIN_REGEX_B = "re.findall(r'\\bvelmora\\b', doc)"


def make_document(chars: int, seed: int = 7) -> str:
    """Prose-like text from invented words (the real generator is not needed to time I/O)."""
    rng = random.Random(seed)
    onsets = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "th", "sh"]
    vowels, codas = "aeiou", "nrsltm"
    vocab = [
        "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.randint(1, 3)))
        + rng.choice(codas)
        for _ in range(5000)
    ]
    vocab[:20] = ["the", "of", "and", "to", "in", "was", "a", "his", "her", "at"] * 2
    words: list[str] = []
    size = 0
    while size < chars:
        sentence = [rng.choice(vocab) for _ in range(rng.randint(6, 18))]
        if rng.random() < 0.01:
            sentence[rng.randrange(len(sentence))] = "velmora"
        text = " ".join(sentence).capitalize() + ". "
        words.append(text)
        size += len(text)
    return "".join(words)[:chars]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def p90_ms(samples: list[float]) -> float:
    return sorted(samples)[int(len(samples) * 0.9) - 1] * 1000


def time_calls(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def bench_in_process(doc: str, calls: int) -> dict[str, float]:
    """Same code, no isolation: plain exec, and RestrictedPython compile + exec."""
    plain_globals = {"doc": doc, "re": re}
    buffer = restricted_layer.OutputBuffer(4000)
    rp_globals = restricted_layer.make_globals(doc, buffer, lambda p, t="": "")

    def plain(code: str) -> None:
        exec(compile(code, "<bench>", "exec"), dict(plain_globals))

    def rp(code: str) -> None:
        cell = cells.compile_cell(code)
        exec(cell.body, rp_globals)
        if cell.tail is not None:
            repr(eval(cell.tail, rp_globals))

    return {
        "plain_slice": median_ms(time_calls(lambda: plain(f"x = {SLICE}\nrepr(x)"), calls)),
        "plain_regex": median_ms(time_calls(lambda: plain(f"x = {PLAIN_REGEX}\nrepr(x)"), calls)),
        "rp_slice": median_ms(time_calls(lambda: rp(SLICE), calls)),
        "rp_regex": median_ms(time_calls(lambda: rp(REGEX), calls)),
        "plain_regex_b": median_ms(
            time_calls(lambda: plain(f"x = {PLAIN_REGEX_B}\nrepr(x)"), max(calls // 10, 5))
        ),
        "rp_regex_b": median_ms(time_calls(lambda: rp(REGEX_B), max(calls // 10, 5))),
    }


def bench_fresh_process(doc: str, calls: int) -> dict[str, float]:
    """A new interpreter per call, the document read from a file (no sandbox at all)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(doc)
        path = f.name
    python = os.path.realpath(sys.executable)
    try:

        def run(expr: str) -> None:
            code = f"import re\ndoc = open({path!r}).read()\nprint(repr({expr}))"
            subprocess.run([python, "-I", "-S", "-c", code], check=True, capture_output=True)

        return {
            "fresh_slice": median_ms(time_calls(lambda: run(SLICE), calls)),
            "fresh_regex": median_ms(time_calls(lambda: run(PLAIN_REGEX), calls)),
            "fresh_regex_b": median_ms(time_calls(lambda: run(PLAIN_REGEX_B), calls)),
        }
    finally:
        os.unlink(path)


async def bench_sandbox(doc: str, sessions: int, calls: int) -> dict[str, float]:
    ready = []
    for _ in range(sessions):
        t = time.perf_counter()
        session = await SandboxSession.start(doc)
        ready.append(time.perf_counter() - t)
        await session.close()
    # CPU of a whole session life (start, one slice, close): this process, and the fork server
    # with the worker it forked and reaped.
    box0, cpu0 = fork_server_cpu_seconds(), time.process_time()
    for _ in range(sessions):
        async with await SandboxSession.start(doc) as session:
            await session.run(SLICE)
    life_parent = (time.process_time() - cpu0) / sessions
    life_box = (fork_server_cpu_seconds() - box0) / sessions
    async with await SandboxSession.start(doc) as session:
        for _ in range(20):  # warm the worker's own caches
            await session.run(SLICE)
            await session.run(REGEX)
        slice_rt, regex_rt = [], []
        for _ in range(calls):
            t = time.perf_counter()
            await session.run(SLICE)
            slice_rt.append(time.perf_counter() - t)
            t = time.perf_counter()
            await session.run(REGEX)
            regex_rt.append(time.perf_counter() - t)
        regex_b = []
        for _ in range(max(calls // 10, 5)):
            t = time.perf_counter()
            await session.run(REGEX_B)
            regex_b.append(time.perf_counter() - t)
        rss, pss = memory_kb(session.pid or 0)
    return {
        "ready_median": median_ms(ready),
        "ready_p90": p90_ms(ready),
        "life_cpu_parent_ms": life_parent * 1000,
        "life_cpu_sandbox_ms": life_box * 1000,
        "slice_median": median_ms(slice_rt),
        "slice_p90": p90_ms(slice_rt),
        "regex_median": median_ms(regex_rt),
        "regex_p90": p90_ms(regex_rt),
        "regex_b_median": median_ms(regex_b),
        "idle_rss_mb": rss / 1024,
        "idle_pss_mb": pss / 1024,
    }


async def bench_alive(doc: str, count: int) -> dict[str, float]:
    """`count` sessions alive at once, each with its own copy of the document and some state."""
    parent_before = memory_kb(os.getpid())[0]
    t = time.perf_counter()
    live: list[SandboxSession] = []
    try:
        for start in range(0, count, 32):
            batch = await asyncio.gather(
                *(SandboxSession.start(doc) for _ in range(min(32, count - start)))
            )
            live.extend(batch)
        started = time.perf_counter() - t
        await asyncio.gather(*(s.run("hits = re_findall(r'velmora', doc)") for s in live))
        t = time.perf_counter()
        results = await asyncio.gather(*(s.run(SLICE) for s in live))
        one_round = time.perf_counter() - t
        assert all(r.error is None for r in results)
        workers = [memory_kb(s.pid or 0) for s in live]
        report = isolation_report()
        server = memory_kb(int(report["fork_server_pid"] or 0))  # type: ignore[call-overload]
        parent_after = memory_kb(os.getpid())[0]
        pss_total = sum(p for _, p in workers) + server[1]
        return {
            "alive": len(live),
            "start_all_s": started,
            "slice_round_all_ms": one_round * 1000,
            "workers_pss_total_mb": pss_total / 1024,
            "workers_rss_total_mb": sum(r for r, _ in workers) / 1024,
            "parent_rss_growth_mb": (parent_after - parent_before) / 1024,
        }
    finally:
        await asyncio.gather(*(s.close() for s in live))


class _Ticker:
    """Wakes every 1 ms and keeps the largest lateness seen since the last reset."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        while True:
            mark = time.perf_counter()
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, time.perf_counter() - mark - 0.001)

    async def measure(self, work: Any) -> float:
        """Max lateness in ms while `work` (an awaitable) runs."""
        self._task = self._task or asyncio.create_task(self._run())
        await asyncio.sleep(0.01)
        self.worst = 0.0
        await work
        worst = self.worst
        return worst * 1000


async def _lag_once(doc: str, big_chars: int, ticker: _Ticker) -> dict[str, float]:
    shutdown_fork_servers()
    holder: list[SandboxSession] = []

    async def cold_start() -> None:
        holder.append(await SandboxSession.start(doc))

    out = {"lag_cold_start_ms": await ticker.measure(cold_start())}
    await holder[0].close()

    async def echo(prompt: str, text: str) -> str:
        return str(len(text))

    config = SandboxConfig(call_timeout_s=30.0)
    # At the default caps: the largest llm() text and variable that still cross the pipe.
    at_cap = {"llm": 200_000 - 10, "read": 1_000_000}
    async with await SandboxSession.start(doc, config=config, llm=echo) as session:
        await session.run(f"big = 'x' * {big_chars}\nllm_max = 'x' * {at_cap['llm']}")
        await session.run(f"read_max = 'x' * {at_cap['read']}")
        out["lag_idle_call_ms"] = await ticker.measure(session.run("n = len(big)"))
        llm_call = session.run("try:\n    llm('count', big)\nexcept LLMError as e:\n    print(e)")
        out["lag_llm_big_text_ms"] = await ticker.measure(llm_call)
        out["lag_read_big_variable_ms"] = await ticker.measure(_read(session, "big"))
        llm_call = session.run("print(llm('count', llm_max))")
        out["lag_llm_text_at_cap_ms"] = await ticker.measure(llm_call)
        out["lag_read_variable_at_cap_ms"] = await ticker.measure(_read(session, "read_max"))
    return out


async def _read(session: SandboxSession, name: str) -> None:
    with contextlib.suppress(SandboxError):  # over the cap: refused without the transfer
        await session.read_variable(name)


async def bench_loop_lag(doc: str, big_chars: int, repeats: int = 3) -> dict[str, float]:
    """Worst event-loop delay during a cold start and big transfers; median over repeats."""
    ticker = _Ticker()
    runs = [await _lag_once(doc, big_chars, ticker) for _ in range(repeats)]
    return {key: round(statistics.median(r[key] for r in runs), 1) for key in runs[0]}


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python labs/fathom_rlm/benchmarks/fathom_sandbox.py",
        description=__doc__.splitlines()[0],
    )
    count = cli.integer(1)
    parser.add_argument("--doc-chars", type=count, default=800_000)
    parser.add_argument("--sessions", type=count, default=30, help="sessions timed for start-up")
    parser.add_argument("--calls", type=count, default=300, help="round trips per measurement")
    parser.add_argument(
        "--fresh-calls", type=count, default=15, help="fresh-process baseline calls"
    )
    parser.add_argument("--alive", type=cli.integer(0), default=256, help="sessions alive at once")
    parser.add_argument("--json", action="store_true", help="print raw numbers as JSON")
    parser.add_argument("--big-chars", type=count, default=24_000_000, help="loop-lag text size")
    parser.add_argument("--loop-lag-only", action="store_true", help="only the loop-lag numbers")
    return parser


def print_table(n: dict[str, Any], sessions: int, alive: bool) -> None:
    """The numbers as the Markdown table docs/sandbox.md holds."""
    print(
        f"document: {n['doc_chars']} chars, regex matches: {n['regex_matches']}; "
        f"isolation: {n['isolation']}; cpus: {n['cpus']}"
    )
    print(f"fork server start (once per process): {n['fork_server_start_ms']:.0f} ms")
    print()
    print(
        "| measurement | sandbox session | plain exec | RestrictedPython in-process "
        "| fresh python per call |"
    )
    print("|---|---|---|---|---|")
    print(
        f"| worker ready, median (p90) over {sessions} | {n['ready_median']:.1f} ms "
        f"({n['ready_p90']:.1f}) | - | - | - |"
    )
    print(
        f"| CPU per session life (start, one slice, close), mean over {sessions} "
        f"| parent {n['life_cpu_parent_ms']:.1f} ms + fork server and worker "
        f"{n['life_cpu_sandbox_ms']:.1f} ms | - | - | - |"
    )
    print(
        f"| `{SLICE}` round trip, median (p90) | {n['slice_median']:.2f} ms "
        f"({n['slice_p90']:.2f}) | {n['plain_slice']:.3f} ms | {n['rp_slice']:.3f} ms "
        f"| {n['fresh_slice']:.1f} ms |"
    )
    print(
        f"| `{REGEX}` round trip, median (p90) | {n['regex_median']:.2f} ms "
        f"({n['regex_p90']:.2f}) | {n['plain_regex']:.3f} ms | {n['rp_regex']:.3f} ms "
        f"| {n['fresh_regex']:.1f} ms |"
    )
    print(
        f"| `{REGEX_B}` round trip, median | {n['regex_b_median']:.2f} ms "
        f"| {n['plain_regex_b']:.3f} ms | {n['rp_regex_b']:.3f} ms | {n['fresh_regex_b']:.1f} ms |"
    )
    print(
        f"| idle session memory | RSS {n['idle_rss_mb']:.1f} MB, PSS {n['idle_pss_mb']:.1f} MB "
        "| - | - | - |"
    )
    if alive:
        print(
            f"| {n['alive_alive']} sessions alive | PSS total {n['alive_workers_pss_total_mb']:.0f}"
            f" MB (RSS sum {n['alive_workers_rss_total_mb']:.0f} MB), parent +"
            f"{n['alive_parent_rss_growth_mb']:.0f} MB; started in {n['alive_start_all_s']:.2f} s;"
            f" one slice on each: {n['alive_slice_round_all_ms']:.0f} ms | - | - | - |"
        )


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    doc = make_document(args.doc_chars)
    if args.loop_lag_only:
        try:
            lag = asyncio.run(bench_loop_lag(doc, args.big_chars))
        finally:
            shutdown_fork_servers()
        print(json.dumps({**lag, "load_average_1m": os.getloadavg()[0]}, indent=2))
        return
    t = time.perf_counter()
    warm_up()
    fork_server_start = time.perf_counter() - t
    try:
        sandbox = asyncio.run(bench_sandbox(doc, args.sessions, args.calls))
        alive = asyncio.run(bench_alive(doc, args.alive)) if args.alive else {}
        in_process = bench_in_process(doc, args.calls)
        fresh = bench_fresh_process(doc, args.fresh_calls)
        report = isolation_report()
    finally:
        shutdown_fork_servers()
    numbers = {
        "fork_server_start_ms": fork_server_start * 1000,
        "doc_chars": len(doc),
        "regex_matches": len(re.findall(r"\bvelmora\b", doc)),
        **sandbox,
        **in_process,
        **fresh,
        **{f"alive_{k}": v for k, v in alive.items()},
        "isolation": report["network"],
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(numbers, indent=2))
        return
    print_table(numbers, args.sessions, bool(alive))


if __name__ == "__main__":
    main()
