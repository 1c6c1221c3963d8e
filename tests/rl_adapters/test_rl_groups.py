"""The group rendezvous that gives unjudged samples zero advantage (``_groups``)."""

from __future__ import annotations

import asyncio

import pytest
import torch
from verifiers.rl_adapters._groups import GroupBaseline, group_means


def _grpo(rewards: list[float]) -> torch.Tensor:
    t = torch.tensor(rewards)
    return (t - t.mean()) / (t.std() + 1e-6)


def _rloo(rewards: list[float]) -> torch.Tensor:
    t = torch.tensor(rewards)
    return t - (t.sum() - t) / (len(rewards) - 1)


@pytest.mark.parametrize(
    "rewards",
    [
        [1.0, 0.0, None, 0.5],
        [None, None, 1.0, 1.0],
        [None, None, None, None],
        [0.25, None, 0.75, 0.0, 1.0, None, 0.5, 0.5],
    ],
)
def test_group_mean_fill_is_zero_advantage_under_grpo_and_rloo(
    rewards: list[float | None],
) -> None:
    filled = group_means(["g"] * len(rewards), rewards)
    for estimator in (_grpo, _rloo):
        adv = estimator(filled)
        assert torch.isfinite(adv).all()
        for i, r in enumerate(rewards):
            if r is None:
                assert adv[i].item() == pytest.approx(0.0, abs=1e-5)


def test_one_sample_per_call_rendezvous() -> None:
    """OpenRLHF's shape: each rollout its own call; the unjudged one waits for its group."""

    async def run() -> list[float]:
        groups = GroupBaseline(4, wait_s=10)
        calls = [groups.settle(["p"], [r]) for r in (None, 1.0, 0.0)]
        early = asyncio.gather(*calls)
        await asyncio.sleep(0.05)
        assert not early.done()  # the unjudged member waits for the fourth
        last = await groups.settle(["p"], [0.5])
        return [v[0] for v in await early] + last

    assert asyncio.run(run()) == [0.5, 1.0, 0.0, 0.5]


def test_a_group_that_never_fills_is_released_at_the_deadline() -> None:
    async def run() -> tuple[list[float], int]:
        groups = GroupBaseline(8, wait_s=0.1)
        out = await groups.settle(["a", "a", "a"], [1.0, None, 0.0])
        return out, groups.timeouts

    out, timeouts = asyncio.run(run())
    assert out == [1.0, 0.5, 0.0] and timeouts == 1


def test_repeated_key_starts_a_new_group_once_full() -> None:
    async def run() -> list[float]:
        groups = GroupBaseline(2, wait_s=1)
        first = await groups.settle(["k", "k"], [1.0, None])
        second = await groups.settle(["k", "k"], [0.0, None])
        return first + second

    assert asyncio.run(run()) == [1.0, 1.0, 0.0, 0.0]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="group size"):
        GroupBaseline(0)
    with pytest.raises(ValueError, match="wait"):
        GroupBaseline(2, wait_s=-1)
