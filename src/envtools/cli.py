"""Argument handling shared by every command of the project (envtools, benchmarks/, scripts/).

A bad argument is one line on stderr that names the argument and what it accepts, with exit
status 2 (argparse's status for a usage error); so is data the command cannot find. No usage
block, no traceback.

Standard library only: scripts/ and some benchmarks run under interpreters without the workspace
installed and import this file from `src/` (see `import_cli` in those files).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NoReturn

USAGE_ERROR = 2


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with every usage error on one line: `prog: error: argument --n: ...`."""

    def error(self, message: str) -> NoReturn:
        one_line = " ".join(message.split())
        self.exit(USAGE_ERROR, f"{self.prog}: error: {one_line} (see --help)\n")

    def reject(self, name: str, accepts: str, got: object) -> NoReturn:
        """A usage error found after parsing (arguments that depend on each other, files).

        `name` is an argument (`--data`, `config`) or an environment variable (`$DATA`)."""
        where = name if name.startswith("$") else f"argument {name}"
        self.error(f"{where}: expects {accepts}, got {got!r}")

    def require_file(self, option: str, path: Path | str | None, what: str) -> Path:
        """`path` when it is an existing file; otherwise a usage error naming `option`."""
        if path is None or not Path(path).is_file():
            self.reject(option, f"an existing file ({what})", None if path is None else str(path))
        return Path(path)


def integer(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An argparse `type`: an integer in [low, high] (either bound may be open)."""
    return _bounded(int, "an integer", low, high)


def number(low: float | None = None, high: float | None = None) -> Callable[[str], float]:
    """An argparse `type`: a number in [low, high] (either bound may be open)."""
    return _bounded(float, "a number", low, high)


def names(known: Iterable[str], what: str) -> Callable[[str], list[str]]:
    """An argparse `type`: a comma-separated, non-empty list drawn from `known`."""
    known = list(known)

    def parse(text: str) -> list[str]:
        picked = [n.strip() for n in text.split(",") if n.strip()]
        unknown = [n for n in picked if n not in known]
        if not picked or unknown:
            raise argparse.ArgumentTypeError(
                f"expects comma-separated {what} from {', '.join(known)}; got {text!r}"
            )
        return picked

    parse.__name__ = what
    return parse


def _bounded(
    convert: Callable[[str], float], kind: str, low: float | None, high: float | None
) -> Callable[[str], float]:
    accepts = _describe(kind, low, high)

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expects {accepts}, got {text!r}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expects {accepts}, got {text!r}")
        return value

    parse.__name__ = kind
    return parse


def checked(parse: Callable[[str], object], accepts: str) -> Callable[[str], object]:
    """An argparse `type` from a parser that raises ValueError saying what is wrong."""

    def wrapped(text: str) -> object:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expects {accepts}: {exc}") from None

    wrapped.__name__ = accepts
    return wrapped


def url(text: str) -> str:
    """An argparse `type`: an http(s) URL."""
    if not text.startswith(("http://", "https://")) or len(text.split("://", 1)[1]) == 0:
        raise argparse.ArgumentTypeError(f"expects an http:// or https:// URL, got {text!r}")
    return text


def _describe(kind: str, low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"{kind} from {low} to {high}"
    if low is not None:
        return f"{kind} >= {low}"
    if high is not None:
        return f"{kind} <= {high}"
    return kind
