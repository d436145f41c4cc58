"""Which verifiers API the installed release offers, read from its version string: the v1 API
from 0.3, the legacy `load_environment` in 0.2 and 0.3 only, and the errors that say what to
install or run instead."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError

import pytest
from fathom_rlm._vendor.env_adapters import (
    has_v1_api,
    releases,
    require_legacy_api,
    verifiers_release,
)


def installed(monkeypatch: pytest.MonkeyPatch, release: str | None) -> None:
    """Make the metadata report verifiers `release` (None: not installed)."""

    def version(name: str) -> str:
        if name != "verifiers" or release is None:
            raise PackageNotFoundError(name)
        return release

    monkeypatch.setattr(releases, "version", version)


@pytest.mark.parametrize(
    ("release", "parsed", "v1"),
    [
        ("0.2.0", (0, 2), False),
        ("0.3.1", (0, 3), True),
        ("0.4.0", (0, 4), True),
        ("0.10.0.dev1", (0, 10), True),
        ("1.0", (1, 0), True),
        (None, None, False),
        ("unknown", None, False),
    ],
)
def test_the_release_decides_the_v1_api(
    monkeypatch: pytest.MonkeyPatch, release: str | None, parsed: tuple[int, int] | None, v1: bool
) -> None:
    installed(monkeypatch, release)
    assert verifiers_release() == parsed
    assert has_v1_api() is v1


@pytest.mark.parametrize("release", ["0.2.0", "0.3.1"])
def test_the_legacy_api_is_there_in_0_2_and_0_3(
    monkeypatch: pytest.MonkeyPatch, release: str
) -> None:
    installed(monkeypatch, release)
    assert require_legacy_api("some-env") is None


def test_without_verifiers_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    installed(monkeypatch, None)
    with pytest.raises(ImportError) as error:
        require_legacy_api("some-env")
    assert str(error.value) == (
        "some-env's load_environment needs verifiers: pip install 'some-env[verifiers]'"
    )


def test_on_a_v1_only_release_the_error_names_the_v1_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installed(monkeypatch, "0.4.2")
    with pytest.raises(ImportError) as error:
        require_legacy_api("some-env")
    assert str(error.value) == (
        "some-env's load_environment needs the legacy verifiers API (verifiers 0.2 and 0.3); "
        "verifiers 0.4.2 has only the v1 API: run `vf-eval some-env -m <model>` (the v1 taskset) "
        "instead"
    )
