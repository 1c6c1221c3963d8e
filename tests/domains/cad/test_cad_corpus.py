"""datasets/cad/corpus.jsonl scores as each line's ``metadata.expected`` says, through the
real CadQuery 2.8 and build123d 0.13 runtimes on the local (bubblewrap) and Docker backends.

The whole corpus goes through one ``verifiers.score`` call per backend (one warm pool), and
each line is then its own test case. A missing runtime is ``error/infra``, never a score.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from verifiers.sandbox import SandboxSettings, open_provider

import verifiers
from verifiers.engine import Engine, EngineSettings

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parents[2] / "datasets" / "cad" / "corpus.jsonl"


def _make() -> Any:
    spec = importlib.util.spec_from_file_location("cad_make_corpus", HERE / "make_corpus.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _items() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def _ids() -> list[str]:
    return [str(item["id"]) for item in _items()]


_SCORED: dict[str, dict[str, verifiers.Result]] = {}


START_S = 300.0
"""A runner's start, preload included: a zygote that imports build123d (2400 modules) or
CadQuery needs a few seconds on a quiet machine and over 60 s (the default) at a load of 20."""


def _scored(backend: str) -> dict[str, verifiers.Result]:
    if backend not in _SCORED:
        items = _items()

        async def run() -> list[verifiers.Result]:
            provider = open_provider(backend, SandboxSettings(start_timeout_s=START_S))
            try:
                settings = EngineSettings.from_env(sandbox=backend)
                async with Engine(settings, sandboxes=provider, base_dir=CORPUS.parent) as engine:
                    return await engine.score(items)
            finally:
                await provider.close()

        results = asyncio.run(run())
        _SCORED[backend] = {str(i["id"]): r for i, r in zip(items, results, strict=True)}
    return _SCORED[backend]


def _check(item_id: str, result: verifiers.Result) -> None:
    item = next(i for i in _items() if i["id"] == item_id)
    expected = item["metadata"]["expected"]
    assert result.status == expected["status"], (item_id, result.feedback, result.error)
    assert result.reward == pytest.approx(expected["reward"]), (item_id, result.feedback)
    for needle in expected["feedback"]:
        assert needle in result.feedback, (item_id, needle, result.feedback)


def test_committed_corpus_is_current() -> None:
    make = _make()
    assert CORPUS.read_text() == make.render(make.rows())


def test_corpus_covers_every_family() -> None:
    families = Counter(i["metadata"]["family"] for i in _items())
    assert len(_items()) >= 15
    assert all(families[f] >= 3 for f in ("pass", "partial", "failure", "hack")), families


@pytest.mark.bwrap
@pytest.mark.parametrize("item_id", _ids())
def test_corpus_local(item_id: str) -> None:
    _check(item_id, _scored("local")[item_id])


@pytest.mark.docker
@pytest.mark.parametrize("item_id", _ids())
def test_corpus_docker(item_id: str) -> None:
    _check(item_id, _scored("docker")[item_id])


@pytest.mark.bwrap
def test_missing_runtime_is_infra_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIFIERS_SANDBOX_CACHE", str(tmp_path))
    item = _items()[0]
    [result] = verifiers.score([item], sandbox="local", base_dir=CORPUS.parent)
    assert result.status == "error" and result.reward is None
    assert result.error is not None and result.error.kind == "infra", result.error
    assert "cadquery" in result.error.message


def test_both_libraries_are_in_the_corpus() -> None:
    libraries = Counter(i["metadata"]["library"] for i in _items())
    assert libraries["cadquery"] >= 10 and libraries["build123d"] >= 3, libraries
