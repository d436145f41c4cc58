"""Answer a pure read of `doc` without a worker, while a REPL has no state yet.

Starting a worker costs a fork, its confinement, the document copy and its exit: about 10 ms of
CPU on a small VM, far more than the cell. Many agents (sub-calls especially) begin by printing a
window of their text. Before any cell has run, the REPL's namespace is exactly the fresh one, so
`doc` is the text and `print`/`len` are the builtins, and a cell of one of these exact shapes has
no effect but its output:

    print(doc[a:b])   doc[a:b]   print(len(doc))   len(doc)

(`a`, `b` optional integer literals; blank and comment lines around it). The cell is matched
as text against a strict pattern; no model code is parsed, compiled or run here: the answer is a
string slice with two ints. Anything else, or any cell once the REPL has state, goes to a
worker. The result is the one a fresh worker would give (output cap and truncation note
included; tests compare the two).
"""

from __future__ import annotations

import json
import re
import time

from . import protocol
from .config import LLMCallback, ReplResult, SandboxConfig, call_llm
from .restricted import OutputBuffer


def _slice(tag: str) -> str:
    """`doc[a:b]` with optional bounds captured as `a<tag>` and `b<tag>`."""

    # ASCII digits only and no leading zeros, as in Python source; spaces and tabs between tokens.
    # The trailing blanks belong to the optional number: two adjacent blank runs around an
    # empty group would split one run every possible way on a failed match (quadratic).
    def bound(name: str) -> str:
        return rf"[ \t]*(?:(?P<{name}{tag}>-?(?:0|[1-9][0-9]{{0,8}}))[ \t]*)?"

    return rf"doc[ \t]*\[{bound('a')}:{bound('b')}\]"


def _expr(tag: str) -> str:
    length = rf"(?P<len{tag}>len[ \t]*\([ \t]*doc[ \t]*\))"
    return rf"(?:{_slice(tag)}|{length})"


# Blank or comment lines around the one statement; comments are printable ASCII only, so no
# character (NUL, CR, a lone surrogate) can make Python read the cell differently.
_GAP = r"(?:[ \t]*(?:#[ -~\t]*)?\n)*"
CELL = re.compile(
    rf"{_GAP}(?:(?P<print>print[ \t]*\([ \t]*{_expr('p')}[ \t]*\))|{_expr('e')})"
    rf"[ \t]*(?:#[ -~\t]*)?(?:\n{_GAP}[ \t]*(?:#[ -~\t]*)?)?",
    re.ASCII,
)
_MAX_CELL_CHARS = 1_000
_MAX_SLICE_CHARS = 65_536  # bigger reads go to a worker, so this path stays cheap


def run_read_only(document: str, code: str, config: SandboxConfig) -> ReplResult | None:
    """The result of `code` in a fresh REPL over `document`, or None if it needs a worker."""
    started = time.perf_counter()
    if len(code) > _MAX_CELL_CHARS:
        return None
    match = CELL.fullmatch(code)
    if match is None:
        return None
    tag = "p" if match.group("print") is not None else "e"
    if match.group(f"len{tag}") is not None:
        text = str(len(document))
    else:
        bounds = slice(_int(match.group(f"a{tag}")), _int(match.group(f"b{tag}")))
        start, stop, _ = bounds.indices(len(document))
        if stop - start > _MAX_SLICE_CHARS:
            return None
        piece = document[start:stop]
        text = piece if tag == "p" else repr(piece)
    buffer = OutputBuffer(config.max_output_chars)
    buffer.write(text + "\n")
    output, chars, truncated = buffer.render()
    return ReplResult(
        output=output,
        error=None,
        wall_s=time.perf_counter() - started,
        output_chars=chars,
        truncated=truncated,
        timed_out=False,
        touched_document=True,
        llm_calls=0,
    )


# A double-quoted literal whose escapes mean the same in Python and JSON (so json.loads reads it
# exactly as Python would); no control characters, no surrogates, no surrogate escapes (high
# D800-DBFF or low DC00-DFFF: either alone is not text, and a worker would replace it).
_LITERAL = r'"(?:[^"\\\x00-\x1f\ud800-\udfff]|\\[\\"nrtbf]|\\u(?![dD][89a-fA-F])[0-9a-fA-F]{4})*"'
_LLM_CELL = re.compile(
    rf"(?P<gap>{_GAP})print[ \t]*\([ \t]*llm[ \t]*\([ \t]*(?P<prompt>{_LITERAL})[ \t]*,[ \t]*"
    rf"(?:{_slice('l')}|(?P<whole>doc))"
    rf"[ \t]*\)[ \t]*\)[ \t]*(?:#[ -~\t]*)?(?:\n{_GAP}[ \t]*(?:#[ -~\t]*)?)?"
)


async def run_llm_only(
    document: str, code: str, config: SandboxConfig, llm: LLMCallback | None
) -> ReplResult | None:
    """The result of `print(llm("literal", doc))` (or of a slice of `doc`) in a fresh REPL.

    Such a cell has no effect but one llm() request and its printed answer, so a REPL with no
    state yet can serve it without a worker: the request goes to the same callback, and the
    result (output, LLMError text and line) is the one a fresh worker would give. None for any
    other cell, or when a worker would refuse the request before sending it.
    """
    started = time.perf_counter()
    if llm is None or len(code) > _MAX_CELL_CHARS or config.max_llm_calls_per_session == 0:
        return None
    match = _LLM_CELL.fullmatch(code)
    if match is None or config.max_llm_calls_per_run < 1:
        return None
    prompt = json.loads(match.group("prompt"))
    if match.group("whole") is not None:
        text = document
    else:
        bounds = slice(_int(match.group("al")), _int(match.group("bl")))
        text = document[bounds]
    if len(prompt) + len(text) > config.max_llm_request_chars:
        return None
    reply = await call_llm(llm, prompt, text, config)
    waited = time.perf_counter() - started
    buffer = OutputBuffer(config.max_output_chars)
    error = None
    if reply.get("ok"):
        buffer.write(reply["text"] + "\n")
    else:
        line = match.group("gap").count("\n") + 1
        error = f"LLMError: {reply.get('error') or 'llm() failed'}"
        if len(error) > 2000:
            error = error[:2000] + " [...]"
        error += f" (line {line})"
    output, chars, truncated = buffer.render()
    return ReplResult(
        output=protocol.valid_text(output),
        error=None if error is None else protocol.valid_text(error),
        wall_s=time.perf_counter() - started,
        output_chars=chars,
        truncated=truncated,
        timed_out=False,
        touched_document=True,
        llm_calls=1,
        llm_wait_s=waited,
    )


def _int(text: str | None) -> int | None:
    return None if text is None else int(text)
