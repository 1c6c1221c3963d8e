"""The shipped mesh datasets score as their ``metadata.expected`` says.

``datasets/examples/mesh.jsonl`` (inline meshes) runs everywhere; ``datasets/mesh/
scripts.jsonl`` (script mode) runs in the real Docker sandbox and in the local bubblewrap
backend. The committed files must be what ``make_datasets.py`` produces today.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

import verifiers

HERE = Path(__file__).resolve().parent


def _make() -> Any:
    spec = importlib.util.spec_from_file_location("mesh_make_datasets", HERE / "make_datasets.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _check(items: list[dict[str, Any]], results: list[verifiers.Result]) -> None:
    for item, result in zip(items, results, strict=True):
        expected = item["metadata"]["expected"]
        assert result.status == expected["status"], (item["id"], result.feedback, result.error)
        assert result.reward == pytest.approx(expected["reward"]), (item["id"], result.feedback)
        for needle in expected.get("feedback", []):
            assert needle in result.feedback, (item["id"], result.feedback)


def test_committed_datasets_are_current(repo_root: Path) -> None:
    make = _make()
    assert (repo_root / "datasets/mesh/scripts.jsonl").read_text() == make.render(
        make.script_lines()
    )
    examples = _lines(repo_root / "datasets/examples/mesh.jsonl")
    assert [e["id"] for e in examples] == [e["id"] for e in make.example_lines()]


def test_examples_score_as_expected(repo_root: Path) -> None:
    path = repo_root / "datasets/examples/mesh.jsonl"
    items = _lines(path)
    results = verifiers.score(items, sandbox="none", base_dir=str(path.parent))
    _check(items, results)


def _score_scripts(repo_root: Path, sandbox: str) -> None:
    path = repo_root / "datasets/mesh/scripts.jsonl"
    items = _lines(path)
    results = verifiers.score(items, sandbox=sandbox, base_dir=str(path.parent))
    _check(items, results)


@pytest.mark.docker
def test_scripts_in_docker_sandbox(repo_root: Path) -> None:
    _score_scripts(repo_root, "docker")


@pytest.mark.bwrap
def test_scripts_in_local_sandbox(repo_root: Path) -> None:
    _score_scripts(repo_root, "local")
