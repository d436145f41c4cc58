"""Cheaper paths must give exactly what the plain path gives.

- reads of `doc` answered without a worker while a REPL has no state (`readonly.py`);
- `print(llm("literal", doc))` answered through the llm callback without a worker, likewise;
- `\\bliteral\\b` regexes compiled in a form the engine can scan for (`helpers.py`);
- large documents sent through a pipe sized to hold them (`session.py`);
- the fork server reaps workers and reports their CPU (benchmarks).
"""

from __future__ import annotations

import asyncio
import re

import pytest
from fathom_rlm.sandbox import (
    LLMRefused,
    SandboxConfig,
    SandboxSession,
    fork_server_cpu_seconds,
)
from fathom_rlm.sandbox import helpers as text_helpers
from fathom_rlm.sandbox import session as session_module
from fathom_rlm.sandbox.readonly import run_llm_only, run_read_only

CONFIG = SandboxConfig(call_timeout_s=2.0, kill_grace_s=0.5, max_output_chars=300)
DOC = ("Velmora Quessit met Zoë Tal in Brevik; O'Brien-Hale paid 12 marks. " * 40) + "end"

READ_CELLS = [
    "print(doc[0:100])",
    "print(doc[:50])",
    "print(doc[-40:])",
    "print(doc[100:])",
    "print(doc[5:5])",
    "print(doc[50:10])",
    "print(doc[-0:3])",
    "print(doc[:])",  # over the output cap: truncation note
    "print(doc[0:299])",
    "print(doc[0:300])",  # exactly the cap with the newline
    "print(doc[0:301])",
    "print(doc[999999:])",
    "doc[0:60]",  # displayed with repr
    "doc[:400]",
    "print(len(doc))",
    "len(doc)",
    "print ( doc [ 3 : 9 ] )",
    "\t\nprint(doc[1:20])",
    "# read\nprint(doc[0:80])",
    "# a\n  # b\n\nprint(doc[7:30])  # trailing\n\n# after\n",
    "doc[2:12]\n\n",
]

WORKER_CELLS = [
    "x = 1\nprint(doc[0:5])",
    "print(doc[01:5])",  # leading zero: a SyntaxError in Python
    "  print(doc[0:5])",  # indented: IndentationError
    "print(doc[0:5]);",
    "print(doc[0:5:2])",
    "print(doc[0:5], doc[1:2])",
    "print(doc[1_0:20])",
    "print(doc[- 1:])",
    "doc[3]",
    "print(doc)",
    "#\x00\nprint(doc[0:5])",
    "# a\rprint(doc[0:5])",
    "# é\nprint(doc[0:5])",
    "print(doc[0:5]) # \ud800",
    "print(doc[١:٢])",
    "print(doc[0:5])\nx",
    "\n" * 1200 + "print(doc[0:5])",
]


def _fields(result) -> tuple:
    return (
        result.output,
        result.error,
        result.output_chars,
        result.truncated,
        result.timed_out,
        result.touched_document,
        result.llm_calls,
        result.worker_restarted,
    )


def test_read_only_cells_match_a_fresh_worker() -> None:
    async def main() -> None:
        for code in READ_CELLS:
            fast = run_read_only(DOC, code, CONFIG)
            assert fast is not None, code
            async with await SandboxSession.start(DOC, config=CONFIG) as session:
                slow = await session.run(code)
            assert slow.error is None, (code, slow.error)
            assert _fields(fast) == _fields(slow), code

    asyncio.run(main())


def test_read_only_path_refuses_everything_else() -> None:
    for code in WORKER_CELLS:
        assert run_read_only(DOC, code, CONFIG) is None, repr(code)


def test_large_reads_stay_in_the_worker() -> None:
    big = "x" * 100_000
    assert run_read_only(big, "print(doc[0:70000])", CONFIG) is None
    assert run_read_only(big, "doc[:]", CONFIG) is None
    assert run_read_only(big, "print(doc[0:60000])", CONFIG) is not None


def test_refused_invalid_cells_fail_in_a_worker_too() -> None:
    # The fast path never answers a cell Python itself would reject.
    invalid = ["print(doc[01:5])", "  print(doc[0:5])", "#\x00\nprint(doc[0:5])", "print(doc[١:٢])"]

    async def main() -> list:
        async with await SandboxSession.start(DOC, config=CONFIG) as session:
            return [await session.run(code) for code in invalid]

    for code, result in zip(invalid, asyncio.run(main()), strict=True):
        assert result.error is not None and "Error" in result.error, code


# -- print(llm("literal", doc)) without a worker -----------------------------------------------

LLM_CELLS = [
    'print(llm("Summarise.", doc))',
    '# delegate\nprint(llm("Who paid? Quote \\"marks\\".\\n", doc))',
    'print ( llm ( "caf\\u00e9 \\t tab" , doc [ 10 : 200 ] ) )',
    'print(llm("long", doc[:]))',  # answer over the output cap: truncation note
    'print(llm("refuse me", doc[0:50]))',
    'print(llm("fail", doc[-30:]))',
    '\n# a\n\nprint(llm("refuse me", doc))  # error on line 4\n',
    'print(llm("surrogate", doc[0:5]))',
    'print(llm("é", doc[5:5]))',
]
NOT_LLM_CELLS = [
    "print(llm('single quotes', doc))",
    'print(llm("a" "b", doc))',
    'print(llm("\\x41", doc))',  # an escape JSON reads differently
    'print(llm("\\ud83d\\ude00", doc))',  # surrogate escapes
    'print(llm("\\udc00 low", doc))',  # a lone low surrogate would reach the callback
    'print(llm("\\uDFFF", doc[0:5]))',
    'print(llm("\\/", doc))',
    'x = llm("p", doc)',
    'print(llm("p", doc), 1)',
    'print(llm("p", text))',
    'print(llm("p", doc[0:5:1]))',
    'print(llm("tab\there", doc))',  # a raw control character
]


async def _scripted_llm(prompt: str, text: str) -> str:
    if prompt.startswith("refuse"):
        raise LLMRefused(f"refused: {len(text)} chars")
    if prompt == "fail":
        raise RuntimeError("secret detail")
    if prompt == "surrogate":
        return "bad \ud800 text"
    if prompt == "long":
        return "w" * 1000
    return f"{prompt!r} on {text[:20]!r} ({len(text)})"


def test_llm_only_cells_match_a_fresh_worker() -> None:
    async def main() -> None:
        for code in LLM_CELLS:
            fast = await run_llm_only(DOC, code, CONFIG, _scripted_llm)
            assert fast is not None, code
            async with await SandboxSession.start(DOC, config=CONFIG, llm=_scripted_llm) as box:
                slow = await box.run(code)
            assert _fields(fast) == _fields(slow), code

    asyncio.run(main())


def test_llm_only_path_refuses_everything_else() -> None:
    async def main() -> None:
        for code in NOT_LLM_CELLS + READ_CELLS + WORKER_CELLS:
            assert await run_llm_only(DOC, code, CONFIG, _scripted_llm) is None, repr(code)
        # No callback, or a request the worker would refuse before sending: a worker answers.
        assert await run_llm_only(DOC, LLM_CELLS[0], CONFIG, None) is None
        small = SandboxConfig(max_llm_request_chars=100)
        assert await run_llm_only(DOC, LLM_CELLS[0], small, _scripted_llm) is None

    asyncio.run(main())


PATTERNS = [
    r"\bVelmora\b",
    r"\bvelmora\b",
    r"\bTal",
    r"\bO\'Brien\-Hale\b",
    r"\bZoë\b",
    r"\bmarks\b",
    r"\ba\b",
    r"\b\-Hale\b",
    r"\bBrevik\ \b",
    r"\b12\b",
    r"\bTa\b",
    r"\bQuessit\ met\b",
    r"\bVelmora\b\s+\w+",  # not a plain literal: left as it is
    r"\bab+",
    r"\b\d+\b",
]


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("flags", ["", "i", "x", "ims"])
def test_bounded_literal_regexes_match_exactly_as_written(pattern: str, flags: str) -> None:
    value = 0
    for letter in flags:
        value |= {"i": re.I, "m": re.M, "s": re.S, "x": re.X}[letter]
    plain = re.compile(pattern, value)
    text = DOC + " velmora VELMORA xVelmora Velmora_ Velmora1 Zoëx Tal."
    assert text_helpers.re_finditer(pattern, text, flags) == [
        (m.start(), m.end(), m.group(0), m.groups()) for m in plain.finditer(text)
    ]
    assert text_helpers.re_findall(pattern, text, flags) == plain.findall(text)
    assert text_helpers.re_count(pattern, text, flags) == len(plain.findall(text))
    assert text_helpers.re_sub(pattern, "<\\g<0>>", text, 0, flags) == plain.sub("<\\g<0>>", text)
    assert text_helpers.re_split(pattern, text, 0, flags) == plain.split(text)
    assert text_helpers.re_search(pattern, text, flags) == (
        None if (m := plain.search(text)) is None else (m.start(), m.end(), m.group(0), m.groups())
    )


def test_only_plain_literals_are_rewritten() -> None:
    assert text_helpers.scannable(r"\bVelmora\b") == r"Velmora(?<=\bVelmora)\b"
    for pattern in (r"\bab+", r"\b\d+\b", r"\ba.b\b", r"\b(a)\b", r"\ba|b\b", r"x\bab\b"):
        assert text_helpers.scannable(pattern) == pattern


def test_large_unicode_document_round_trip() -> None:
    big = ("Ångström naïve café — " * 45_000)[:900_001]

    async def main() -> list:
        async with await SandboxSession.start(big, config=CONFIG) as session:
            return [
                await session.run("len(doc)"),
                await session.run("doc[-30:]"),
                await session.run("re_count(r'\\bcafé\\b', doc)"),
            ]

    length, tail, count = asyncio.run(main())
    assert length.output == f"{len(big)}\n"
    assert tail.output == repr(big[-30:]) + "\n"
    expected = len(re.findall(r"\bcafé\b", big))
    assert count.output == f"{expected}\n"


def test_fork_server_reaps_workers_and_counts_their_cpu(child_processes) -> None:
    async def main() -> None:
        async with await SandboxSession.start(DOC, config=CONFIG) as session:
            result = await session.run("n = 0\nfor i in range(300000):\n    n += i\nprint(n)")
            assert result.error is None

    asyncio.run(main())  # starts the fork server if needed
    before = fork_server_cpu_seconds()
    asyncio.run(main())
    after = fork_server_cpu_seconds()
    assert after - before > 0.01  # the worker's loop, counted once the worker is reaped
    for server in session_module.SERVERS.values():
        assert child_processes(server.proc.pid, zombies=True) == []
