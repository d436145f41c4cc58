"""Language layer: compile a cell of model code with RestrictedPython, and describe its errors.

The policy is RestrictedPython's, plus two rules that keep the sandbox's timeout unswallowable
(a bare ``except:`` catches ``Exception`` only; no jump out of a ``finally`` block) and
augmented assignment to items and attributes routed through the guards of ``restricted.py``.

Like restricted.py, this runs inside the isolated worker and imports only the standard library
and RestrictedPython.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from RestrictedPython import compile_restricted_eval, compile_restricted_exec
from RestrictedPython.transformer import IOPERATOR_TO_STR, RestrictingNodeTransformer

from .restricted import BLOCKED_ATTRIBUTES, SandboxTimeout

FILENAME = "<repl>"

# Names a model may reach for that do not exist here; the error says so plainly.
UNAVAILABLE_NAMES = frozenset(
    {
        "open",
        "eval",
        "exec",
        "compile",
        "globals",
        "locals",
        "vars",
        "dir",
        "getattr",
        "setattr",
        "delattr",
        "type",
        "input",
        "help",
        "breakpoint",
        "memoryview",
        "bytearray",
        "object",
        "super",
        "re",
        "os",
        "sys",
        "json",
        "string",
        "subprocess",
        "socket",
        "ctypes",
        "importlib",
        "builtins",
    }
)


def _finally_exits(statements: list[ast.stmt]) -> ast.stmt | None:
    """A `return`, `break` or `continue` that would leave these `finally` statements, if any.

    Such a jump discards the exception in flight, so a loop around it would swallow the
    sandbox's timeout for ever. Jumps inside a nested function or class do not leave the block,
    nor do `break`/`continue` of a loop nested in it.
    """
    pending: list[tuple[ast.AST, bool]] = [(stmt, False) for stmt in statements]
    while pending:
        node, in_loop = pending.pop()
        if isinstance(node, ast.Return) or (
            isinstance(node, (ast.Break, ast.Continue)) and not in_loop
        ):
            return node  # type: ignore[return-value]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        is_loop = isinstance(node, (ast.For, ast.AsyncFor, ast.While))
        for child in ast.iter_child_nodes(node):
            # A loop's `else` runs after the loop: a jump there leaves the enclosing block.
            in_body = is_loop and not any(child is other for other in node.orelse)  # type: ignore[attr-defined]
            pending.append((child, in_loop or in_body))
    return None


class _Policy(RestrictingNodeTransformer):
    """RestrictedPython's checks, plus augmented assignment to items and attributes.

    The sandbox's timeout must not be swallowable, or a loop around a handler spins until the
    parent kills the worker and the REPL state is lost: a bare `except:` catches `Exception`
    only (the timeout is not one), and a jump out of a `finally` block is refused.
    """

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> Any:
        if node.type is None:
            node.type = ast.copy_location(ast.Name("Exception", ast.Load()), node)
        return super().visit_ExceptHandler(node)

    def _check_finally(self, node: ast.Try | ast.TryStar) -> None:
        jump = _finally_exits(node.finalbody)
        if jump is not None:
            word = type(jump).__name__.lower()
            self.error(jump, f'"{word}" inside a finally block is not allowed in the sandbox')

    def visit_Try(self, node: ast.Try) -> Any:
        self._check_finally(node)
        return super().visit_Try(node)

    def visit_TryStar(self, node: ast.TryStar) -> Any:
        self._check_finally(node)
        return super().visit_TryStar(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        target = node.target
        op = ast.Constant(IOPERATOR_TO_STR[type(node.op)])
        if isinstance(target, ast.Subscript) and not isinstance(target.slice, ast.Slice):
            args = [self.visit(target.value), self.visit(target.slice), op, self.visit(node.value)]
            helper = "_aug_item_"
        elif isinstance(target, ast.Attribute):
            if target.attr.startswith("_") or target.attr in BLOCKED_ATTRIBUTES:
                self.error(node, f'"{target.attr}" is not an attribute the sandbox may change')
                return node
            attr = ast.Constant(target.attr)
            args = [self.visit(target.value), attr, op, self.visit(node.value)]
            helper = "_aug_attr_"
        else:
            return super().visit_AugAssign(node)
        call = ast.Call(func=ast.Name(helper, ast.Load()), args=args, keywords=[])
        new_node = ast.Expr(value=call)
        ast.copy_location(new_node, node)
        return ast.fix_missing_locations(new_node)


@dataclass
class Compiled:
    body: Any  # code object for every statement but a trailing expression
    tail: Any | None  # code object (eval mode) of a trailing expression, shown like a notebook
    touches_document: bool


class RejectedCode(Exception):
    """The code does not parse or uses something the language layer forbids."""


def _mentions_doc(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "doc" for n in ast.walk(tree))


def compile_cell(source: str) -> Compiled:
    """Parse once, split off a trailing expression, restricted-compile both parts."""
    try:
        tree = ast.parse(source, FILENAME, "exec")
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        raise RejectedCode(f"SyntaxError: {exc.msg}{where}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise RejectedCode(f"SyntaxError: {type(exc).__name__}: {exc}") from None
    touches = _mentions_doc(tree)
    tail_expr = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
        tail_expr = ast.Expression(body=last.value)  # type: ignore[attr-defined]
        ast.copy_location(tail_expr, last)
    errors: list[str] = []
    try:
        body = compile_restricted_exec(tree, FILENAME, policy=_Policy)
        errors.extend(body.errors)
        tail = None
        if tail_expr is not None:
            tail = compile_restricted_eval(tail_expr, FILENAME, policy=_Policy)
            errors.extend(tail.errors)
    except (RecursionError, MemoryError, ValueError, TypeError) as exc:
        raise RejectedCode(f"{type(exc).__name__}: {exc}") from None
    if errors:
        raise RejectedCode("code rejected by the sandbox: " + "; ".join(errors))
    return Compiled(body.code, None if tail is None else tail.code, touches)


def describe_exception(exc: BaseException) -> str:
    """Model-facing error text: type, message, and the line in the cell when known.

    The exception may be the model's own object (a subclass with odd attributes), so every
    piece is checked and a failure to describe it falls back to the type name.
    """
    if isinstance(exc, SandboxTimeout):
        return str(exc) or "TimeoutError: the call ran out of time"
    name = str(type(exc).__name__)
    try:
        return _describe(exc, name)
    except SandboxTimeout:
        raise
    except BaseException:
        return name


def _describe(exc: BaseException, name: str) -> str:
    try:
        message = str(exc)
    except SandboxTimeout:
        raise
    except Exception:  # an unprintable message; the type name alone is enough
        message = ""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    text = f"{name}: {message}" if message else name
    if len(text) > 2000:
        text = text[:2000] + " [...]"
    if line is not None:
        text += f" (line {line})"
    if isinstance(exc, NameError):
        missing = getattr(exc, "name", None)
        if type(missing) is str and missing in UNAVAILABLE_NAMES:
            text += (
                f"; {missing!r} is not available in this sandbox: work on `doc` with str "
                "methods and the re_*/to_json/llm helpers"
            )
    return text
