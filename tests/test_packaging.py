"""The explicit package list in pyproject.toml must match the source tree."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOTS = {
    "verifiers": "verifiers",
    "domains": "verifiers.domains",
    "sandbox": "verifiers.sandbox",
    "rl_adapters": "verifiers.rl_adapters",
}


def test_every_source_package_is_listed(repo_root: Path) -> None:
    config = tomllib.loads((repo_root / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    on_disk = set()
    for folder, dotted in ROOTS.items():
        for init in (repo_root / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(repo_root / folder)
            on_disk.add(".".join([dotted, *rel.parts]))
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages"
    missing = {p for p in listed - on_disk if not p.startswith("verifiers._data")}
    assert missing == set(), "listed packages that do not exist"


def test_datasets_is_data_only(repo_root: Path) -> None:
    # A datasets/__init__.py would shadow Hugging Face `datasets`, which TRL imports.
    assert not list((repo_root / "datasets").rglob("*.py"))
