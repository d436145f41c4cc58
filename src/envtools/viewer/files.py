"""Saved rollouts read from files: JSONL (a rollout a line), JSON (one or a list), or a folder
(an `fathom_lab.evaluate` output or a `vf-eval -s` run)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envtools.viewer.rollouts import read, sniff

FOLDER_FILES = ("transcripts.jsonl", "results.jsonl", "traces.jsonl")
"""What a folder is read for: an `fathom_lab.evaluate` output, a legacy `vf-eval -s` run, a
verifiers v1 run."""


def _lines(path: Path) -> list[tuple[str, Any]]:
    """(where, decoded value) of every rollout in a file; ValueError names what is wrong."""
    data = path.read_bytes()
    if path.suffix == ".json":
        value = _decoded(data.decode("utf-8-sig"), f"{path}")
        items = value if isinstance(value, list) else [value]
        return [(f"{path} item {i + 1}", item) for i, item in enumerate(items)]
    out = []
    # Lines end at "\n" only: JSON text may hold U+2028 and the like, which str.splitlines cuts.
    for number, raw in enumerate(data.split(b"\n"), 1):
        where = f"{path} line {number}"
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
        if line.strip():
            out.append((where, _decoded(line, where)))
    return out


def _decoded(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deep") from None
    except ValueError as exc:
        raise ValueError(f"{where}: not JSON ({exc})") from None


def _saved_model(path: Path) -> str | None:
    """The model a `vf-eval -s` run names in the metadata.json beside its results.jsonl."""
    metadata = path.parent / "metadata.json"
    if path.name != "results.jsonl" or not metadata.is_file():
        return None
    try:
        model = json.loads(metadata.read_text()).get("model")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return model if isinstance(model, str) else None


def load(paths: Sequence[Path], *, source: str | None = None, env: str | None = None) -> list:
    """The view rollouts of every file, in order; ValueError names the file and line at fault."""
    rollouts = []
    for path in paths:
        if path.is_dir():
            inside = [path / name for name in FOLDER_FILES if (path / name).is_file()]
            if not inside:
                raise ValueError(f"{path}: a folder holding none of {', '.join(FOLDER_FILES)}")
            path = inside[0]
        try:
            entries = _lines(path)
        except OSError as exc:
            raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        except ValueError as exc:  # a whole JSON file that is not UTF-8
            raise ValueError(str(exc) if str(path) in str(exc) else f"{path}: {exc}") from None
        model = _saved_model(path)
        for where, entry in entries:
            if not isinstance(entry, dict):
                raise ValueError(f"{where}: a rollout is a JSON object, not {type(entry).__name__}")
            try:
                named = {"model": model, **entry} if model else entry
                rollouts.append(read(named, source or sniff(entry), env))
            except (
                ValueError,
                KeyError,
                TypeError,
                AttributeError,
                IndexError,
                RecursionError,
            ) as exc:
                raise ValueError(f"{where}: {type(exc).__name__}: {exc}"[:400]) from None
    return rollouts
