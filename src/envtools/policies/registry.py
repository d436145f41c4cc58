"""Policies by name: the union of every policy module's `POLICIES` table."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from envtools.policies.base import Policy

PolicyFactory = Callable[[], Policy]

# Each module exposes `POLICIES: dict[str, PolicyFactory]`. A module that is not there (yet) is
# left out; one that is there but fails to import is a bug and is raised.
POLICY_MODULES = ("envtools.policies.gsm8k", "envtools.policies.fathom")


class UnknownPolicyError(KeyError):
    """No policy of that name is registered."""


def available_policies() -> dict[str, PolicyFactory]:
    """Every registered policy factory, by name."""
    table: dict[str, PolicyFactory] = {}
    for module_name in POLICY_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:
                continue
            raise
        for name, factory in module.POLICIES.items():
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
