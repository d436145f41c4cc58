"""The workspace installs both environments as importable packages."""

import importlib


def test_environment_modules_import_by_id() -> None:
    for env_id in ("fathom-rlm", "gsm8k-multireward"):
        module = importlib.import_module(env_id.replace("-", "_"))
        assert module.__doc__
