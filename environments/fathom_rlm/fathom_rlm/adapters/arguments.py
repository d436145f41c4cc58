"""The environment's arguments, shared by every adapter: which rows to serve and the rollout caps.

`FathomArguments` is the one list of them. Its caps are `RolloutCaps`' own fields (inherited,
with their defaults and `help` metadata), so a new cap becomes an argument without being written
again; legacy `-a '{...}'` kwargs, the v1 taskset config and the OpenEnv server's flags (both
derived from these fields) and the TRL factory all take these names.

With a `source` (a JSONL file of the user's own rows, `fathom_rlm.userdata`) the rows are that
file's instead of a generated split. The file is read when the arguments are made, in every
process that makes them (an env-server worker, the OpenEnv server, a harness), so a bad row
fails at config time and the process-local document store holds the rows' texts wherever
rollouts run.
"""

from __future__ import annotations

import os
import threading
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from fathom_rlm.agent import RolloutCaps
from fathom_rlm.documents import FAMILIES, SPLIT_SIZES
from fathom_rlm.documents.splits import Split
from fathom_rlm.documents.tasks.record import TaskRecord
from fathom_rlm.documents.world import CHAPTER_TOKENS
from fathom_rlm.userdata import FORMATS, UserRowError, load_rows

MIN_DOC_TOKENS = 2 * CHAPTER_TOKENS
"""The shortest document the generator builds (two chapters)."""

FamilyName = Literal[tuple(FAMILIES)]  # type: ignore[valid-type]  # the core's family names
"""A task family, as a key of `family_mix`."""

SourceFormat = Literal[tuple(FORMATS)]  # type: ignore[valid-type]  # the userdata row formats
"""A row schema of a `source` file (`fathom_rlm.userdata.formats`)."""

SPLIT_ARGUMENTS = ("split", "doc_tokens", "family_mix")
"""The arguments that shape a generated split, so they do not apply to a `source`'s rows."""


@dataclass(frozen=True)
class FathomArguments(RolloutCaps):
    """Everything `vf-eval -a` (legacy), `--env.taskset.*` (v1) or the TRL factory can set."""

    sandbox: None = field(
        default=None,
        init=False,
        repr=False,
        metadata={
            "help": "Not an argument: the sandbox keeps its defaults (`RolloutCaps.sandbox`)."
        },
    )
    source: str | None = field(
        default=None,
        metadata={
            "help": (
                "A JSONL file of your own rows (document, question, answers; the fathom-rlm "
                "README, 'Your own documents') served instead of a generated split; None: the "
                "generated split. split, doc_tokens and family_mix do not apply to it."
            )
        },
    )
    source_format: SourceFormat = field(
        default="native",
        metadata={
            "help": (
                "The row schema of `source`: native, oolong, longbench, needle, ruler or "
                "needle-tool (fathom_rlm.userdata.formats)."
            )
        },
    )
    split: Split = field(
        default="eval",
        metadata={
            "help": '"train", "eval" or "heldout" (the held-out split is built only when named).'
        },
    )
    num_examples: int | None = field(
        default=None,
        metadata={
            "help": (
                "Rows served from the split (with a source, its first rows); None serves them all."
            )
        },
    )
    doc_tokens: int = field(
        default=200_000,
        metadata={
            "help": (
                "Document length in tokens (characters / 4); lower it for a curriculum or a "
                "quick run."
            )
        },
    )
    family_mix: dict[FamilyName, float] | None = field(
        default=None,
        metadata={
            "help": "Relative weights of the task families; None uses the split's default mix."
        },
    )
    sub_max_completion_tokens: int | None = field(
        default=None,
        metadata={
            "help": (
                "Completion-token cap sent with every sub-call; None leaves the run's sampling as "
                "it is."
            )
        },
    )

    def __post_init__(self) -> None:
        # Checked here, not when the split is built: a launcher's config check and prime-rl's
        # config parse build no documents, and a typo should fail there, before any GPU work.
        if self.split not in SPLIT_SIZES:
            raise ValueError(
                f"fathom-rlm argument split must be one of {sorted(SPLIT_SIZES)}, "
                f"got {self.split!r}"
            )
        if isinstance(self.doc_tokens, bool) or not isinstance(self.doc_tokens, int):
            raise ValueError(
                f"fathom-rlm argument doc_tokens must be an int, got {self.doc_tokens!r}"
            )
        if self.doc_tokens < MIN_DOC_TOKENS:
            raise ValueError(
                f"fathom-rlm argument doc_tokens must be >= {MIN_DOC_TOKENS}, got {self.doc_tokens}"
            )
        for name in ("num_examples", "sub_max_completion_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ValueError(f"fathom-rlm argument {name} must be None or >= 1, got {value!r}")
        unknown = sorted(set(self.family_mix or ()) - set(FAMILIES))
        if unknown:
            raise ValueError(
                f"fathom-rlm argument family_mix names unknown task families {unknown}; "
                f"the families are {sorted(FAMILIES)}"
            )
        super().__post_init__()  # the caps' own checks: fail at load time, not in a rollout
        self._check_source()

    def _check_source(self) -> None:
        """A source's rows load now (a bad row is the loader's one-line error), and the split's
        own arguments are refused with it rather than silently ignored."""
        if self.source_format not in FORMATS:
            raise ValueError(
                f"fathom-rlm argument source_format must be one of {list(FORMATS)}, "
                f"got {self.source_format!r}"
            )
        if self.source is None:
            if self.source_format != "native":
                raise ValueError("fathom-rlm argument source_format applies only with a source")
            return
        if isinstance(self.source, os.PathLike):
            object.__setattr__(self, "source", os.fspath(self.source))
        if not isinstance(self.source, str) or not self.source:
            raise ValueError(f"fathom-rlm argument source must be a file path, got {self.source!r}")
        defaults = {f.name: f.default for f in fields(self)}
        for name in SPLIT_ARGUMENTS:
            if getattr(self, name) != defaults[name]:
                raise ValueError(
                    f"fathom-rlm argument {name} does not apply with a source (its rows bring "
                    f"their own documents); leave it unset, got {getattr(self, name)!r}"
                )
        # Absolute, so a worker process started elsewhere reads the same file.
        object.__setattr__(self, "source", os.path.abspath(self.source))
        source_rows(self.source, self.source_format, self.num_examples)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The argument names, in order (every field but the sandbox)."""
        return tuple(f.name for f in fields(cls) if f.init)

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any]) -> FathomArguments:
        """Build from loose kwargs, naming every unknown argument in the error."""
        known = set(cls.names())
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(
                f"fathom-rlm got unknown arguments {unknown}; it accepts {sorted(known)}"
            )
        return cls(**kwargs)

    def caps(self) -> RolloutCaps:
        return RolloutCaps(**{name: getattr(self, name) for name in CAP_FIELDS})

    def as_dict(self) -> dict[str, Any]:
        return {name: value for name, value in asdict(self).items() if name != "sandbox"}


_SOURCES: dict[tuple[str, str, int | None], tuple[tuple[int, int], list[TaskRecord]]] = {}
_SOURCES_LOCK = threading.Lock()


def source_rows(path: str, format: str = "native", limit: int | None = None) -> list[TaskRecord]:
    """The first `limit` records of a source file (all when None; the rest is not read), read
    once per process while the file is unchanged (the arguments are made again for every
    rollout); a `UserRowError` names the bad row."""
    try:
        stat = os.stat(path)
        signature = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        signature = (-1, -1)  # the loader names the problem
    with _SOURCES_LOCK:
        cached = _SOURCES.get((path, format, limit))
        if cached is None or cached[0] != signature:
            try:
                records = load_rows(path, format=format, limit=limit)
            except UserRowError as exc:
                raise UserRowError(f"fathom-rlm argument source: {exc}") from None
            cached = _SOURCES[(path, format, limit)] = (signature, records)
    return list(cached[1])


CAP_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RolloutCaps) if f.name != "sandbox")
"""The caps of `RolloutCaps` that are environment arguments (the sandbox config is not)."""
