"""The Godot fork server on the verifier's path, against one engine per check.

``game.godot`` runs checks that arrive together as forked children of one warm engine
(``domains/godot/_forkqueue.py``), so the corpus tests (test_godot_corpus.py, both
backends) score every line of datasets/godot/corpus.jsonl through the fork server. Here:

* the same corpus through one fresh engine per check (``_fresh.run_fresh``, the fork
  server's fallback), on the local backend: every line gets its ``metadata.expected``
  verdict (status, reward, feedback) there too, so both paths say the same;
* the attacks on the fork server itself (datasets/godot/forkserver.jsonl) score 0 through
  the verifier (fork server) and through a fresh engine, on both backends, and through the
  verifier each is followed, in the same batch, by an honest check that must still pass,
  forked: the attack left nothing behind.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from engine_corpus import START_S, EngineCorpus
from make_forkserver_corpus import BATCH_BREAKER
from verifiers.domains.godot import GodotSpec
from verifiers.domains.godot._checks import evaluate
from verifiers.domains.godot._forkqueue import run_check
from verifiers.domains.godot._fresh import run_fresh
from verifiers.domains.godot._verifier import project_of
from verifiers.sandbox import SandboxSettings, open_provider

from verifiers.context import VerifierContext
from verifiers.types import Result, Trajectory

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[2] / "datasets" / "godot"
CORPUS = EngineCorpus(DATA / "corpus.jsonl", HERE / "make_corpus.py")
FORK = EngineCorpus(DATA / "forkserver.jsonl", HERE / "make_forkserver_corpus.py")
PROBE = "ball-comes-to-rest"
"""The honest check run after each attack on the fork server."""
_FRESH: dict[tuple[str, str], dict[str, Result]] = {}
_WARM: dict[str, dict[str, Result]] = {}
_CONCURRENCY = 8


def _after(item_id: str) -> str:
    return f"{PROBE}-after-{item_id}"


def _run(backend: str, work: Any) -> Any:
    async def run() -> Any:
        provider = open_provider(backend, SandboxSettings(start_timeout_s=START_S))
        try:
            return await work(provider)
        finally:
            await provider.close()

    return asyncio.run(run())


def _context(provider: Any) -> VerifierContext:
    return VerifierContext(deadline=time.monotonic() + 3600, base_dir=DATA, sandboxes=provider)


def fresh(backend: str, corpus: EngineCorpus) -> dict[str, Result]:
    """Every line of ``corpus`` through one fresh engine per check on ``backend``."""
    key = (backend, corpus.corpus.name)
    if key in _FRESH:
        return _FRESH[key]

    async def work(provider: Any) -> dict[str, Result]:
        gate = asyncio.Semaphore(_CONCURRENCY)

        async def one(item: dict[str, Any]) -> Result:
            spec = GodotSpec.model_validate(item["task"]["spec"])
            files = project_of(Trajectory.model_validate(item), spec)
            if isinstance(files, Result):
                return files
            async with gate:
                return evaluate(await run_fresh(files, spec, _context(provider)), spec)

        items = corpus.items()
        results = await asyncio.gather(*(one(i) for i in items))
        return {str(i["id"]): r for i, r in zip(items, results, strict=True)}

    _FRESH[key] = _run(backend, work)
    return _FRESH[key]


def warm(backend: str) -> dict[str, Result]:
    """Each fork-server attack and then the honest probe, submitted through the verifier in
    that order (the probe is the next check of the attack's fork-server batch)."""
    if backend in _WARM:
        return _WARM[backend]
    probe = next(i for i in CORPUS.items() if i["id"] == PROBE)

    async def verify(item: dict[str, Any], provider: Any) -> Result:
        # GodotScene.verify's own steps, with a wait for the fork server long enough that no
        # check of these batches runs fresh for lack of time on a loaded machine
        spec = GodotSpec.model_validate(item["task"]["spec"])
        files = project_of(Trajectory.model_validate(item), spec)
        if isinstance(files, Result):
            return files
        return evaluate(await run_check(files, spec, _context(provider), queue_s=600.0), spec)

    async def work(provider: Any) -> dict[str, Result]:
        # all pairs at once, in order: a batch takes a contiguous, even-sized slice of the
        # queue (_MAX_BATCH), so each attack's probe is the next check of its batch
        attacks = FORK.items()
        pairs = [verify(item, provider) for attack in attacks for item in (attack, probe)]
        scored = await asyncio.gather(*pairs)
        results: dict[str, Result] = {}
        for n, attack in enumerate(attacks):
            ident = str(attack["id"])
            results[ident], results[_after(ident)] = scored[2 * n], scored[2 * n + 1]
        return results

    _WARM[backend] = _run(backend, work)
    return _WARM[backend]


def test_committed_fork_corpus_is_current() -> None:
    assert FORK.is_current()


BACKENDS = [
    pytest.param("local", marks=pytest.mark.bwrap),
    pytest.param("docker", marks=pytest.mark.docker),
]


@pytest.mark.bwrap
@pytest.mark.parametrize("item_id", CORPUS.ids())
def test_fresh_engine_verdicts(item_id: str) -> None:
    CORPUS.check(item_id, fresh("local", CORPUS)[item_id])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("item_id", FORK.ids())
def test_fork_attacks(backend: str, item_id: str) -> None:
    results = warm(backend)
    FORK.check(item_id, results[item_id])
    after = results[_after(item_id)]
    CORPUS.check(PROBE, after)
    if item_id != BATCH_BREAKER:
        assert after.details["engine"]["forked"], after.details["engine"]
        assert results[item_id].details.get("engine", {}).get("forked") is not False
    FORK.check(item_id, fresh(backend, FORK)[item_id])
