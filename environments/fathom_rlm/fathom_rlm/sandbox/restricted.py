"""Language layer: the safe globals that restricted model code runs against (compiled in
``cells.py``).

Everything the sandboxed code can reach is built here. The rule: inject plain functions and
plain data, never modules or objects whose attributes lead to modules (an injected ``re``
module leaks ``os`` through ``re.enum.sys.modules``). Regex and JSON are offered as wrapper
functions that return str, int, tuple, list, dict or None only (helpers.py).

This module runs inside the isolated worker; it imports only the standard library and
RestrictedPython so the warm parent can load it once and fork.
"""

from __future__ import annotations

import _string
import builtins
import operator
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from .helpers import TEXT_HELPERS, safe_filter, safe_map

# Attributes that reach frames, code, interpreter internals or class hierarchies. Names
# starting with "_" are refused separately (RestrictedPython rejects them at compile time;
# the guard refuses them again for getattr-like paths such as str.format fields).
BLOCKED_ATTRIBUTES = frozenset(INSPECT_ATTRIBUTES) | {
    "gi_frame",
    "gi_code",
    "gi_yieldfrom",
    "cr_frame",
    "cr_code",
    "cr_await",
    "cr_origin",
    "ag_frame",
    "ag_code",
    "ag_await",
    "tb_frame",
    "tb_next",
    "f_back",
    "f_globals",
    "f_locals",
    "f_builtins",
    "f_code",
    "mro",
}


class SandboxTimeout(BaseException):  # shown to the model as "TimeoutError"
    """Raised inside running code when its wall-clock budget is spent."""


class LLMError(Exception):
    """An llm() call from inside the sandbox failed (no callback, or the callback raised)."""


# ---------------------------------------------------------------------------------------------
# Output collection
# ---------------------------------------------------------------------------------------------


@dataclass
class OutputBuffer:
    """Collects everything printed during one call, keeping only the first `limit` chars."""

    limit: int
    parts: list[str] = field(default_factory=list)
    kept: int = 0
    total: int = 0

    def write(self, text: str) -> None:
        self.total += len(text)
        room = self.limit + 1 - self.kept  # one extra char tells "exactly full" from "over"
        if room > 0:
            piece = text[:room]
            self.parts.append(piece)
            self.kept += len(piece)

    def reset(self, limit: int) -> None:
        self.limit = limit
        self.parts.clear()
        self.kept = 0
        self.total = 0

    def render(self) -> tuple[str, int, bool]:
        """Return (text, chars before truncation, truncated)."""
        text = "".join(self.parts)
        if self.total <= self.limit:
            return text, self.total, False
        shown = text[: self.limit]
        note = (
            f"\n[output truncated: {self.total} chars produced, first {self.limit} shown; "
            "print a smaller slice or a summary]"
        )
        return shown + note, self.total, True


class _PrintTarget:
    """What RestrictedPython's `_print_` factory returns: all prints go to one buffer.

    RestrictedPython's own PrintCollector keeps a collector per function scope, so a print
    inside a user function would be lost; here every scope writes to the call's buffer.
    """

    __slots__ = ("_buffer",)

    def __init__(self, buffer: OutputBuffer) -> None:
        self._buffer = buffer

    def __call__(self) -> str:  # the `printed` name
        return "".join(self._buffer.parts)

    def _call_print(self, *objects: object, sep: Any = " ", end: Any = "\n", **kw: Any) -> None:
        if kw.get("file") is not None:
            raise TypeError("print(file=...) is not supported in the sandbox")
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        if not isinstance(sep, str) or not isinstance(end, str):
            raise TypeError("print() sep and end must be str")
        self._buffer.write(sep.join(str(o) for o in objects) + end)


# ---------------------------------------------------------------------------------------------
# Guards
# ---------------------------------------------------------------------------------------------


class SandboxClass(type):
    """Metaclass of every class defined by sandboxed code; marks objects it may mutate."""


def guarded_getattr(obj: Any, name: str) -> Any:
    """The `_getattr_` guard: refuses private names, frame/code walks and str.format."""
    if type(name) is not str:
        raise TypeError("attribute name must be str")
    if name.startswith("_"):
        raise AttributeError(f'"{name}" is not allowed: names starting with "_" are private')
    if name in BLOCKED_ATTRIBUTES:
        raise AttributeError(f'"{name}" is not allowed in the sandbox')
    if name in ("format", "format_map"):
        if isinstance(obj, str):
            return _bound_format(obj, name)
        if isinstance(obj, type) and issubclass(obj, str):
            return _unbound_format(name)
    return getattr(obj, name)


def _guarded_write(obj: Any) -> Any:
    """The `_write_` guard: attribute/item writes only on containers and sandbox classes."""
    if type(obj) in (dict, list, set) or isinstance(obj, (dict, list)):
        return obj
    if isinstance(obj, SandboxClass) or isinstance(type(obj), SandboxClass):
        return obj
    raise TypeError(f"cannot modify objects of type {type(obj).__name__} in the sandbox")


def _guarded_getitem(obj: Any, key: Any) -> Any:
    return obj[key]


def _apply(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)


_INPLACE_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
    "@=": operator.imatmul,
}


def _inplacevar(op: str, x: Any, y: Any) -> Any:
    fn = _INPLACE_OPS.get(op)
    if fn is None:
        raise SyntaxError(f"unsupported augmented assignment {op}")
    return fn(x, y)


def _aug_item(obj: Any, key: Any, op: str, value: Any) -> None:
    """`obj[key] op= value` (RestrictedPython refuses it; counting words needs it)."""
    target = _guarded_write(obj)
    target[key] = _inplacevar(op, obj[key], value)


def _aug_attr(obj: Any, name: str, op: str, value: Any) -> None:
    """`obj.name op= value`, with the same checks as a read and a write of the attribute."""
    current = guarded_getattr(obj, name)
    setattr(_guarded_write(obj), name, _inplacevar(op, current, value))


class _SafeFormatter(string.Formatter):
    """str.format with field lookups routed through the attribute guard.

    '{0.__class__}'.format(x) performs attribute access in C, out of RestrictedPython's
    sight; resolving each field part ourselves keeps the guard in the loop.
    """

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        first, rest = _split_field(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            obj = guarded_getattr(obj, key) if is_attr else obj[key]
        return obj, first


def _split_field(field_name: str) -> tuple[Any, Iterable[tuple[bool, Any]]]:
    # The same C helper string.Formatter uses; the module is never visible to sandboxed code.
    return _string.formatter_field_name_split(field_name)


_FORMATTER = _SafeFormatter()


def _bound_format(template: str, name: str) -> Callable[..., str]:
    if name == "format":

        def format(*args: Any, **kwargs: Any) -> str:
            return _FORMATTER.vformat(template, args, kwargs)

        return format

    def format_map(mapping: Any) -> str:
        return _FORMATTER.vformat(template, (), mapping)

    return format_map


def _unbound_format(name: str) -> Callable[..., str]:
    def unbound(template: str, *args: Any, **kwargs: Any) -> str:
        if not isinstance(template, str):
            raise TypeError("str.format needs a str")
        return _bound_format(template, name)(*args, **kwargs)

    return unbound


_PLAIN_NAMES = [
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "callable",
    "chr",
    "dict",
    "divmod",
    "enumerate",
    "float",
    "frozenset",
    "hash",
    "hex",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "max",
    "min",
    "next",
    "oct",
    "ord",
    "pow",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "Exception",
    "IndexError",
    "KeyError",
    "LookupError",
    "NameError",
    "NotImplementedError",
    "OverflowError",
    "RecursionError",
    "RuntimeError",
    "StopIteration",
    "TypeError",
    "UnicodeError",
    "ValueError",
    "ZeroDivisionError",
    "MemoryError",
]
_PLAIN_BUILTINS: dict[str, Any] = {name: getattr(builtins, name) for name in _PLAIN_NAMES}


def _no_batch(requests: Any) -> list[str]:
    raise LLMError("llm_batch() is not available here")


def make_builtins(
    llm: Callable[[Any, Any], str], llm_batch: Callable[[Any], list[str]] = _no_batch
) -> dict[str, Any]:
    """The `__builtins__` mapping of the sandbox: safe builtins plus the text helpers."""
    b = dict(_PLAIN_BUILTINS)
    b.update(
        {
            "None": None,
            "True": True,
            "False": False,
            "map": safe_map,
            "filter": safe_filter,
            # The builtin class, not SandboxTimeout: `except TimeoutError` in a loop would
            # otherwise swallow the call's timeout for ever. The timeout still reads
            # "TimeoutError: ..." in the error text.
            "TimeoutError": builtins.TimeoutError,
            "LLMError": LLMError,
            "__build_class__": builtins.__build_class__,  # needed for `class` statements
            **TEXT_HELPERS,
            "llm": llm,
            "llm_batch": llm_batch,
        }
    )
    return b


def make_globals(
    document: str,
    buffer: OutputBuffer,
    llm: Callable[[Any, Any], str],
    llm_batch: Callable[[Any], list[str]] = _no_batch,
) -> dict:
    """Fresh REPL globals holding the document as `doc`."""
    printer = _PrintTarget(buffer)
    return {
        "__builtins__": make_builtins(llm, llm_batch),
        "__name__": "repl",
        "__metaclass__": SandboxClass,
        "_getattr_": guarded_getattr,
        "_getitem_": _guarded_getitem,
        "_getiter_": iter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_write_": _guarded_write,
        "_print_": lambda _getattr=None: printer,
        "_print": printer,  # a trailing print(...) is compiled in eval mode, without the setup
        "_inplacevar_": _inplacevar,
        "_apply_": _apply,
        "_aug_item_": _aug_item,
        "_aug_attr_": _aug_attr,
        "doc": document,
    }
