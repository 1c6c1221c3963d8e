"""veRL 0.9's own reward loop fed real ``DataProto`` batches: its naive and dapo managers with
our ``compute_score``, and our ``VerifiersRewardManager`` loaded through veRL's importlib hook.

The path is veRL's: ``RewardLoopManager`` (the single controller) starts real Ray actors of
``RewardLoopWorker``, which build the reward manager with ``load_reward_manager`` from the
config; ``compute_rm_score`` chunks the batch over the workers and stacks
``reward_extra_info`` by the keys of sample 0 (the step that crashed on code rollouts). The
streaming path (the agent loop calling ``worker.compute_score.remote`` per sample) is driven
the same way. Then veRL's own GRPO estimator turns the scores into advantages.

The batch: two prompts x 4 samples of ``code.tests`` in the local (bubblewrap) sandbox, one in
8 erroring (a task the verifier cannot run: ``bad_input``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import ray
import torch
from omegaconf import OmegaConf
from rl_helpers import ADD_RESPONSES, ADD_TASK, BROKEN_TASK
from verl import DataProto
from verl.experimental.reward_loop.reward_loop import RewardLoopManager
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage
from verl_helpers import OUR_MANAGER, save_tokenizer, verl_batch, verl_config

pytestmark = [pytest.mark.rl, pytest.mark.bwrap, pytest.mark.slow]

TASK = ADD_TASK
BROKEN = BROKEN_TASK
RESPONSES = ADD_RESPONSES
TASKS = [TASK] * 7 + [BROKEN]  # 1 in 8 errors; it is the last of group 2
UIDS = ["g1"] * 4 + ["g2"] * 4
ENGINE = {"sandbox": "local", "timeout_s": 60, "concurrency": 4, "cache": False}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return save_tokenizer(tmp_path_factory.mktemp("tok"))


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _config(tokenizer_dir: str, manager: dict[str, Any], **reward: Any) -> Any:
    return verl_config(tokenizer_dir, manager, **reward)


def _batch(tokenizer_dir: str) -> DataProto:
    return verl_batch(tokenizer_dir, RESPONSES, TASKS, UIDS)


def _cli_rewards(tmp_path: Path) -> list[float | None]:
    """What ``verifiers score`` gives the same trajectories."""
    from verifiers.cli import main

    src = tmp_path / "in.jsonl"
    out = tmp_path / "out.jsonl"
    with src.open("w", encoding="utf-8") as fh:
        for i, (r, t) in enumerate(zip(RESPONSES, TASKS, strict=True)):
            fh.write(json.dumps({"id": str(i), "completion": r, "task": t}) + "\n")
    assert main(["score", str(src), "-o", str(out), "-q", "--no-cache", "--sandbox", "local"]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return [row["reward"] for row in rows]


def _scores(output: DataProto) -> list[float]:
    return [float(x) for x in output.batch["rm_scores"].sum(-1)]


def _advantages(output: DataProto, batch: DataProto) -> torch.Tensor:
    prompt_len = batch.batch["prompts"].size(1)
    response_mask = batch.batch["attention_mask"][:, prompt_len:]
    adv, _ = compute_grpo_outcome_advantage(
        token_level_rewards=output.batch["rm_scores"],
        response_mask=response_mask,
        index=batch.non_tensor_batch["uid"],
    )
    return adv.sum(-1)


def test_our_manager_colocated_batch(ray_cluster: None, tokenizer_dir: str, tmp_path: Path) -> None:
    config = _config(
        tokenizer_dir, OUR_MANAGER, reward_kwargs={"components": ["tests_passed"], **ENGINE}
    )
    manager = RewardLoopManager(config)
    batch = _batch(tokenizer_dir)
    output = manager.compute_rm_score(batch)
    scores = _scores(output)
    expected = _cli_rewards(tmp_path)
    assert expected[7] is None  # the broken task is an error, not a score
    assert scores[:7] == expected[:7]  # judged items: exactly what `verifiers score` says
    group2 = [s for s, e in zip(scores[4:7], expected[4:7], strict=True) if e is not None]
    assert scores[7] == pytest.approx(sum(group2) / len(group2))  # its group's judged mean
    advantages = _advantages(output, batch)
    assert torch.isfinite(advantages).all()
    assert advantages[7].item() == pytest.approx(0.0, abs=1e-6)
    info = output.non_tensor_batch
    keys = output.meta_info["reward_extra_keys"]
    assert "tests_passed" in keys and "verifiers_error_bad_input" in keys
    assert info["verifiers_valid"].tolist() == [1.0] * 7 + [0.0]
    assert sum(info["verifiers_error_bad_input"]) == 1.0


def test_our_manager_streaming_path(ray_cluster: None, tokenizer_dir: str) -> None:
    """The agent loop's path: one ``compute_score.remote`` per sample, concurrently."""
    config = _config(tokenizer_dir, OUR_MANAGER, reward_kwargs=dict(ENGINE))
    manager = RewardLoopManager(config)
    worker = manager.reward_loop_workers[0]
    batch = _batch(tokenizer_dir)
    outs = ray.get([worker.compute_score.remote(batch[i : i + 1]) for i in range(len(batch))])
    scores = [o["reward_score"] for o in outs]
    assert all(np.isfinite(scores))
    assert scores[7] == pytest.approx(sum(scores[4:7]) / 3)
    keys = {tuple(o["reward_extra_info"]) for o in outs}
    assert len(keys) == 1  # one key set for errored and judged samples alike


@pytest.mark.parametrize("components", [None, ["tests_passed"]])
@pytest.mark.parametrize("name", ["naive", "dapo"])
def test_default_managers_with_compute_score(
    ray_cluster: None, tokenizer_dir: str, name: str, components: list[str] | None
) -> None:
    config = _config(
        tokenizer_dir,
        {"source": "register", "name": name, "module": {"path": None, "name": "x"}},
    )
    config.reward.custom_reward_function = {
        "path": "pkg://verifiers.rl_adapters.verl",
        "name": "compute_score_async",
        "reward_kwargs": {"components": components, "invalid_score": -1.0, **ENGINE},
    }
    manager = RewardLoopManager(config)
    output = manager.compute_rm_score(_batch(tokenizer_dir))  # used to raise KeyError
    keys = output.meta_info["reward_extra_keys"]
    assert {"score", "verifiers_valid", "verifiers_error_bad_input"} <= set(keys)
    assert ("tests_passed" in keys) == bool(components)
    assert output.non_tensor_batch["verifiers_valid"].tolist() == [1.0] * 7 + [0.0]
    scores = _scores(output)
    assert scores[7] == -1.0 and all(np.isfinite(scores))  # the explicit invalid_score


def test_manager_refuses_settings_it_cannot_honour(tokenizer_dir: str) -> None:
    from transformers import AutoTokenizer
    from verifiers.rl_adapters.verl_manager import VerifiersRewardManager

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = _config(tokenizer_dir, OUR_MANAGER, reward_kwargs={"verifer": "code.tests"})
    with pytest.raises(ValueError, match="unknown keys \\['verifer'\\]"):
        VerifiersRewardManager(config, tok, None)
    config = _config(tokenizer_dir, OUR_MANAGER, reward_kwargs={})
    config.reward.num_workers = 8
    with pytest.raises(ValueError, match="reward.num_workers=1"):
        VerifiersRewardManager(config, tok, None)
    for ray_kwargs, message in (
        ({"ray": {"num_actor": 2}}, "ray has unknown keys \\['num_actor'\\]"),
        ({"ray": "auto"}, "must be true, false or a mapping"),
        ({"ray": True, "machine_concurrency": 4}, "ray.cluster_concurrency"),
    ):
        config = _config(tokenizer_dir, OUR_MANAGER, reward_kwargs=ray_kwargs)
        with pytest.raises(ValueError, match=message):
            VerifiersRewardManager(config, tok, None)


def _estimator_advantages(name: str, filled: list[float], lengths: list[int]) -> torch.Tensor:
    """Per-sample advantages from veRL's own registered estimator ``name``."""
    import inspect

    from verl.trainer.config import AlgoConfig
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    fn = get_adv_estimator_fn(name)
    width = max(lengths)
    rewards = torch.zeros(len(filled), width)
    mask = torch.zeros(len(filled), width)
    for i, (length, value) in enumerate(zip(lengths, filled, strict=True)):
        mask[i, :length] = 1
        rewards[i, length - 1] = value
    available = {
        "token_level_rewards": rewards,
        "response_mask": mask,
        "index": np.array(UIDS, dtype=object),
        "values": torch.zeros(len(filled), width),
        "reward_baselines": torch.zeros(len(filled)),
        "config": AlgoConfig(),
        "gamma": 1.0,
        "lam": 1.0,
    }
    params = inspect.signature(fn).parameters
    advantages, _ = fn(**{k: v for k, v in available.items() if k in params})
    return advantages.sum(-1)


def _estimators() -> list[str]:
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY

    # the optimal-token-baseline estimators need the policy's log-probs: no reward-only form
    return sorted(n for n in ADV_ESTIMATOR_REGISTRY if "optimal_token_baseline" not in n)


@pytest.mark.parametrize("name", _estimators())
def test_abstain_fill_is_zero_advantage_exactly_where_the_manager_allows_it(name: str) -> None:
    """The manager's estimator list, checked against every estimator veRL 0.9 registers: the
    group-mean fill gives the unjudged samples zero advantage under the allowed ones (and
    the manager starts), and not under the others (and the manager refuses to start)."""
    from verifiers.rl_adapters._groups import group_means
    from verifiers.rl_adapters.verl_manager import ZERO_ADVANTAGE_ESTIMATORS, manager_options

    rewards: list[float | None] = [1.0, 0.0, None, 1.0, 0.0, 0.0, 1.0, None]
    filled = group_means(UIDS, rewards)
    adv = _estimator_advantages(name, filled, lengths=[6, 2, 3, 5, 1, 4, 6, 2])
    unjudged = [float(adv[i]) for i, r in enumerate(rewards) if r is None]
    zero = all(abs(a) < 1e-6 for a in unjudged)
    assert zero == (name in ZERO_ADVANTAGE_ESTIMATORS), (name, unjudged)
    config = OmegaConf.create(
        {"algorithm": {"adv_estimator": name}, "reward": {"num_workers": 1, "reward_kwargs": {}}}
    )
    if zero:
        manager_options(config)
    else:
        with pytest.raises(ValueError, match=f"adv_estimator={name}.*allow_nonzero_abstain"):
            manager_options(config)
        config.reward.reward_kwargs = {"allow_nonzero_abstain": True}
        manager_options(config)  # accepted knowingly: finite, never NaN
        assert all(np.isfinite(float(a)) for a in adv)


def test_manager_takes_verls_default_gae_when_no_estimator_is_set() -> None:
    from verifiers.rl_adapters.verl_manager import manager_options

    config = OmegaConf.create({"reward": {"num_workers": 1, "reward_kwargs": {}}})
    with pytest.raises(ValueError, match="adv_estimator=gae"):
        manager_options(config)
