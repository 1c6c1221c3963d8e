"""The Godot fork server: one engine start, one forked and jailed child per check.

Every line of datasets/godot/corpus.jsonl, run through the fork server
(``domains/godot/_forkbatch.py``: the runtime's GDNative library, ``_forkserver3.gd``,
``_forkdrive.py``) on each backend, gets exactly the verdict it gets through one engine per
check (its ``metadata.expected``: status, reward, feedback). The whole corpus runs on the local
backend only: the verifier's own path does not use the fork server yet, so Docker runs the
attacks and their probes, which are what differs there (the container's processes and /proc).
The attacks on the fork server
itself (datasets/godot/forkserver.jsonl) score 0 both ways, and in the fork server each is
followed by an honest check that must still pass: the attack left nothing behind.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from engine_corpus import START_S, EngineCorpus
from verifiers.domains.godot import GodotSpec
from verifiers.domains.godot._checks import evaluate
from verifiers.domains.godot._forkbatch import run_batch
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
_RESULTS: dict[str, dict[str, Result]] = {}
_LOTS = 3
"""Batches the corpus is dealt into, run side by side."""


def _after(item_id: str) -> str:
    return f"{PROBE}-after-{item_id}"


def batched(backend: str) -> dict[str, Result]:
    """Every corpus line, each fork-server attack followed by the honest probe, scored
    through the fork server on ``backend`` (one batch per ``fps``, in order)."""
    if backend in _RESULTS:
        return _RESULTS[backend]
    probe = next(i for i in CORPUS.items() if i["id"] == PROBE)
    attacks: list[dict[str, Any]] = []
    for attack in FORK.items():
        attacks += [attack, {**probe, "id": _after(str(attack["id"]))}]
    corpus = CORPUS.items() if backend == "local" else []
    # Several batches at once (the provider's runner pool): the corpus's endless rows wait
    # out their timeouts, so batches that wait side by side cost one wait, not the sum.
    # Each attack stays in one batch with the honest check after it.
    lots = [corpus[i::_LOTS] for i in range(_LOTS)] + [attacks]
    results: dict[str, Result] = {}
    batches: list[list[tuple[str, dict[str, str], GodotSpec]]] = []
    for lot in lots:
        groups: dict[int, list[tuple[str, dict[str, str], GodotSpec]]] = {}
        for item in lot:
            spec = GodotSpec.model_validate(item["task"]["spec"])
            files = project_of(Trajectory.model_validate(item), spec)
            if isinstance(files, Result):
                results[str(item["id"])] = files
            else:
                groups.setdefault(spec.fps, []).append((str(item["id"]), files, spec))
        batches += groups.values()

    async def run() -> None:
        provider = open_provider(backend, SandboxSettings(start_timeout_s=START_S))
        try:
            ctx = VerifierContext(
                deadline=time.monotonic() + 3600, base_dir=DATA, sandboxes=provider
            )

            async def one(batch: list[tuple[str, dict[str, str], GodotSpec]]) -> None:
                reports = await run_batch([(f, s) for _, f, s in batch], ctx)
                for (ident, _, spec), report in zip(batch, reports, strict=True):
                    results[ident] = evaluate(report, spec)

            await asyncio.gather(*(one(b) for b in batches))
        finally:
            await provider.close()

    asyncio.run(run())
    _RESULTS[backend] = results
    return results


def test_committed_fork_corpus_is_current() -> None:
    assert FORK.is_current()


BACKENDS = [
    pytest.param("local", marks=pytest.mark.bwrap),
    pytest.param("docker", marks=pytest.mark.docker),
]


@pytest.mark.bwrap
@pytest.mark.parametrize("backend", ["local"])
@pytest.mark.parametrize("item_id", CORPUS.ids())
def test_fork_server_verdicts(backend: str, item_id: str) -> None:
    CORPUS.check(item_id, batched(backend)[item_id])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("item_id", FORK.ids())
def test_fork_attacks(backend: str, item_id: str) -> None:
    FORK.check(item_id, batched(backend)[item_id])
    CORPUS.check(PROBE, batched(backend)[_after(item_id)])
    FORK.check(item_id, FORK.scored(backend)[item_id])
