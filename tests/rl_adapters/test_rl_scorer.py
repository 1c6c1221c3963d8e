"""The scorer behind the adapters: one engine on its own loop, usable from threads and loops."""

from __future__ import annotations

import asyncio
import threading

import pytest
import rl_helpers  # noqa: F401
from verifiers.rl_adapters import Scorer, TaskDefaults, make_item, result_reward

from verifiers import EngineSettings, Result, Task

ITEM = {"completion": "has 3", "task": {"verifier": "rltest.contains", "reference": "3"}}


def test_from_threads_and_event_loops_with_one_engine() -> None:
    with Scorer(EngineSettings(sandbox="none"), machine_concurrency=None) as scorer:
        assert scorer.score([ITEM])[0].reward == 1.0
        engine = scorer._engine
        outs: list[float | None] = []

        def worker() -> None:
            outs.append(scorer.score([ITEM])[0].reward)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert outs == [1.0] * 8

        async def from_a_loop() -> list[Result]:
            return await scorer.score_async([ITEM, ITEM])

        assert [r.reward for r in asyncio.run(from_a_loop())] == [1.0, 1.0]

        # a sync call inside a running loop (e.g. a sync reward function called by async code)
        async def sync_inside_loop() -> Result:
            return scorer.score([ITEM])[0]

        assert asyncio.run(sync_inside_loop()).reward == 1.0
        assert scorer._engine is engine  # one engine throughout: warm workers are kept
    scorer.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        scorer.score([ITEM])


def test_result_reward_and_make_item() -> None:
    assert result_reward(Result.scored(0.5)) == 0.5
    assert result_reward(Result.skip("n/a")) is None
    assert result_reward(Result.errored("infra", "down")) is None
    defaults = TaskDefaults(verifier="rltest.contains", spec={"short_chars": 3})
    first = make_item(completion="c", reference="r", id=7, defaults=defaults)
    # a plain reference under the defaults: its first row a task dict, from its second row on
    # one validated, memoised Task (REFERENCES)
    assert first == {
        "id": "7",
        "completion": "c",
        "task": {"reference": "r", "verifier": "rltest.contains", "spec": {"short_chars": 3}},
    }
    item = make_item(completion="c", reference="r", id=7, defaults=defaults)
    assert item == {
        "id": "7",
        "completion": "c",
        "task": Task(reference="r", verifier="rltest.contains", spec={"short_chars": 3}),
    }
    assert make_item(completion="d", reference="r", defaults=defaults)["task"] is item["task"]
    assert make_item(completion="c", reference=["r"], defaults=defaults)["task"] == {
        "reference": ["r"],
        "verifier": "rltest.contains",
        "spec": {"short_chars": 3},
    }
    bad = make_item(completion="c", task="[1]", defaults=defaults)
    assert (
        isinstance(bad, Result)
        and bad.status == "error"
        and "object" in bad.feedback + str(bad.error)
    )
