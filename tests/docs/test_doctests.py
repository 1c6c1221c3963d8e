"""The examples in docstrings run: every module of the package that has one is doctested.

Modules are found by their source (a ``>>> `` line), so a new example is run without a list
to update; a failing example fails here, in CI.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"verifiers": "verifiers", "domains": "verifiers.domains", "sandbox": "verifiers.sandbox", "rl_adapters": "verifiers.rl_adapters"}  # fmt: skip


def _modules_with_examples() -> list[str]:
    found = []
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            if ">>> " not in path.read_text(encoding="utf-8"):
                continue
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(".".join((package, *parts)))
    return found


MODULES = _modules_with_examples()


def test_the_known_examples_are_found() -> None:
    assert {"verifiers", "verifiers._sync", "verifiers.settings", "verifiers.text"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert outcome.attempted > 0, f"{name}: no example ran"
    assert outcome.failed == 0, f"{name}: {outcome.failed} example(s) failed (see output above)"
