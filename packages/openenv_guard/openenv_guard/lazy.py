"""Names a package exports, imported from their modules on first use (PEP 562).

openenv-core's server module takes seconds to import; a package that re-exported it eagerly made
every import of the package, and every server's `--help`, pay for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, where: Mapping[str, str]) -> tuple[Callable[[str], Any], list[str]]:
    """The module `__getattr__` and `__all__` of `package`, whose names live in the modules
    `where` gives (relative to the package): `__getattr__, __all__ = lazy_exports(...)`."""
    namespace = import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value  # later look-ups skip this function
        return value

    return __getattr__, sorted(where)
