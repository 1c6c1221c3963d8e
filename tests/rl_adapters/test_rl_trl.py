"""TRL adapter: row mapping, one pass per batch, None for unscorable rows, and a real GRPO run."""

from __future__ import annotations

import asyncio
import json
import math
from concurrent.futures import Future
from typing import Any

import pytest
import rl_helpers  # noqa: F401 - registers rltest.* verifiers
import tiny_trl
from verifiers.rl_adapters import Scorer
from verifiers.rl_adapters.trl import TRLRewards

from verifiers import EngineSettings, Result


class CountingScorer(Scorer):
    """A real scorer that counts scoring passes."""

    def __init__(self) -> None:
        super().__init__(EngineSettings(sandbox="none", workers=1), machine_concurrency=None)
        self.passes = 0

    def submit(self, items: Any) -> Future[list[Result]]:
        self.passes += 1
        return super().submit(items)


def _logger() -> tuple[dict[str, Any], dict[str, Any]]:
    logged: dict[str, Any] = {}
    kw = {
        "log_metric": lambda k, v: logged.__setitem__(k, v),
        "log_extra": lambda k, v: logged.__setitem__(k, v),
    }
    return logged, kw


def test_sync_functions_share_one_pass_and_log_components() -> None:
    scorer = CountingScorer()
    rewards = TRLRewards(
        verifier="rltest.contains", components=["hit", "short"], asynchronous=False, scorer=scorer
    )
    logged, kw = _logger()
    prompts = ["p1", "p2", "p3"]
    completions = ["the answer is 4", "no idea", "6" * 30]
    columns = {"reference": ["4", "5", "6"], **kw}
    out = [f(prompts=prompts, completions=completions, **columns) for f in rewards.funcs]
    assert out == [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
    assert scorer.passes == 1
    assert [f.__name__ for f in rewards.funcs] == ["verifiers", "verifiers/hit", "verifiers/short"]
    assert rewards.weights == [1.0, 0.0, 0.0]
    assert logged["verifiers/status/pass"] == pytest.approx(2 / 3)
    assert logged["verifiers/hit"] == pytest.approx(2 / 3)
    assert logged["verifiers_status"] == ["pass", "fail", "pass"]
    assert logged["verifiers_feedback"][1] == "missing"
    # a new batch (new list objects) is scored again
    rewards.funcs[0](prompts=list(prompts), completions=list(completions), **columns)
    assert scorer.passes == 2
    scorer.close()


def test_task_column_forms_and_unscorable_rows_are_none() -> None:
    rewards = TRLRewards(asynchronous=False, scorer=CountingScorer())
    logged, kw = _logger()
    tasks = [
        json.dumps({"verifier": "rltest.contains", "reference": "4"}),
        {"verifier": "rltest.contains", "reference": "9", "checks": None, "spec": None},
        "{not json",
        {"verifier": "no.such.verifier"},
        json.dumps({"verifier": "rltest.contains"}),  # no reference: the verifier abstains
        json.dumps({"verifier": "rltest.contains", "spec": {"short_chars": "x"}}),
    ]
    completions = ["4", "4", "4", "4", "4", "4"]
    out = rewards.funcs[0](prompts=None, completions=completions, task=tasks, **kw)
    assert out == [1.0, 0.0, None, None, None, None]
    assert logged["verifiers_status"] == ["pass", "fail", "error", "error", "skipped", "error"]
    assert "not valid JSON" in logged["verifiers_feedback"][2]
    assert "no.such.verifier" in logged["verifiers_feedback"][3]
    assert logged["verifiers/error/bad_input"] == pytest.approx(3 / 6)
    rewards.close()
    rewards.scorer.close()


def test_verifier_spec_reference_columns_and_chat_completions() -> None:
    rewards = TRLRewards(asynchronous=False, reference_column="answer", scorer=CountingScorer())
    completions = [
        [{"role": "assistant", "content": "it is 7"}],
        [{"role": "assistant", "content": "it is 8"}],
    ]
    prompts = [[{"role": "user", "content": "q"}]] * 2
    out = rewards.funcs[0](
        prompts=prompts,
        completions=completions,
        verifier=["rltest.contains", "rltest.contains"],
        spec=['{"short_chars": 3}', None],
        answer=["7", "7"],
    )
    assert out == [1.0, 0.0]
    items = rewards.items(
        prompts, completions, {"verifier": ["rltest.contains"] * 2, "answer": ["7", "7"]}
    )
    assert all(isinstance(i, dict) and i["task"]["reference"] == "7" for i in items)
    rewards.scorer.close()


def test_no_task_and_no_default_is_a_bad_input_row() -> None:
    rewards = TRLRewards(asynchronous=False, scorer=CountingScorer())
    assert rewards.funcs[0](prompts=["p"], completions=["c"]) == [None]
    rewards.scorer.close()


def test_async_functions_share_one_pass() -> None:
    scorer = CountingScorer()
    rewards = TRLRewards(verifier="rltest.contains", components=["hit"], scorer=scorer)
    logged, kw = _logger()
    prompts, completions = ["a", "b"], ["4", "x"]
    columns = {"reference": ["4", "4"], **kw}

    async def run() -> list[list[float | None]]:
        return list(
            await asyncio.gather(
                *(f(prompts=prompts, completions=completions, **columns) for f in rewards.funcs)
            )
        )

    from trl.trainer.utils import is_async_callable  # how TRL decides to await a reward

    assert all(is_async_callable(f) for f in rewards.funcs)
    assert asyncio.run(run()) == [[1.0, 0.0], [1.0, 0.0]]
    assert scorer.passes == 1
    assert logged["verifiers_status"] == ["pass", "fail"]
    scorer.close()


def test_error_result_is_none_never_zero() -> None:
    rewards = TRLRewards(asynchronous=False, scorer=CountingScorer())
    task = json.dumps({"verifier": "rltest.slow", "spec": {"sleep_s": 0, "fail": True}})
    assert rewards.funcs[0](prompts=["p"], completions=["c"], task=[task]) == [None]
    rewards.scorer.close()


# -- a real GRPOTrainer run ------------------------------------------------------------------


@pytest.mark.rl
@pytest.mark.parametrize("asynchronous", [True, False])
def test_real_grpo_trainer_run(tmp_path: Any, asynchronous: bool) -> None:
    tiny_trl.offline()
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from datasets import Dataset

    torch.manual_seed(0)
    model, tokenizer = tiny_trl.model(), tiny_trl.tokenizer()
    prompts = [f"What is {a} + {b}? The answer is" for a, b in [(1, 1), (2, 2), (1, 2), (0, 0)]]

    def checks(reference: int) -> str:  # the built-in answer verifiers, composed
        return json.dumps(
            {
                "checks": [
                    {"verifier": "format.regex", "name": "format"},
                    {"verifier": "answer.numeric", "name": "numeric"},
                ],
                "reference": reference,
            }
        )

    tasks = [
        checks(2),
        checks(4),
        json.dumps({"verifier": "rltest.contains", "reference": " "}),
        json.dumps({"verifier": "no.such.verifier"}),  # unscorable: None for all its generations
    ]
    dataset = Dataset.from_dict({"prompt": prompts, "task": tasks})
    rewards = TRLRewards(components=["format", "numeric"], asynchronous=asynchronous)
    seen: list[tuple[list[str], list[float | None]]] = []
    main = rewards.funcs[0]
    if asynchronous:

        async def recorder(**kwargs: Any) -> list[float | None]:
            out = await main(**kwargs)
            seen.append((list(kwargs["task"]), out))
            return out
    else:

        def recorder(**kwargs: Any) -> list[float | None]:  # type: ignore[misc]
            out = main(**kwargs)
            seen.append((list(kwargs["task"]), out))
            return out

    recorder.__name__ = main.__name__
    args = GRPOConfig(**tiny_trl.trainer_args(tmp_path, reward_weights=rewards.weights))
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[recorder, *rewards.funcs[1:]],
        args=args,
        train_dataset=dataset,
    )
    try:
        trainer.train()
    finally:
        rewards.close()
    history = [row for row in trainer.state.log_history if "rewards/verifiers/mean" in row]
    assert len(history) == 3
    for row in history:
        # the optimised reward is the verifier reward alone (components have weight 0)
        assert row["reward"] == pytest.approx(row["rewards/verifiers/mean"], abs=1e-6)
        for key in ("verifiers/status/fail", "verifiers/error/bad_input"):
            assert not math.isnan(row[key])
        # a component's mean is NaN at a step where no sampled row has it; never missing
        assert "rewards/verifiers/format/mean" in row and "rewards/verifiers/numeric/mean" in row
    for key in ("rewards/verifiers/format/mean", "rewards/verifiers/numeric/mean"):
        assert any(not math.isnan(row[key]) for row in history)
    bad_task = tasks[3]
    rows = [(t, r) for batch_tasks, out in seen for t, r in zip(batch_tasks, out, strict=True)]
    assert len(rows) == 3 * 8
    assert any(t == bad_task for t, _ in rows), "the unscorable prompt was never sampled"
    for t, r in rows:
        if t == bad_task:
            assert r is None
        else:
            assert r is not None and 0.0 <= r <= 1.0
    assert any(r["verifiers/status/error"] > 0 for r in history)


def brevity(completions: list[Any], **kwargs: Any) -> list[float]:
    """A second reward that every row gets: what made TRL count abstained rows as scored."""
    return [1.0 / (1.0 + len(str(c))) for c in completions]


def _spy_advantages(trainer: Any) -> list[tuple[list[str], list[float]]]:
    """Record (task column, advantages) of every batch TRL scores, from TRL's own method."""
    captured: list[tuple[list[str], list[float]]] = []
    original = trainer._generate_and_score_completions

    def spy(inputs: list[dict[str, Any]]) -> Any:
        out = original(inputs)
        captured.append(([x["task"] for x in inputs], out["advantages"].flatten().tolist()))
        return out

    trainer._generate_and_score_completions = spy
    return captured


@pytest.mark.rl
@pytest.mark.parametrize(
    ("trainer_name", "guarded"), [("grpo", True), ("rloo", True), ("grpo", False)]
)
def test_abstain_is_zero_advantage_beside_other_reward_functions(
    tmp_path: Any, trainer_name: str, guarded: bool
) -> None:
    """Real GRPOTrainer/RLOOTrainer runs: with ``guard``, a row the verifier could not judge
    gets advantage 0 even though another reward function scores it; unguarded (the trap),
    TRL counts the row as scored and hands it a non-zero advantage."""
    tiny_trl.offline()
    import torch
    from trl import GRPOConfig, GRPOTrainer, RLOOConfig, RLOOTrainer

    from datasets import Dataset

    torch.manual_seed(0)
    model, tokenizer = tiny_trl.model(), tiny_trl.tokenizer()
    good = json.dumps({"verifier": "rltest.contains", "reference": " "})
    bad = json.dumps({"verifier": "no.such.verifier"})  # every generation of it errors
    prompts = [f"What is {a} + {b}? The answer is" for a, b in [(1, 1), (2, 2), (1, 2), (0, 0)]]
    dataset = Dataset.from_dict({"prompt": prompts, "task": [good, good, good, bad]})
    rewards = TRLRewards(asynchronous=True, settings=EngineSettings(sandbox="none", workers=1))
    other = rewards.guard(brevity) if guarded else brevity
    common = tiny_trl.trainer_args(
        tmp_path,
        reward_weights=[1.0, 1.0],
        beta=0.0,  # no reference model (a tiny model built from a config has no path)
    )
    config_cls, trainer_cls = (
        (GRPOConfig, GRPOTrainer) if trainer_name == "grpo" else (RLOOConfig, RLOOTrainer)
    )
    trainer = trainer_cls(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[rewards.funcs[0], other],
        args=config_cls(**common),
        train_dataset=dataset,
    )
    captured = _spy_advantages(trainer)
    try:
        trainer.train()
    finally:
        rewards.close()
    rows = [(t, a) for tasks, adv in captured for t, a in zip(tasks, adv, strict=True)]
    assert rows and all(math.isfinite(a) for _, a in rows)
    bad_rows = [a for t, a in rows if t == bad]
    assert bad_rows, "the unscorable prompt was never sampled"
    if guarded:
        assert all(a == 0.0 for a in bad_rows)
    else:  # the documented trap this guards against
        assert any(a != 0.0 for a in bad_rows)


def test_reward_functions_pickle_for_async_grpo() -> None:
    """TRL's AsyncGRPO pickles ``reward_funcs`` into a spawned process."""
    import pickle

    rewards = TRLRewards(
        verifier="rltest.contains",
        components=["hit"],
        asynchronous=False,
        settings=EngineSettings(sandbox="none", workers=1),
    )
    funcs = pickle.loads(pickle.dumps([*rewards.funcs, rewards.guard(brevity)]))
    rewards.close()
    main, hit, other = funcs
    assert [f.__name__ for f in funcs] == ["verifiers", "verifiers/hit", "brevity"]
    completions = ["has 5", "no"]
    refs = ["5", None]  # the second row: no reference, skipped
    try:
        assert main(prompts=None, completions=completions, reference=refs) == [1.0, None]
        assert hit(prompts=None, completions=completions, reference=refs) == [1.0, None]
        values = other(prompts=None, completions=completions, reference=refs)
        assert values[0] == pytest.approx(1 / 6) and values[1] is None
    finally:
        main.owner.close()
