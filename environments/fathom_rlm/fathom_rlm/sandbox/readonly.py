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

import re
import time

from .restricted import OutputBuffer
from .session import ReplResult, SandboxConfig


def _expr(tag: str) -> str:
    # ASCII digits only and no leading zeros, as in Python source; spaces and tabs between tokens.
    # The trailing blanks belong to the optional number: two adjacent blank runs around an
    # empty group would split one run every possible way on a failed match (quadratic).
    def bound(name: str) -> str:
        return rf"[ \t]*(?:(?P<{name}{tag}>-?(?:0|[1-9][0-9]{{0,8}}))[ \t]*)?"

    length = rf"(?P<len{tag}>len[ \t]*\([ \t]*doc[ \t]*\))"
    return rf"(?:doc[ \t]*\[{bound('a')}:{bound('b')}\]|{length})"


# Blank or comment lines around the one statement; comments are printable ASCII only, so no
# character (NUL, CR, a lone surrogate) can make Python read the cell differently.
_GAP = r"(?:[ \t]*(?:#[ -~\t]*)?\n)*"
_CELL = re.compile(
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
    match = _CELL.fullmatch(code)
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


def _int(text: str | None) -> int | None:
    return None if text is None else int(text)
