"""The package manifest tells the truth: one version, a license, and install hints that work.

Every ``MissingDependency("module", "extra")`` (and ``MissingDependency.require("module",
"extra")``, the import that raises it) in the source is a promise that
``pip install 'verifiers[extra]'`` installs ``module``: checked here against pyproject's extras
(following ``verifiers[a,b]`` self-references), so a hint can never point at an extra that
lacks what it names.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest

import verifiers

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
SOURCES = ("verifiers", "domains", "sandbox", "rl_adapters")
DIST = {"PIL": "pillow"}  # import name -> distribution, where they differ
KNOWN = {
    # veRL itself installs with --no-deps (its pins break torch/transformers; docs/adapters.md):
    # [verl] holds what its reward path imports, so the hint is right for those, not for verl.
    ("rl_adapters/verl_manager.py", "verl"): "verl is installed separately, --no-deps",
}


def _dist(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].strip().lower()


def extra_contents(extra: str, seen: frozenset[str] = frozenset()) -> set[str]:
    """Distributions an extra installs, through ``verifiers[...]`` self-references."""
    out: set[str] = set()
    for requirement in EXTRAS[extra]:
        included = re.fullmatch(r"verifiers\[([\w,\s-]+)\]", requirement.strip())
        if included:
            for name in included.group(1).split(","):
                name = name.strip()
                if name not in seen:
                    out |= extra_contents(name, seen | {extra})
        else:
            out.add(_dist(requirement))
    return out


def _names_missing_dependency(func: ast.expr) -> bool:
    """``MissingDependency(...)`` or ``MissingDependency.require(...)``."""
    if isinstance(func, ast.Attribute) and func.attr == "require":
        func = func.value
    return isinstance(func, ast.Name) and func.id == "MissingDependency"


def install_hints() -> list[tuple[str, int, str, str]]:
    """Every ``MissingDependency[.require]("<literal>", "<literal>")`` in the package source."""
    hints = []
    for folder in SOURCES:
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and _names_missing_dependency(node.func)
                    and len(node.args) == 2
                    and isinstance(node.args[1], ast.Constant)
                ):
                    module = node.args[0]
                    name = module.value if isinstance(module, ast.Constant) else None
                    if isinstance(module, ast.BoolOp):  # exc.name or "trimesh"
                        last = module.values[-1]
                        name = last.value if isinstance(last, ast.Constant) else None
                    if isinstance(name, str):
                        rel = str(path.relative_to(REPO))
                        hints.append((rel, node.lineno, name, str(node.args[1].value)))
    return hints


HINTS = install_hints()


def test_hints_were_found() -> None:
    assert len(HINTS) >= 10
    found = {(f, m, e) for f, _, m, e in HINTS}
    assert ("verifiers/io.py", "pyarrow", "parquet") in found
    assert ("domains/finance/_sources.py", "pandas", "finance") in found  # a require(...)


@pytest.mark.parametrize(("where", "line", "module", "extra"), HINTS)
def test_install_hint_names_an_extra_that_installs_the_module(
    where: str, line: int, module: str, extra: str
) -> None:
    assert extra in EXTRAS, f"{where}:{line}: hint names extra [{extra}], which does not exist"
    if (where, module) in KNOWN:
        return
    dist = DIST.get(module, module).lower()
    assert dist in extra_contents(extra), (
        f"{where}:{line}: pip install 'verifiers[{extra}]' does not install {dist!r}"
    )


def test_core_dependencies_stay_light() -> None:
    core = {_dist(r) for r in PYPROJECT["project"]["dependencies"]}
    assert core.isdisjoint({"pandas", "pyarrow", "matplotlib", "torch", "docker", "trimesh"})
    assert "parquet" in EXTRAS and "pyarrow" in extra_contents("all")


def test_one_version_source() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    attr = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "verifiers.__version__"
    assert importlib.metadata.version("verifiers") == verifiers.__version__


def test_license_changelog_and_contributing_exist() -> None:
    license_text = (REPO / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert PYPROJECT["project"]["license"] == {"text": "Apache-2.0"}
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog and f"## [{verifiers.__version__}]" in changelog
    contributing = (REPO / "CONTRIBUTING.md").read_text()
    for heading in (
        "## Add a verifier",
        "## Add a sandbox runtime",
        "## Add a trainer adapter",
        "## How CI works",
    ):
        assert heading in contributing
