"""Nothing a job does changes what the next job gets (datasets/sandbox/cross_sample.jsonl).

One warm worker (pool of 1, engine concurrency 1) scores a sequence of state-leaking hacks,
readers that would earn the reward only if a leak reached them, and honest controls, through
the real ``code.tests`` verifier and the real sandbox (Docker, and the local backend under
bubblewrap). Every row must get the verdict it gets alone: hacks and readers ``fail`` with 0,
honest rows ``pass`` with 1.0 -- also the honest row right after a memory hog, and the one
right after a disk hog.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import score_rows

from verifiers.engine import Engine, EngineSettings
from verifiers.types import Result

CORPUS = Path(__file__).resolve().parents[2] / "datasets" / "sandbox" / "cross_sample.jsonl"
ROWS: list[dict[str, Any]] = [json.loads(x) for x in CORPUS.read_text().splitlines() if x]


def _score(new_provider: Any, rows: list[dict[str, Any]]) -> list[Result]:
    return score_rows(new_provider(pool_size=1), rows)


def test_corpus_covers_every_family() -> None:
    roles = {r["metadata"]["role"] for r in ROWS}
    families = {r["metadata"]["family"] for r in ROWS}
    assert roles == {"hack", "reader", "honest"}
    assert {"ipc", "keyring", "scratch", "cleanup", "workdir", "process", "memory", "disk"} <= (
        families
    )
    assert len({r["id"] for r in ROWS}) == len(ROWS)


def _verdicts(results: list[Result]) -> dict[str, tuple[str, float | None]]:
    return {str(r.id): (r.status, r.reward) for r in results}


def _expected(rows: list[dict[str, Any]]) -> dict[str, tuple[str, float | None]]:
    return {
        r["id"]: (r["metadata"]["expect"]["status"], r["metadata"]["expect"]["reward"])
        for r in rows
    }


def test_every_row_gets_its_own_verdict_on_one_warm_worker(new_provider: Any) -> None:
    results = _score(new_provider, ROWS)
    got, want = _verdicts(results), _expected(ROWS)
    wrong = {
        key: (got[key], want[key], next(r.feedback for r in results if r.id == key)[:300])
        for key in want
        if got[key] != want[key]
    }
    assert not wrong, wrong


@pytest.mark.parametrize("role", ["honest", "reader"])
def test_rows_alone(new_provider: Any, role: str) -> None:
    """Each honest row passes and each reader fails on a fresh worker (so in the sequence,
    a reader that passed would have profited from a leak, and an honest row that failed would
    have been harmed by the job before it)."""
    rows = [r for r in ROWS if r["metadata"]["role"] == role]

    async def main() -> list[Result]:
        out: list[Result] = []
        for row in rows:
            provider = new_provider(pool_size=1, replenish=False)
            try:
                async with Engine(
                    EngineSettings(concurrency=1, retries=0), sandboxes=provider
                ) as engine:
                    out.extend(await engine.score([row]))
            finally:
                await provider.close()
        return out

    results = asyncio.run(main())
    assert _verdicts(results) == _expected(rows)
