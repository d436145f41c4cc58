"""Scripted fathom-rlm policies: the honest reference ladder, code-only rungs and the attacks.

* `planner`: the reference planner (root and sub-agents), at depth 2, 1 and 0;
* `reader`: the slice reader that answers its sub-calls from the text it was handed alone;
* `code_only`: grep-only and the code-only adversary (regexes, never `llm`);
* `attacks`: the reward audit's attacks; `gold`: the gold-in-hand lookup only attacks use.

Every policy works from the messages of one request alone (see `protocol`).
"""

from __future__ import annotations

from collections.abc import Callable

from envtools.policies.base import Policy
from envtools.policies.fathom import attacks, code_only, planner
from envtools.policies.fathom.adversary import CodeOnly
from envtools.policies.fathom.attacks import (
    _LEAK_PROBES,
    Blind,
    Candidates,
    ClosedBook,
    CopyQuestion,
    DepthPadding,
    FamilyPrior,
    FormatOnly,
    FrequentEntity,
    Overlong,
    Padding,
    PhantomEvidence,
    RecursionSpam,
    SandboxLeak,
    TwoAnswers,
    VerboseRepl,
)
from envtools.policies.fathom.code_only import GrepOnly
from envtools.policies.fathom.gold import (
    TASKS,
    TaskIndex,
    UnknownTaskError,
    document_length_guesses,
    register_tasks,
)
from envtools.policies.fathom.planner import (
    FathomReference,
    ReferenceDepth0,
    ReferenceDepth1,
    ReferenceDepth2,
)

POLICIES: dict[str, Callable[[], Policy]] = {
    FathomReference.name: FathomReference,
    ReferenceDepth2.name: ReferenceDepth2,
    ReferenceDepth1.name: ReferenceDepth1,
    ReferenceDepth0.name: ReferenceDepth0,
    GrepOnly.name: GrepOnly,
    CodeOnly.name: CodeOnly,
    CopyQuestion.name: CopyQuestion,
    Candidates.name: Candidates,
    Padding.name: Padding,
    Overlong.name: Overlong,
    TwoAnswers.name: TwoAnswers,
    FormatOnly.name: FormatOnly,
    ClosedBook.name: ClosedBook,
    FrequentEntity.name: FrequentEntity,
    VerboseRepl.name: VerboseRepl,
    RecursionSpam.name: RecursionSpam,
    DepthPadding.name: DepthPadding,
    SandboxLeak.name: SandboxLeak,
    PhantomEvidence.name: PhantomEvidence,
    FamilyPrior.name: FamilyPrior,
    Blind.name: Blind,
}
"""Every fathom policy by name: the reference, the weaker honest rungs, then the attacks."""


__all__ = [
    "POLICIES",
    "TASKS",
    "_LEAK_PROBES",
    "FathomReference",
    "GrepOnly",
    "ReferenceDepth0",
    "ReferenceDepth1",
    "ReferenceDepth2",
    "TaskIndex",
    "UnknownTaskError",
    "attacks",
    "code_only",
    "document_length_guesses",
    "planner",
    "register_tasks",
]
