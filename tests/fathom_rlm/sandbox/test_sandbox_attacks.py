"""Escape and resource attacks through the normal `run()` path, one test per attack.

Every attack runs while a second session computes next to it; afterwards the bystander's
state and answer, the parent's environment and a world-readable "gold" file are checked.
"""

from __future__ import annotations

import asyncio
import glob
import os

import pytest
from fathom_rlm.sandbox import SandboxConfig, SandboxSession

CONFIG = SandboxConfig(call_timeout_s=1.0, kill_grace_s=0.5)
DOC = "The archivist Velmora moved to Quessit in the third year. " * 2000
FAKE_KEY = "sk-fake-test-key-5f0c"
GOLD = "GOLD-ANSWER-CANARY-93"
# Text that must never show up in what the model sees.
LEAK_MARKERS = ("root:x:0:0", FAKE_KEY, GOLD, "<module", "environ(", "/root", "site-packages")

# (id, code, expectation). Expectation: a substring the error must contain, or one of
# "timeout" (timed_out), "truncated" (output cut with a note); "a|b" accepts either.
ATTACKS: list[tuple[str, str, str]] = [
    # reading files
    ("open_etc_passwd", "open('/etc/passwd').read()", "NameError"),
    ("open_gold_file", "open({gold!r}).read()", "NameError"),
    ("open_own_source", "open('fathom_rlm/sandbox/session.py').read()", "NameError"),
    ("io_open", "io.open('/etc/passwd')", "NameError"),
    ("file_via_dunder_file", "__file__", "rejected"),
    # environment variables
    ("os_environ", "import os\nos.environ['OPENAI_API_KEY']", "ImportError"),
    ("dunder_import_environ", "__import__('os').environ", "rejected"),
    ("builtins_dict_import", "__builtins__['__import__']('os')", "rejected"),
    # importing
    ("import_sys", "import sys\nsys.modules", "ImportError"),
    ("import_subprocess", "import subprocess\nsubprocess.run(['id'])", "ImportError"),
    ("import_socket", "import socket", "ImportError"),
    ("import_ctypes", "import ctypes", "ImportError"),
    ("import_importlib", "import importlib\nimportlib.import_module('os')", "ImportError"),
    ("from_os_import", "from os import system\nsystem('id')", "ImportError"),
    ("import_re_module", "import re\nre.enum.sys.modules['os']", "ImportError"),
    ("import_string_formatter", "import string\nstring.Formatter().format('{0.__class__}', 1)", ""),
    ("builtins_name", "builtins.open", "reserved"),
    # attribute walks
    ("subclasses_walk", "().__class__.__bases__[0].__subclasses__()", "rejected"),
    ("mro_walk", "''.__class__.__mro__[1].__subclasses__()", "rejected"),
    ("function_globals", "f = lambda: 0\nf.__globals__", "rejected"),
    ("helper_globals", "re_search.__globals__['re']", "rejected"),
    ("llm_closure", "llm.__closure__", "rejected"),
    ("print_self", "print.__self__", "rejected"),
    ("to_json_globals", "to_json.__globals__['json']", "rejected"),
    ("gi_frame", "g = (x for x in [1])\ng.gi_frame.f_back.f_globals", "rejected"),
    ("gi_code", "g = (x for x in [1])\ng.gi_code", "restricted name"),
    ("generator_function_frame", "def gen():\n    yield 1\ngen().gi_frame", "rejected"),
    (
        "traceback_frames",
        "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame.f_back",
        "rejected",
    ),
    ("code_object", "(lambda: 0).__code__", "rejected"),
    ("class_mro_method", "class A:\n    pass\nA.mro()", "not allowed"),
    ("metaclass_keyword", "class A(metaclass=list):\n    pass", "rejected"),
    (
        "dunder_method_definition",
        "class A:\n    def __getattr__(self, n):\n        pass",
        "rejected",
    ),
    ("getattr_builtin", "getattr(doc, '__class__')", "NameError"),
    ("vars_builtin", "vars(doc)", "NameError"),
    ("globals_builtin", "globals()['doc']", "NameError"),
    ("type_builtin", "type.__subclasses__(type)", "rejected"),
    ("object_builtin", "object.__subclasses__()", "rejected"),
    # str.format attribute access (done in C, out of RestrictedPython's sight)
    ("format_class", "'{0.__class__.__mro__}'.format(1)", "private"),
    ("format_globals", "'{0.__globals__}'.format(re_search)", "private"),
    ("format_unbound", "str.format('{0.__class__}', 1)", "private"),
    ("format_map_frame", "'{a.gi_frame}'.format_map({'a': (i for i in [1])})", "not allowed"),
    ("format_nested_spec", "'{0:{1.__class__}}'.format(1, 2)", "private"),
    ("fstring_dunder", "f'{doc.__class__}'", "rejected"),
    # reaching modules through the injected helpers
    ("regex_result_is_plain", "re_search('a', 'a').re", "AttributeError"),
    ("regex_finditer_plain", "re_finditer('a', 'a')[0].re", "AttributeError"),
    ("regex_callable_repl", "re_sub('a', lambda m: m.re, 'a')", "TypeError"),
    ("regex_bad_flags", "re_search('a', 'a', flags='L')", "ValueError"),
    ("llm_non_text", "llm(re_search, doc)", "TypeError"),
    ("llm_without_model", "llm('summarise', doc[:100])", "LLMError"),
    ("print_file_object", "print('x', file=doc)", "TypeError"),
    ("print_collector_name", "_print_", "rejected"),
    ("metaclass_name", "__metaclass__", "rejected"),
    ("write_to_helper", "re_search.x = 1", "TypeError"),
    ("write_to_str", "doc.upper = 1", "TypeError"),
    ("json_cycle", "x = []\nx.append(x)\nto_json(x)", "ValueError"),
    ("json_deep_nesting", "from_json('[' * 100000 + ']' * 100000)", "RecursionError"),
    # dynamic code
    ("exec_builtin", "exec('import os')", "rejected"),
    ("eval_builtin", "eval('1')", "rejected"),
    ("compile_builtin", "compile('1', 'x', 'eval')", "NameError"),
    # network, processes, signals
    ("network_socket", "socket.create_connection(('1.1.1.1', 80))", "NameError"),
    ("fork", "os.fork()", "NameError"),
    ("system_call", "os.system('id')", "NameError"),
    ("signal_parent", "os.kill(os.getppid(), 9)", "NameError"),
    ("signal_import", "__import__('signal')", "rejected"),
    # resources
    ("cpu_loop", "while True:\n    pass", "timeout"),
    (
        "cpu_loop_swallowing_timeout",
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except:\n        continue",
        "timeout",
    ),
    ("cpu_in_c", "sum(range(10**12))", "timeout"),
    ("big_power", "pow(10, 10**9)", "timeout"),
    ("catastrophic_regex", "re_search(r'(a+)+$', 'a' * 40 + 'b')", "timeout"),
    ("catastrophic_regex_on_doc", "re_findall(r'(\\w+\\s?)*$', doc + '!')", "timeout"),
    ("memory_bomb_string", "x = 'x' * (2 ** 33)", "MemoryError"),
    ("memory_bomb_range", "x = list(range(10 ** 10))", "MemoryError"),
    ("memory_growth", "x = []\nwhile True:\n    x.append(' ' * 10 ** 8)", "MemoryError|timeout"),
    ("huge_output", "print('A' * 10 ** 7)", "truncated"),
    ("output_flood", "for i in range(10 ** 6):\n    print(doc[:80])", "truncated"),
    ("huge_repr", "doc * 10", "truncated"),
    ("deep_recursion", "def r(n):\n    return r(n + 1)\nr(0)", "RecursionError"),
    ("deep_source_nesting", "x = " + "(" * 300 + "1" + ")" * 300, "SyntaxError"),
    ("huge_code", "x = 1\n" * 40000, "CodeTooLong"),
    ("null_byte_source", "x = 1\x00", "SyntaxError"),
    ("huge_int_str", "str(10 ** 100000)", "ValueError"),
    # writing files
    ("write_file_in_cwd", "open('out.txt', 'w').write('x')", "NameError"),
    ("write_file_outside", "open('/tmp/fathom-attack-out', 'w').write('x')", "NameError"),
    # crashing the worker from model code (it must answer with an error and live on)
    ("surrogate_output", "print('\\ud800' * 100)\nraise KeyError('k')", "KeyError"),
    ("surrogate_error", "raise ValueError(chr(0xdc80) + 'x')", "ValueError: \ufffdx"),
    ("exception_odd_name", "class E(NameError):\n    name = [1]\nraise E('n')", "E: n"),
    ("exception_huge_message", "raise ValueError('m' * 10 ** 7)", "ValueError: mmm"),
    ("deep_value_repr", "a = []\nfor i in range(200000):\n    a = [a]\na", "RecursionError"),
    ("llm_prompt_tens_of_mb", "llm('p', 'x' * 30_000_000)", "LLMError"),
    ("llm_loop_over_cap", "for i in range(100):\n    llm('p', 'x')", "LLMError"),
]


@pytest.fixture(scope="module")
def gold_file(tmp_path_factory):
    # World-readable like a real data file with answers; the sandbox must still not read it.
    path = tmp_path_factory.mktemp("gold") / "answers.jsonl"
    path.write_text(GOLD + "\n")
    path.chmod(0o644)
    return str(path)


@pytest.fixture(autouse=True)
def fake_api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)


async def _attack_with_bystander(code: str):
    async with (
        await SandboxSession.start(DOC, config=CONFIG) as bystander,
        await SandboxSession.start(DOC, config=CONFIG) as attacker,
    ):
        await bystander.run("total = 41")
        result, calm = await asyncio.gather(
            attacker.run(code),
            bystander.run("n = 0\nfor i in range(20000):\n    n += i\nn"),
        )
        after = await bystander.run("total + 1")
        follow_up = await attacker.run("len(doc)")
        return result, calm, after, follow_up


@pytest.mark.parametrize(("code", "expect"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_attack_is_contained(code: str, expect: str, gold_file: str) -> None:
    code = code.replace("{gold!r}", repr(gold_file))
    result, calm, after, follow_up = asyncio.run(_attack_with_bystander(code))

    # The attack got an error, a timeout or a cut output, and nothing secret came back.
    seen = result.output + (result.error or "")
    for marker in LEAK_MARKERS:
        assert marker not in seen, f"leaked {marker!r}: {seen[:300]}"
    assert any(_met(result, alternative) for alternative in expect.split("|")), (
        f"expected {expect!r}, got error={result.error!r} output={result.output[:200]!r}"
    )
    assert result.wall_s < CONFIG.call_timeout_s + CONFIG.kill_grace_s + 2.0

    # The bystander computed undisturbed and kept its state; the attacker's session still works.
    assert calm.error is None and calm.output == f"{sum(range(20000))}\n"
    assert after.output == "42\n"
    assert follow_up.output.endswith(f"{len(DOC)}\n")
    # The parent is untouched.
    assert os.environ["OPENAI_API_KEY"] == FAKE_KEY
    with open(gold_file) as f:
        assert f.read() == GOLD + "\n"
    assert not glob.glob("/tmp/fathom-attack-*")


def _met(result, expect: str) -> bool:
    if expect == "timeout":
        return result.timed_out
    if expect == "truncated":
        cut = len(result.output) < CONFIG.max_output_chars + 300
        return result.truncated and "[output truncated" in result.output and cut
    return result.error is not None and expect in result.error


def test_attack_corpus_size() -> None:
    assert len(ATTACKS) >= 50
    assert len({a[0] for a in ATTACKS}) == len(ATTACKS)
