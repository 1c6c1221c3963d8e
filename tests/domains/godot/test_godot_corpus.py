"""datasets/godot/corpus.jsonl scores as each line's ``metadata.expected`` says, through the
real headless Godot of the ``godot`` runtime on the local (bubblewrap) and Docker backends,
through the verifier's own path: the fork server (forked children of a warm engine) and,
where it gives no certain verdict, a fresh engine.

The whole corpus goes through one engine run per backend (tests/engine_corpus.py), and each
line is then its own test case. A missing runtime is ``error/infra``, never a score.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from engine_corpus import START_S, EngineCorpus
from verifiers.domains.godot._fresh import probe_runtime
from verifiers.sandbox import SandboxSettings, open_provider

from verifiers.context import VerifierContext

HERE = Path(__file__).resolve().parent
CORPUS = EngineCorpus(
    HERE.parents[2] / "datasets" / "godot" / "corpus.jsonl", HERE / "make_corpus.py"
)


def test_committed_corpus_is_current() -> None:
    assert CORPUS.is_current()


def test_corpus_covers_every_family() -> None:
    CORPUS.check_families()


@pytest.mark.bwrap
@pytest.mark.parametrize("item_id", CORPUS.ids())
def test_corpus_local(item_id: str) -> None:
    CORPUS.check(item_id, CORPUS.scored("local")[item_id])


@pytest.mark.docker
@pytest.mark.parametrize("item_id", CORPUS.ids())
def test_corpus_docker(item_id: str) -> None:
    CORPUS.check(item_id, CORPUS.scored("docker")[item_id])


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("local", marks=pytest.mark.bwrap),
        pytest.param("docker", marks=pytest.mark.docker),
    ],
)
def test_the_verifier_forks(backend: str) -> None:
    # The verifier runs checks as forked children of a warm engine: its honest lines were
    # forked (a fork server that fell back to fresh engines everywhere would still pass
    # every verdict above). The verdicts of one fresh engine per check:
    # test_godot_forkserver.py.
    results = CORPUS.scored(backend)
    passed = [r for r in results.values() if r.status == "pass"]
    forked = [r for r in passed if r.details["engine"]["forked"]]
    assert len(passed) >= 5
    assert len(forked) >= 0.8 * len(passed), (len(forked), len(passed))


@pytest.mark.bwrap
def test_missing_runtime_is_infra_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    CORPUS.check_missing_runtime(tmp_path, monkeypatch, "godot")


@pytest.mark.bwrap
def test_the_runtime_probe_passes_on_a_working_runtime() -> None:
    # Godot 3's --version exits 255: a probe judging by the exit status called every runtime
    # broken, so an exit of 126/127/97 before report A would have been an abstain.
    async def probe() -> None:
        provider = open_provider("local", SandboxSettings(start_timeout_s=START_S))
        try:
            ctx = VerifierContext(
                deadline=time.monotonic() + 300, base_dir=HERE, sandboxes=provider
            )
            await probe_runtime(ctx)
        finally:
            await provider.close()

    asyncio.run(probe())
