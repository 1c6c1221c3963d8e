"""The adapters' task caches never hand a row another row's task.

Every adapter keeps validated tasks between calls (the process-wide memo of JSON task strings,
TRL's one scoring pass shared by its reward functions). A cache keyed too loosely (by prompt,
by position, by the column's identity alone) would score a completion against its neighbour's
answer: a certain 0 turned into a 1, or the reverse. Each case runs the real engine through
the adapter's own entry point with rows built to collide on everything but the task, plus
the attack rows of ``datasets/adapters/task_cache_collisions.jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from verifiers.rl_adapters import Scorer, verl
from verifiers.rl_adapters._rows import TASKS, TaskMemo
from verifiers.rl_adapters.deepspeed import DeepSpeedReward
from verifiers.rl_adapters.openrlhf import OpenRLHFRequest, OpenRLHFScoring
from verifiers.rl_adapters.trl import TRLRewards

from verifiers import EngineSettings

CORPUS = Path(__file__).parents[2] / "datasets" / "adapters" / "task_cache_collisions.jsonl"
SETTINGS = EngineSettings(sandbox="none", workers=1)
VERL = {"sandbox": "none", "workers": 1, "machine_concurrency": None, "invalid_score": -1.0}


def _task(reference: Any, **extra: Any) -> str:
    return json.dumps({"verifier": "answer.numeric", "reference": reference, **extra})


@pytest.fixture(scope="module")
def scorer() -> Any:
    with Scorer(SETTINGS, machine_concurrency=None) as shared:
        yield shared


def _score_all(
    scorer: Scorer, prompts: list[str], completions: list[str], tasks: list[Any]
) -> dict[str, list[float | None]]:
    """The main reward of every row through TRL, DeepSpeed, veRL and OpenRLHF."""
    trl = TRLRewards(asynchronous=False, scorer=scorer)
    out: dict[str, list[float | None]] = {
        "trl": trl.funcs[0](prompts=prompts, completions=completions, task=tasks)
    }
    values, valid = DeepSpeedReward(scorer=scorer, device="cpu")(prompts, completions, tasks=tasks)
    out["deepspeed"] = [
        float(v) if ok else None for v, ok in zip(values.tolist(), valid.tolist(), strict=True)
    ]
    dicts = verl.compute_score_batch(
        ["t"] * len(tasks), completions, [None] * len(tasks), [{"task": t} for t in tasks], **VERL
    )
    out["verl"] = [d["score"] if d["score"] != -1.0 else None for d in dicts]
    scoring = OpenRLHFScoring()
    request = OpenRLHFRequest(
        query=[p + c for p, c in zip(prompts, completions, strict=True)],
        prompts=prompts,
        labels=[t if isinstance(t, str) else json.dumps(t) for t in tasks],
    )
    results = scorer.score(scoring.items(request))
    out["openrlhf"] = [r.reward if r.status in ("pass", "fail") else None for r in results]
    return out


def _assert_all(got: dict[str, list[float | None]], want: list[float | None]) -> None:
    for adapter, rewards in got.items():
        assert rewards == want, f"{adapter}: {rewards} != {want}"


def test_same_prompt_different_answers_in_one_batch(scorer: Scorer) -> None:
    prompts = ["What is x?"] * 8
    completions = ["The answer is 3"] * 8
    tasks = [_task(3 if i % 2 == 0 else 4) for i in range(8)]
    _assert_all(_score_all(scorer, prompts, completions, tasks), [1.0, 0.0] * 4)


def test_a_mutated_column_between_batches_is_scored_afresh(scorer: Scorer) -> None:
    prompts, completions = ["What is x?"] * 2, ["The answer is 3"] * 2
    tasks: list[Any] = [_task(3), _task(3)]
    trl = TRLRewards(asynchronous=False, scorer=scorer)
    assert trl.funcs[0](prompts=prompts, completions=completions, task=tasks) == [1.0, 1.0]
    tasks[1] = _task(4)  # the same list objects, one string replaced in place
    assert trl.funcs[0](prompts=prompts, completions=completions, task=tasks) == [1.0, 0.0]
    dict_tasks: list[Any] = [json.loads(_task(3)), json.loads(_task(3))]
    assert trl.funcs[0](prompts=prompts, completions=completions, task=dict_tasks) == [1.0, 1.0]
    dict_tasks[0]["reference"] = 4  # a dict of the column mutated in place
    assert trl.funcs[0](prompts=prompts, completions=completions, task=dict_tasks) == [0.0, 1.0]
    dict_tasks[1]["spec"] = {"rel_tol": 0.5}  # a nested value added in place
    dict_tasks[1]["reference"] = 5.5
    assert trl.funcs[0](prompts=prompts, completions=completions, task=dict_tasks) == [0.0, 1.0]
    _assert_all(_score_all(scorer, prompts, completions, tasks), [1.0, 0.0])


def _corpus() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def test_collision_corpus_every_adapter_one_batch(scorer: Scorer) -> None:
    """Rows that collide on prompt, completion, spelling or length: each gets its own task.

    All rows go through every adapter in one batch (one engine pass each), after a warm-up
    pass that fills the memo with the corpus's look-alike strings.
    """
    rows = _corpus()
    assert len(rows) >= 12
    prompts = [row["prompt"] for row in rows]
    completions = [row["completion"] for row in rows]
    tasks = [row["task"] for row in rows]
    want = [row["reward"] for row in rows]
    first = _score_all(scorer, prompts, completions, tasks)
    _assert_all(first, want)
    # reversed order: a memo keyed by position or by the previous batch would now disagree
    again = _score_all(scorer, prompts[::-1], completions[::-1], tasks[::-1])
    _assert_all(again, want[::-1])


def test_memo_is_bounded_and_keeps_tasks_in_use() -> None:
    memo = TaskMemo(items=8, chars=10_000, max_chars=1_000)
    hot = _task(1)
    for i in range(100):
        assert memo.get(hot) is not None
        assert memo.get(_task(1000 + i)) is not None
        assert len(memo) <= 8
    assert memo.get(hot) is memo.get(hot)  # still memoised: in use every round
    long = _task("9" * 2_000)
    assert memo.get(long) is not memo.get(long)  # over max_chars: never kept
    by_chars = TaskMemo(items=1_000, chars=400, max_chars=1_000)
    for i in range(50):
        by_chars.get(_task(i, spec={"pad": "x" * 50}))
    assert sum(map(len, by_chars._young)) + sum(map(len, by_chars._old)) <= 400
    assert len(TASKS) <= TASKS.items
