"""A server's flags derived from a config dataclass: one flag per field, with its type, default
and `help` metadata, so a new argument of the environment is a flag without being written again.

`--<prefix><field>` (underscores as dashes) sets field `<field>`; `None` sets None where the field
allows it; a field that is not a number, a string or a string literal takes JSON (a mapping,
say). Values are only converted here: the dataclass checks them when it is built.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints


def config_fields(config: type, names: Iterable[str] | None = None) -> list[dataclasses.Field[Any]]:
    """The fields of dataclass `config` that are arguments (`names`, else every init field)."""
    declared = [f for f in dataclasses.fields(config) if f.init]
    if names is None:
        return declared
    by_name = {f.name: f for f in declared}
    return [by_name[name] for name in names]


def add_config_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    config: type,
    *,
    names: Iterable[str] | None = None,
    prefix: str = "",
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """One flag per field of `config` (see the module docstring); `aliases` maps a field name to
    older flags that set it too, listed first so `--help` shows them as before."""
    hints = get_type_hints(config)
    for spec in config_fields(config, names):
        flag = "--" + (prefix + spec.name).replace("_", "-")
        extra: dict[str, Any] = {}
        if spec.default is not dataclasses.MISSING:
            extra["default"] = spec.default
        elif spec.default_factory is not dataclasses.MISSING:
            extra["default"] = spec.default_factory()
        else:
            extra["required"] = True
        parser.add_argument(
            *(aliases or {}).get(spec.name, ()),
            flag,
            dest=prefix + spec.name,
            type=_converter(hints[spec.name]),
            # argparse formats help with %: a literal one is doubled.
            help=spec.metadata.get("help", "").replace("%", "%%") or None,
            **extra,
        )


def config_values(
    args: argparse.Namespace, config: type, *, names: Iterable[str] | None = None, prefix: str = ""
) -> dict[str, Any]:
    """The parsed flags of `config`'s fields, by field name (to build `config(**values)`)."""
    return {spec.name: getattr(args, prefix + spec.name) for spec in config_fields(config, names)}


def _converter(annotation: Any) -> Callable[[str], Any]:
    """Text to a value of `annotation`; its `__name__` is what argparse names in an error."""
    members = get_args(annotation) if _is_union(annotation) else (annotation,)
    optional = type(None) in members
    kinds = [member for member in members if member is not type(None)]
    kind = kinds[0] if len(kinds) == 1 else None
    if kind in (int, float, str):
        parse: Callable[[str], Any] = kind
    elif get_origin(kind) is Literal:
        parse = str  # the dataclass names the choices when it refuses one
    else:
        parse = json.loads

    def convert(text: str) -> Any:
        return None if optional and text == "None" else parse(text)

    convert.__name__ = "JSON" if parse is json.loads else parse.__name__
    return convert


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)
