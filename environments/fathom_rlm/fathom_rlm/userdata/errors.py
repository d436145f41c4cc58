"""The errors of loading user rows: one line each, naming the row and the field."""

from __future__ import annotations


class UserRowError(ValueError):
    """A user row that cannot be served; the message is one line naming the row and field."""


class RowFieldError(ValueError):
    """What is wrong with one field of a row (the loader adds where the row is)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem
