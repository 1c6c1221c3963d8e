"""``SyncEngine``'s fast path: verdicts that need no waiting are made on the caller's thread.

The adapters (veRL's per-sample ``compute_score`` above all) call the engine once per sample
from executor threads; a hop to the engine's loop thread cost more than an inline verdict.
What must hold, over ``datasets/adapters/sync_fast_path.jsonl`` (inline verdicts, bad inputs
of every shape, a raising inline check, forged result fields, judged items that force the
loop):

- every result is the one the async engine gives on its own loop, field for field (only the
  timing differs), whether the row is scored alone from a thread, in one mixed call, from an
  event loop, or through ``submit``;
- ``score_now`` gives the same verdict for every row that needs no waiting and ``None`` for
  the others (veRL's per-sample path then scores those as before);
- a call of inline verdicts never hops threads, and a mixed call hops once and makes no
  verdict twice (the ones made on the caller's thread travel as ready results);
- nothing in an item raises out of the engine.
"""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import rl_helpers  # noqa: F401 - registers rltest.* verifiers
from verifiers.rl_adapters import Scorer

from verifiers import Engine, EngineSettings, InlineVerifier, Result, Spec, Trajectory, register
from verifiers.registry import get_verifier

CORPUS = Path(__file__).parents[2] / "datasets" / "adapters" / "sync_fast_path.jsonl"
ROWS = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]
JUDGED = ("rltest.slow", "checks")
SETTINGS = EngineSettings(sandbox="none", workers=1)
INLINE_CALLS: list[str] = []


class _RaisesSpec(Spec):
    pass


class _Raises(InlineVerifier[_RaisesSpec]):
    """An inline check that raises (a verifier bug): the boundary must make it a result."""

    Spec = _RaisesSpec

    def check(self, trajectory: Trajectory, spec: _RaisesSpec) -> Result:
        INLINE_CALLS.append(str(trajectory.completion))
        raise ZeroDivisionError("verifier bug")


try:
    get_verifier("rltest.raises")
except Exception:
    register("rltest.raises")(_Raises)


class HopCounting(Scorer):
    """A real scorer that counts hand-overs to its loop thread."""

    def __init__(self, settings: EngineSettings = SETTINGS) -> None:
        super().__init__(settings, machine_concurrency=None)
        self.hops = 0

    def _submit(self, coro: Any) -> Future[Any]:
        self.hops += 1
        return super()._submit(coro)


def _judged(row: dict[str, Any]) -> bool:
    return any(name in json.dumps(row["item"]) for name in JUDGED)


def _comparable(result: Result) -> dict[str, Any]:
    return result.model_dump(exclude={"duration_s"})


@pytest.fixture(scope="module")
def reference() -> list[dict[str, Any]]:
    """The async engine on its own loop: what every path must give."""

    async def run() -> list[Result]:
        async with Engine(SETTINGS) as engine:
            return await engine.score([row["item"] for row in ROWS])

    return [_comparable(r) for r in asyncio.run(run())]


def test_every_path_gives_the_engines_own_results(reference: list[dict[str, Any]]) -> None:
    items = [row["item"] for row in ROWS]
    with HopCounting() as scorer:
        alone: list[Result] = []

        def from_a_thread() -> None:
            alone.extend(scorer.score([item])[0] for item in items)

        thread = threading.Thread(target=from_a_thread)
        thread.start()
        thread.join()
        assert scorer.hops == sum(map(_judged, ROWS))  # one hop per judged row, none else
        scorer.hops = 0
        together = scorer.score(items)
        assert scorer.hops == 1
        submitted = scorer.submit(items).result()

        async def from_a_loop() -> list[Result]:
            return await scorer.score_async(items)

        awaited = asyncio.run(from_a_loop())
        scorer.hops = 0
        # score_now (veRL's per-sample path): the verdict when it needs no waiting, else None
        now = [scorer.score_now(item) for item in items]
        assert scorer.hops == 0
        assert [r is None for r in now] == [_judged(row) for row in ROWS]
    for path in (alone, together, submitted, awaited):
        assert [_comparable(r) for r in path] == reference
    for made, want in zip(now, reference, strict=True):
        assert made is None or _comparable(made) == want
    by_why = {row["why"]: r for row, r in zip(ROWS, together, strict=True)}
    assert by_why["inline pass"].reward == 1.0
    assert by_why["forged result fields in the item are not a result"].reward == 0.0
    raised = by_why["inline check that raises: an error result, never an exception"]
    assert raised.status == "error" and raised.reward is None
    assert by_why["not a mapping"].error is not None
    assert by_why["not a mapping"].error.kind == "bad_input"


def test_inline_calls_never_hop_and_mixed_calls_make_no_verdict_twice() -> None:
    inline = [row["item"] for row in ROWS if not _judged(row)]
    judged = next(row["item"] for row in ROWS if _judged(row))
    with HopCounting() as scorer:
        scorer.score(inline)
        assert scorer.hops == 0
        INLINE_CALLS.clear()
        scorer.score([*inline, judged])  # the judged row is last: every verdict before it
        assert scorer.hops == 1  # was made here and passed through, not made again
        assert INLINE_CALLS == ["boom"]


def test_fail_fast_runs_take_the_loop() -> None:
    """With ``fail_fast_after`` the engine watches streaks, which only its loop can do."""
    with HopCounting(EngineSettings(sandbox="none", workers=1, fail_fast_after=3)) as scorer:
        assert scorer.score([ROWS[0]["item"]])[0].reward == 1.0
        assert scorer.hops == 1
        assert scorer.score_now(ROWS[0]["item"]) is None


def test_closed_and_reentrant_calls_are_refused() -> None:
    scorer = HopCounting()
    inline = ROWS[0]["item"]

    async def reentrant() -> None:
        scorer.score([inline])

    with pytest.raises(RuntimeError, match="own loop thread"):
        scorer.run(reentrant())
    scorer.close()
    for call in (scorer.score, scorer.submit):
        with pytest.raises(RuntimeError, match="closed"):
            call([inline])
    with pytest.raises(RuntimeError, match="closed"):
        scorer.score_now(inline)
