"""What ordinary model code needs from the sandbox, and the session's life cycle."""

from __future__ import annotations

import asyncio
import gc
import os

import pytest
from fathom_rlm.sandbox import (
    LLMRefused,
    ReplResult,
    SandboxConfig,
    SandboxError,
    SandboxSession,
    isolation_report,
)
from fathom_rlm.sandbox import session as session_module

CONFIG = SandboxConfig(call_timeout_s=1.0, kill_grace_s=0.5)
DOC = (
    "Chapter 1. Velmora Quessit met Oradin Tal in Brevik. "
    "Chapter 2. Oradin Tal moved to Saltmere; the ledger ID is QX-4471. "
    "Chapter 3. Velmora Quessit sold the lantern to Ysolde. "
) * 200


def _span(word: str) -> str:
    start = DOC.find(word)
    return f"({start}, {start + len(word)}, {word!r})\n"


async def _session(**kwargs) -> SandboxSession:
    return await SandboxSession.start(DOC, config=kwargs.pop("config", CONFIG), **kwargs)


async def _run_all(codes: list[str], **kwargs) -> list[ReplResult]:
    async with await _session(**kwargs) as session:
        return [await session.run(code) for code in codes]


def run_all(codes: list[str], **kwargs) -> list[ReplResult]:
    return asyncio.run(_run_all(codes, **kwargs))


def outputs(codes: list[str]) -> list[str]:
    results = run_all(codes)
    for code, result in zip(codes, results, strict=True):
        assert result.error is None, f"{code!r}: {result.error}"
    return [r.output for r in results]


# -- ordinary code --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("doc[0:10]", "'Chapter 1.'\n"),
        ("len(doc)", f"{len(DOC)}\n"),
        ("n = 0\nfor ch in doc[:50]:\n    n += 1\nprint(n)", "50\n"),
        ("[w.upper() for w in doc.split()[:3]]", "['CHAPTER', '1.', 'VELMORA']\n"),
        ("{w: len(w) for w in ['ab', 'c']}", "{'ab': 2, 'c': 1}\n"),
        ("sum(x * x for x in range(4))", "14\n"),
        ("re_search(r'ID is (\\S+)\\.', doc)[3][0]", "'QX-4471'\n"),
        ("len(re_findall(r'Velmora', doc))", "400\n"),
        ("re_count(r'Chapter \\d', doc)", "600\n"),
        ("re_finditer(r'Tal', doc[:200])[0][:3]", _span("Tal")),
        ("re_sub(r'(\\w+) Tal', r'Tal, \\1', 'Oradin Tal')", "'Tal, Oradin'\n"),
        ("re_split(r';\\s*', 'a; b;c')", "['a', 'b', 'c']\n"),
        ("re_search('velmora', doc, 'i')[:3]", _span("Velmora")),
        ("re_escape('a.b')", "'a\\\\.b'\n"),
        ("doc.find('Saltmere')", f"{DOC.find('Saltmere')}\n"),
        ("doc[:9].lower().replace('chapter', 'ch').strip()", "'ch 1'\n"),
        (
            "x = 7\nf'{x} items, {len(doc) // 1000}k chars'",
            f"'7 items, {len(DOC) // 1000}k chars'\n",
        ),
        ("a, (b, c) = 1, (2, 3)\nprint(a + b + c)", "6\n"),
        ("for i, (p, q) in enumerate([(1, 2)]):\n    print(i, p, q)", "0 1 2\n"),
        ("sorted(zip([3, 1, 2], 'cab'))", "[(1, 'a'), (2, 'b'), (3, 'c')]\n"),
        ("list(reversed(range(3)))", "[2, 1, 0]\n"),
        ("max(['aa', 'b'], key=len), min(3, 1), abs(-2), round(2.567, 1)", "('aa', 1, 2, 2.6)\n"),
        ("any([0, 1]), all([]), bool(''), isinstance(doc, str)", "(True, True, False, True)\n"),
        (
            "int('7') + float('0.5'), str(3), list('ab'), tuple([1]), set([1, 1])",
            "(7.5, '3', ['a', 'b'], (1,), {1})\n",
        ),
        ("map(str.upper, ['a']), filter(None, [0, 2])", "(['A'], [2])\n"),
        (
            "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    print('caught', e)",
            "caught division by zero\n",
        ),
        (
            "class Box:\n    def __init__(self, v):\n        self.v = v\n    def grow(self):\n"
            "        self.v += 1\n        return self.v\nBox(1).grow()",
            "2\n",
        ),
        (
            "counts = {}\nfor w in 'a b a'.split():\n    counts[w] = counts.get(w, 0)\n"
            "    counts[w] += 1\ncounts",
            "{'a': 2, 'b': 1}\n",
        ),
        ("counter('abca')", "{'a': 2, 'b': 1, 'c': 1}\n"),
        ("most_common('abca', 1)", "[('a', 2)]\n"),
        ("to_json({'k': [1, 'é']})", '\'{"k": [1, "é"]}\'\n'),
        ("from_json('{\"a\": [1, 2]}')['a']", "[1, 2]\n"),
        ("'{} and {name}'.format(1, name='x')", "'1 and x'\n"),
        ("'%s-%d' % ('a', 3)", "'a-3'\n"),
        ("print('a', 'b', sep='-', end='!')\n", "a-b!"),
        ("x = None\nx", ""),
        ("def g():\n    yield 1\n    yield 2\nlist(g())", "[1, 2]\n"),
        ("lines = doc.split('. ')\nlen(lines) > 10", "True\n"),
        ("len(doc[:4].encode('utf-16')), doc[:2].encode('latin-1')", "(10, b'Ch')\n"),
        ("'{:,}'.format(1234567), '{:>6.2f}'.format(3.14159)", "('1,234,567', '  3.14')\n"),
        ("sorted(['b', 'A', 'c'], key=str.lower)", "['A', 'b', 'c']\n"),
        ("to_json([1, {'a': None}], indent=1)", "'[\\n 1,\\n {\\n  \"a\": null\\n }\\n]'\n"),
    ],
)
def test_ordinary_code(code: str, expected: str) -> None:
    assert outputs([code]) == [expected]


def test_state_persists_between_calls() -> None:
    out = outputs(
        [
            "def hits(word):\n    return len(re_findall(word, doc))",
            "seen = hits('Ysolde')",
            "total = 0\ntotal += seen",
            "class Acc:\n    pass\nacc = Acc()\nacc.n = total",
            "acc.n, hits('Brevik')",
        ]
    )
    assert out[-1] == "(200, 200)\n"


def test_unicode_document_round_trip() -> None:
    doc = "naïve café – 北京 🙂 " * 10

    async def scenario():
        async with await SandboxSession.start(doc, config=CONFIG) as session:
            return await session.run("len(doc), doc[:13]")

    assert asyncio.run(scenario()).output == f"({len(doc)}, {doc[:13]!r})\n"


# -- results and errors ---------------------------------------------------------------------


def test_syntax_error_message() -> None:
    (result,) = run_all(["x = (1,\nprint(x)"])
    assert result.error and result.error.startswith("SyntaxError") and "line" in result.error


def test_forbidden_name_message() -> None:
    (result,) = run_all(["__import__('os')"])
    assert result.error and '"__import__"' in result.error and "_" in result.error


def test_runtime_error_names_type_and_line() -> None:
    (result,) = run_all(["a = 1\nb = {}\nb['missing']"])
    assert result.error == "KeyError: 'missing' (line 3)"


def test_unavailable_name_gets_a_hint() -> None:
    (result,) = run_all(["open('x')"])
    assert "not available in this sandbox" in (result.error or "")


def test_output_before_an_error_is_kept() -> None:
    (result,) = run_all(["print('partial')\n1 / 0"])
    assert result.output == "partial\n" and "ZeroDivisionError" in (result.error or "")


def test_output_truncated_with_note() -> None:
    config = SandboxConfig(max_output_chars=100)

    async def scenario():
        async with await SandboxSession.start(DOC, config=config) as session:
            return await session.run("print(doc[:5000])")

    result = asyncio.run(scenario())
    assert result.truncated and result.output_chars == 5001
    assert result.output.startswith(DOC[:100]) and "[output truncated: 5001 chars" in result.output


def test_touched_document_flag() -> None:
    results = run_all(["x = 1", "len(doc)", "def f():\n    return doc[:5]", "f()"])
    assert [r.touched_document for r in results] == [False, True, True, False]


def test_result_fields() -> None:
    (result,) = run_all(["print('hi')"])
    assert result == ReplResult(
        output="hi\n",
        error=None,
        wall_s=result.wall_s,
        output_chars=3,
        truncated=False,
        timed_out=False,
        touched_document=False,
        llm_calls=0,
        llm_wait_s=0.0,
        worker_restarted=False,
    )
    assert 0 < result.wall_s < 5


# -- timeouts and restarts ------------------------------------------------------------------


def test_infinite_loop_times_out_and_state_is_kept() -> None:
    results = run_all(["kept = 1", "while True:\n    kept = 2", "kept"])
    assert results[1].timed_out and "TimeoutError" in (results[1].error or "")
    assert results[1].wall_s < CONFIG.call_timeout_s + CONFIG.kill_grace_s + 2
    assert results[2].output == "2\n" and not results[2].worker_restarted


def test_uninterruptible_call_kills_worker_and_next_call_restarts() -> None:
    results = run_all(["kept = 1", "sum(range(10 ** 12))", "kept", "len(doc)"])
    assert results[1].timed_out and "restarted" in (results[1].error or "")
    assert results[1].wall_s < CONFIG.call_timeout_s + CONFIG.kill_grace_s + 2
    assert results[2].worker_restarted and results[2].output.startswith("[sandbox restarted")
    assert "NameError" in (results[2].error or "")
    assert results[3].output == f"{len(DOC)}\n" and not results[3].worker_restarted


def test_read_variable_after_restart_says_state_is_lost() -> None:
    async def scenario():
        async with await _session() as session:
            await session.run("v = 'x'")
            await session.run("sum(range(10 ** 12))")
            with pytest.raises(SandboxError, match="restarted"):
                await session.read_variable("v")

    asyncio.run(scenario())


def test_cancelled_call_stops_worker() -> None:
    async def scenario():
        async with await _session() as session:
            pid = session.pid
            task = asyncio.create_task(session.run("while True:\n    pass"))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(0.2)
            assert not os.path.exists(f"/proc/{pid}") or _is_zombie(pid)
            again = await session.run("1 + 1")
            assert again.worker_restarted and again.output.endswith("2\n")

    asyncio.run(scenario())


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone, also when reaped between open and read
        return True


def test_close_is_idempotent_and_final() -> None:
    async def scenario():
        session = await _session()
        pid, workdir = session.pid, session._handle.workdir
        await session.close()
        await session.close()
        assert not os.path.exists(f"/proc/{pid}") or _is_zombie(pid)
        assert not os.path.exists(workdir)
        with pytest.raises(SandboxError):
            await session.run("1")

    asyncio.run(scenario())


def test_garbage_collected_session_kills_worker() -> None:
    async def scenario():
        session = await _session()
        pid, workdir = session.pid, session._handle.workdir
        del session
        gc.collect()
        return pid, workdir

    pid, workdir = asyncio.run(scenario())
    for _ in range(100):
        if not os.path.exists(f"/proc/{pid}") or _is_zombie(pid):
            break
        asyncio.run(asyncio.sleep(0.02))
    assert not os.path.exists(f"/proc/{pid}") or _is_zombie(pid)
    assert not os.path.exists(workdir)


def test_exception_inside_async_with_closes() -> None:
    async def scenario():
        with pytest.raises(RuntimeError):
            async with await _session() as session:
                pid = session.pid
                raise RuntimeError("boom")
        return pid

    pid = asyncio.run(scenario())
    assert not os.path.exists(f"/proc/{pid}") or _is_zombie(pid)


# -- llm() from inside the sandbox ----------------------------------------------------------


def test_llm_rpc_returns_callback_text() -> None:
    seen: list[tuple[str, str]] = []

    async def llm(prompt: str, text: str) -> str:
        seen.append((prompt, text))
        return f"answer:{len(text)}"

    results = run_all(
        [
            "r = llm('who moved?', doc[:100])\nr",
            "parts = [llm('count', doc[i:i + 10]) for i in range(0, 30, 10)]\nparts",
        ],
        llm=llm,
    )
    assert results[0].output == "'answer:100'\n" and results[0].llm_calls == 1
    assert results[1].llm_calls == 3 and results[1].output.count("answer:10") == 3
    assert seen[0] == ("who moved?", DOC[:100])


def test_llm_callback_error_is_catchable() -> None:
    async def llm(prompt: str, text: str) -> str:
        raise LLMRefused("budget exhausted")

    (result,) = run_all(
        ["try:\n    llm('q', 't')\nexcept LLMError as e:\n    print('failed:', e)"], llm=llm
    )
    assert result.error is None and "budget exhausted" in result.output


def test_llm_wait_is_not_charged_to_the_call_clock() -> None:
    async def slow_llm(prompt: str, text: str) -> str:
        await asyncio.sleep(1.2)
        return "late"

    config = SandboxConfig(call_timeout_s=0.5, kill_grace_s=0.3)
    (result,) = run_all(["llm('q', 't')"], llm=slow_llm, config=config)
    assert result.error is None and result.output == "'late'\n"
    assert result.llm_wait_s >= 1.2 and result.wall_s >= result.llm_wait_s


def test_llm_timeout_option() -> None:
    async def slow_llm(prompt: str, text: str) -> str:
        await asyncio.sleep(5)
        return "never"

    config = SandboxConfig(call_timeout_s=1.0, llm_timeout_s=0.2)
    (result,) = run_all(["llm('q', 't')"], llm=slow_llm, config=config)
    assert "LLMError" in (result.error or "") and "0.2" in (result.error or "")


def test_parent_stays_responsive_during_llm_wait() -> None:
    async def scenario():
        release = asyncio.Event()

        async def llm(prompt: str, text: str) -> str:
            await release.wait()
            return "done"

        async with await _session(llm=llm) as waiting, await _session() as other:
            pending = asyncio.create_task(waiting.run("llm('q', 't')"))
            await asyncio.sleep(0.05)
            quick = await other.run("len(doc)")
            release.set()
            return quick, await pending

    quick, slow = asyncio.run(scenario())
    assert quick.output == f"{len(DOC)}\n" and slow.output == "'done'\n"


# -- read_variable --------------------------------------------------------------------------


def test_read_variable() -> None:
    async def scenario():
        async with await _session() as session:
            await session.run("part = doc[10:60]\nnum = 3")
            assert await session.read_variable("part") == DOC[10:60]
            assert await session.read_variable("doc") == DOC
            with pytest.raises(SandboxError, match="no REPL variable"):
                await session.read_variable("missing")
            with pytest.raises(SandboxError, match="not text"):
                await session.read_variable("num")
            with pytest.raises(SandboxError, match="not a variable name"):
                await session.read_variable("_getattr_")

    asyncio.run(scenario())


# -- isolation and concurrency --------------------------------------------------------------


def test_isolation_report_and_session_mode() -> None:
    report = isolation_report()
    assert report["network"] in ("netns", "seccomp", "none")
    for key in ("netns", "seccomp", "landlock_abi", "uid_switch", "rlimits"):
        assert key in report

    async def scenario():
        async with await _session() as session:
            return session.isolation, session.worker_info

    mode, info = asyncio.run(scenario())
    assert mode == report["network"]
    if report["uid_switch"]:
        assert info["uid_switched"] and info["uid"] != 0


def test_network_mode_none_reports_none() -> None:
    config = SandboxConfig(network="none")
    assert isolation_report(config)["network"] == "none"


def test_many_sessions_in_parallel() -> None:
    async def one(i: int) -> str:
        async with await SandboxSession.start(f"doc number {i} " * 100, config=CONFIG) as s:
            await s.run("words = doc.split()")
            return (await s.run("words[2]")).output

    async def scenario():
        return await asyncio.gather(*(one(i) for i in range(24)))

    assert asyncio.run(scenario()) == [f"'{i}'\n" for i in range(24)]


def test_start_rejects_non_text_document() -> None:
    with pytest.raises(TypeError):
        asyncio.run(SandboxSession.start(b"bytes"))  # type: ignore[arg-type]


def test_no_workdirs_left_in_this_module_so_far() -> None:
    assert not session_module.WORKDIRS
