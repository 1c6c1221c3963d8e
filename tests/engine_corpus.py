"""A regression corpus scored through a real engine, once per backend (shared by the
game.godot and cad.script corpus tests).

Each corpus line carries its verdict in ``metadata.expected`` (``status``, ``reward``,
``feedback`` needles) and is written by the folder's ``make_corpus.py`` (its ``rows()``,
through :func:`write_corpus`): the committed file must be what the generator writes. The whole corpus goes
through one ``Engine.score`` call per backend (one warm pool, batched), and each line is then
its own test case reading that batch's result.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from verifiers.sandbox import SandboxSettings, open_provider

import verifiers
from verifiers.engine import Engine, EngineSettings

START_S = 300.0
"""A runner's start, preload included: a zygote that imports build123d (2400 modules) or
CadQuery needs a few seconds on a quiet machine and over 60 s (the default) at a load of 20."""


def render(lines: list[dict[str, Any]]) -> str:
    """A corpus file's text: one JSON object per line, keys sorted (stable diffs)."""
    return "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)


def write_corpus(out: Path, lines: list[dict[str, Any]]) -> None:
    """Write a generator's corpus (its ``__main__``) and say so."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(lines), encoding="utf-8")
    sys.stdout.write(f"wrote {len(lines)} lines to {out}\n")


class EngineCorpus:
    """``corpus`` (a JSONL file) and its generator ``make`` (a ``make_corpus.py``)."""

    def __init__(
        self, corpus: Path, make: Path, *, pool_sizes: dict[str, int] | None = None
    ) -> None:
        self.corpus = corpus
        self.make_path = make
        self.pool_sizes = pool_sizes or {}
        """Workers per runtime profile by backend (absent: the provider's default). Fewer
        containers start fewer zygotes at once, which is what a small corpus on Docker waits
        for (CAD at load 20: 219 s with the default 4, 58 s with 1; local was faster with 4)."""
        self._scored: dict[tuple[str, tuple[str, ...]], dict[str, verifiers.Result]] = {}

    def items(self) -> list[dict[str, Any]]:
        """The corpus lines, in file order."""
        text = self.corpus.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def ids(self) -> list[str]:
        """Every line's id (pytest parameters)."""
        return [str(item["id"]) for item in self.items()]

    def make(self) -> Any:
        """The generator module, loaded from its file."""
        name = f"{self.corpus.parent.name}_make_corpus"
        spec = importlib.util.spec_from_file_location(name, self.make_path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def is_current(self) -> bool:
        """The committed corpus is exactly what the generator writes."""
        make = self.make()
        return self.corpus.read_text(encoding="utf-8") == render(make.rows())

    def scored(self, backend: str, ids: Iterable[str] | None = None) -> dict[str, verifiers.Result]:
        """Results by id of one batched engine run on ``backend`` (over ``ids`` only, when
        given), computed once per backend and subset."""
        wanted = tuple(sorted(ids)) if ids is not None else ()
        key = (backend, wanted)
        if key not in self._scored:
            items = [i for i in self.items() if not wanted or str(i["id"]) in wanted]
            base_dir = self.corpus.parent

            async def run() -> list[verifiers.Result]:
                options: dict[str, Any] = {"start_timeout_s": START_S}
                if backend in self.pool_sizes:
                    options["pool_size"] = self.pool_sizes[backend]
                provider = open_provider(backend, SandboxSettings(**options))
                try:
                    settings = EngineSettings.from_env(sandbox=backend)
                    async with Engine(settings, sandboxes=provider, base_dir=base_dir) as engine:
                        return await engine.score(items)
                finally:
                    await provider.close()

            results = asyncio.run(run())
            self._scored[key] = {str(i["id"]): r for i, r in zip(items, results, strict=True)}
        return self._scored[key]

    def check(self, item_id: str, result: verifiers.Result) -> None:
        """``result`` is the line's expected verdict."""
        item = next(i for i in self.items() if i["id"] == item_id)
        expected = item["metadata"]["expected"]
        assert result.status == expected["status"], (item_id, result.feedback, result.error)
        assert result.reward == pytest.approx(expected["reward"]), (item_id, result.feedback)
        for needle in expected["feedback"]:
            assert needle in result.feedback, (item_id, needle, result.feedback)

    def check_families(self) -> None:
        """At least 15 lines, and 3 or more in each family."""
        families = Counter(i["metadata"]["family"] for i in self.items())
        assert len(self.items()) >= 15
        assert all(families[f] >= 3 for f in ("pass", "partial", "failure", "hack")), families

    def check_missing_runtime(
        self, cache: Path, monkeypatch: pytest.MonkeyPatch, name: str
    ) -> None:
        """The first line, scored on the local backend with an empty runtime cache, is
        ``error/infra`` naming the runtime ``name``: never a score."""
        monkeypatch.setenv("VERIFIERS_SANDBOX_CACHE", str(cache))
        [result] = verifiers.score([self.items()[0]], sandbox="local", base_dir=self.corpus.parent)
        assert result.status == "error" and result.reward is None
        assert result.error is not None and result.error.kind == "infra", result.error
        assert name in result.error.message
