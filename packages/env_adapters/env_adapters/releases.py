"""Which verifiers API the installed release offers, read from its metadata without importing it
(importing `verifiers.v1` takes seconds).

The v1 API (a `Taskset` found through the package's `__all__`) is in 0.3 and later (0.2 ships an
older, incompatible `verifiers.v1`); the legacy API (`load_environment`) is in 0.2 and 0.3 only.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

V1_API_SINCE = (0, 3)
LEGACY_API_BEFORE = (0, 4)


def verifiers_release() -> tuple[int, int] | None:
    """The installed verifiers' (major, minor); None when verifiers is not installed."""
    try:
        major, minor = version("verifiers").split(".")[:2]
        return int(major), int(minor)
    except (PackageNotFoundError, ValueError):
        return None


def has_v1_api() -> bool:
    """Whether the installed verifiers has the v1 API."""
    release = verifiers_release()
    return release is not None and release >= V1_API_SINCE


def require_legacy_api(distribution: str) -> None:
    """Raise ImportError, saying what to install or run instead, unless the installed verifiers
    has the legacy API that `<distribution>`'s `load_environment` needs."""
    release = verifiers_release()
    if release is None:
        raise ImportError(
            f"{distribution}'s load_environment needs verifiers: "
            f"pip install '{distribution}[verifiers]'"
        )
    if release >= LEGACY_API_BEFORE:
        raise ImportError(
            f"{distribution}'s load_environment needs the legacy verifiers API (verifiers 0.2 "
            f"and 0.3); verifiers {version('verifiers')} has only the v1 API: run "
            f"`vf-eval {distribution} -m <model>` (the v1 taskset) instead"
        )
