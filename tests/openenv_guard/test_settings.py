"""Where the guard's tokens come from, and what counts as loopback (the rules that decide
whether auth is on)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fathom_rlm._vendor.openenv_guard.settings import client_name, is_loopback, read_tokens

A, B = "token-a-0123456789abcdef", "token-b-0123456789abcdef"


@pytest.fixture(autouse=True)
def no_token_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENENV_TOKEN", raising=False)
    monkeypatch.delenv("OPENENV_TOKEN_FILE", raising=False)


def test_tokens_come_from_the_variable_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert read_tokens(None) == ()
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# clients\n{B}\n\n{A}\n")
    monkeypatch.setenv("OPENENV_TOKEN", A)
    assert read_tokens(str(tokens)) == (A, B)  # each token once
    monkeypatch.setenv("OPENENV_TOKEN_FILE", str(tokens))
    assert read_tokens(None) == (A, B)


def test_a_default_token_file_may_be_absent_only_when_the_variable_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENENV_TOKEN_FILE", str(tmp_path / "absent"))
    with pytest.raises(SystemExit):
        read_tokens(None)
    monkeypatch.setenv("OPENENV_TOKEN", A)
    assert read_tokens(None) == (A,)
    with pytest.raises(SystemExit):  # a file named on the command line must exist
        read_tokens(str(tmp_path / "absent"))


def test_loopback_and_client_names() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "10.0.0.1", "::", "example.org"))
    assert client_name(A) != client_name(B) and A not in client_name(A)
