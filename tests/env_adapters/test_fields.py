"""`fields_model`: a pydantic model with the named fields of a dataclass, their types, defaults
and `help` metadata (what the verifiers v1 configs inherit)."""

from __future__ import annotations

import dataclasses

import pydantic
import pytest
from fathom_rlm._vendor.env_adapters.fields import fields_model


@dataclasses.dataclass(frozen=True)
class Arguments:
    required: str = dataclasses.field(metadata={})
    turns: int = dataclasses.field(default=8, metadata={"help": "root turns"})
    mix: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"a": 1.0}, metadata={"help": "family weights"}
    )
    name: str = dataclasses.field(default="x", metadata={"help": "not given to the model"})


def test_the_named_fields_keep_type_default_and_help() -> None:
    model = fields_model(Arguments, ["turns", "mix"])
    assert model.__name__ == "ArgumentsFields"
    assert model.__doc__ == "Fields of `Arguments`: turns, mix."
    assert list(model.model_fields) == ["turns", "mix"]
    assert model.model_fields["turns"].description == "root turns"
    assert model.model_fields["mix"].description == "family weights"
    made = model()
    assert (made.turns, made.mix) == (8, {"a": 1.0})
    assert model().mix is not made.mix  # a default factory, not one shared value
    assert model(turns=3).turns == 3
    with pytest.raises(pydantic.ValidationError):
        model(turns="many")


def test_a_field_without_default_is_required() -> None:
    model = fields_model(Arguments, ["required"])
    assert model.model_fields["required"].description is None
    with pytest.raises(pydantic.ValidationError):
        model()
    assert model(required="yes").required == "yes"
