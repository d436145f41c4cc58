"""Pydantic fields derived from a dataclass's own: each field's type, default and `help` metadata.

The dataclass stays the one declaration of an environment's arguments; `fields_model` gives the
named ones to a verifiers config or task-data class, which inherits them
(`class Config(fields_model(Arguments, names), vf.TasksetConfig)`), so `--help` shows the same
text the dataclass carries. This module imports pydantic (the package itself does not).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Iterable
from typing import Any, get_type_hints

from pydantic import BaseModel, Field


def fields_model(source: type, names: Iterable[str]) -> type[BaseModel]:
    """A pydantic model with the fields `names` of dataclass `source`."""
    names = tuple(names)
    hints = get_type_hints(source)
    declared = {f.name: f for f in dataclasses.fields(source)}
    namespace: dict[str, Any] = {"__annotations__": {}, "__module__": source.__module__}
    for name in names:
        spec = declared[name]
        namespace["__annotations__"][name] = hints[name]
        namespace[name] = Field(description=spec.metadata.get("help"), **_default(spec))
    namespace["__doc__"] = f"Fields of `{source.__name__}`: {', '.join(names)}."
    return types.new_class(
        f"{source.__name__}Fields", (BaseModel,), exec_body=lambda ns: ns.update(namespace)
    )


def _default(spec: dataclasses.Field[Any]) -> dict[str, Any]:
    if spec.default_factory is not dataclasses.MISSING:
        return {"default_factory": spec.default_factory}
    return {} if spec.default is dataclasses.MISSING else {"default": spec.default}
