"""Scripted policies by name, gathered from every installed ladder.

An environment's lab registers its ladder under the entry-point group `envtools.ladders` (see
`labs/*/pyproject.toml`), so this toolkit serves policies it never imports by name.
A ladder may also add its own flags to the policy server and, from them, a scope entered around
every reply (the fathom reference reading any text on user rows, for example).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points

from envtools.policies.base import Policy

PolicyFactory = Callable[[], Policy]
ReplyScope = Callable[[], AbstractContextManager[None]]
ENTRY_POINT_GROUP = "envtools.ladders"


@dataclass(frozen=True)
class Ladder:
    """One environment's scripted policies, as its lab hands them to the policy server."""

    policies: Mapping[str, PolicyFactory]
    add_server_arguments: Callable[[argparse.ArgumentParser], None] | None = None
    """Adds this ladder's flags to `python -m envtools.policy_server`."""
    configure_server: (
        Callable[[argparse.ArgumentParser, argparse.Namespace], ReplyScope | None] | None
    ) = None
    """Applies those flags (a bad value is a usage error); may return a scope for every reply."""


class UnknownPolicyError(KeyError):
    """No policy of that name is registered."""


@cache
def ladders() -> tuple[Ladder, ...]:
    """Every installed ladder, in entry-point name order."""
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda point: point.name)
    return tuple(point.load() for point in found)


def available_policies() -> dict[str, PolicyFactory]:
    """Every registered policy factory, by name."""
    table: dict[str, PolicyFactory] = {}
    for ladder in ladders():
        for name, factory in ladder.policies.items():
            if name in table:
                raise ValueError(f"policy {name!r} is registered twice")
            table[name] = factory
    return table


def policy_names() -> list[str]:
    """The names of every registered policy, sorted."""
    return sorted(available_policies())


def get_policy(name: str) -> Policy:
    """A fresh instance of the policy called `name`; UnknownPolicyError if there is none."""
    table = available_policies()
    if name not in table:
        raise UnknownPolicyError(name)
    return table[name]()
