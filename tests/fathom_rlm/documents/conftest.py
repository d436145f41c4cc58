"""Shared fixtures: a few short (~16K-token) documents and their checked tasks."""

from __future__ import annotations

import pytest
from fathom_rlm.documents import FAMILIES, get_document, propose_tasks

SHORT = 16_000
SEEDS = (11, 12, 13, 14)


@pytest.fixture(scope="session")
def short_docs():
    return [get_document(seed, SHORT) for seed in SEEDS]


@pytest.fixture(scope="session")
def family_tasks(short_docs):
    """family -> list of (document, Task) over the short documents."""
    out = {f: [] for f in FAMILIES}
    for doc in short_docs:
        for family in FAMILIES:
            out[family].extend((doc, t) for t in propose_tasks(doc, family, 8, rng_seed=doc.seed))
    return out
