"""Zero-gradient abstains for group-baseline trainers: an unjudged sample takes its group's mean.

veRL and OpenRLHF have no per-sample "abstain". Their group estimators (GRPO, RLOO, Dr.GRPO,
REINFORCE with a group baseline, OpenRLHF's ``group_norm``/``rloo``/``reinforce_baseline``)
subtract the group's mean reward (or the leave-one-out mean) from each sample's reward. A NaN
there makes the whole group's advantages NaN, the mini-batch loss NaN, and the optimizer step
is skipped; a 0.0 there is a silent "wrong answer". The value that gives an unjudged sample
exactly zero advantage under a mean baseline is **the mean of its group's judged members**:
the group mean does not move, its own advantage is ``m - m = 0`` (GRPO, group_norm, Dr.GRPO,
mean baseline) and its leave-one-out advantage is ``m - m = 0`` too (RLOO). The judged members
keep the sign and rank of their advantages (their scale changes by at most the
``n / (n - 1)`` vs ``k / (k - 1)`` factor of RLOO, or the smaller std under GRPO). A group with
no judged member gets 0.0 everywhere: every advantage is 0.

Trainers hand rewards over one sample at a time (OpenRLHF: one rollout per request; veRL's
streaming reward loop: one sample per call), so :class:`GroupBaseline` is a rendezvous: each
judged sample adds its reward to its group's tally and returns at once; an unjudged sample
waits until its group has ``size`` members (or ``wait_s`` passed) and then takes the mean of the
judged ones. Only unjudged samples ever wait, and only for their own group's members, which
the trainer is scoring at the same time anyway. A group that never fills (a smaller
validation group, a crashed rollout) is released at the deadline with the mean of the members
it has; ``timeouts`` counts those, so they show in the logs.

Everything here runs on one event loop (the caller's: the server's, a veRL reward worker's,
the adapter's :class:`~verifiers.rl_adapters.Scorer` loop); nothing blocks it.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

__all__ = ["GroupBaseline", "group_means"]

_MAX_OPEN_GROUPS = 65_536


@dataclass
class _Group:
    size: int
    seen: int = 0
    total: float = 0.0
    judged: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def fill(self) -> float:
        return self.total / self.judged if self.judged else 0.0


def group_means(keys: Sequence[Hashable], rewards: Sequence[float | None]) -> list[float]:
    """Every reward, with each ``None`` replaced by the mean of its key's judged rewards.

    The whole-batch form of :class:`GroupBaseline` (where every member is at hand, as in
    veRL's ``assemble_rm_scores``). A key with no judged reward fills 0.0.
    """
    totals: dict[Hashable, list[float]] = {}
    for key, reward in zip(keys, rewards, strict=True):
        tally = totals.setdefault(key, [0.0, 0.0])
        if reward is not None:
            tally[0] += reward
            tally[1] += 1.0
    out: list[float] = []
    for key, reward in zip(keys, rewards, strict=True):
        if reward is not None:
            out.append(reward)
        else:
            total, count = totals[key]
            out.append(total / count if count else 0.0)
    return out


class GroupBaseline:
    """The rendezvous that gives unjudged samples their group's judged mean (module docstring).

    Args:
        size: Members per group (the trainer's samples per prompt: veRL
            ``actor_rollout_ref.rollout.n``, OpenRLHF ``--rollout.n_samples_per_prompt``).
        wait_s: Longest time an unjudged sample waits for its group to fill.

    Raises:
        ValueError: ``size`` < 1 or ``wait_s`` < 0.
    """

    def __init__(self, size: int, *, wait_s: float = 60.0) -> None:
        if size < 1:
            raise ValueError(f"group size must be >= 1, got {size}")
        if wait_s < 0:
            raise ValueError(f"group wait must be >= 0 seconds, got {wait_s}")
        self.size = size
        self.wait_s = wait_s
        self._open: OrderedDict[Hashable, _Group] = OrderedDict()
        self.timeouts = 0
        """Unjudged samples released at the deadline with a partial group."""
        self.filled = 0
        """Unjudged samples given their group's mean so far."""

    def _join(self, key: Hashable) -> _Group:
        group = self._open.get(key)
        if group is None:
            if len(self._open) >= _MAX_OPEN_GROUPS:  # stay bounded: release the oldest
                _, oldest = self._open.popitem(last=False)
                oldest.done.set()
            group = _Group(self.size)
            self._open[key] = group
        group.seen += 1
        if group.seen >= group.size:
            # Full: later members with the same key (a repeated prompt) start a new group.
            del self._open[key]
        return group

    async def settle(
        self, keys: Sequence[Hashable], rewards: Sequence[float | None]
    ) -> list[float]:
        """The value each sample hands the trainer: its reward, or its group's judged mean.

        Every member joins its group first (so members of one call see each other), then the
        unjudged ones wait for their groups concurrently.
        """
        groups = [self._join(key) for key in keys]
        for group, reward in zip(groups, rewards, strict=True):
            if reward is not None:
                group.total += reward
                group.judged += 1
        for group in groups:
            if group.seen >= group.size:
                group.done.set()
        deadline = time.monotonic() + self.wait_s

        async def fill(group: _Group) -> float:
            if not group.done.is_set():
                try:
                    await asyncio.wait_for(group.done.wait(), max(deadline - time.monotonic(), 0))
                except TimeoutError:
                    self.timeouts += 1
            self.filled += 1
            return group.fill()

        waits = [fill(g) for g, r in zip(groups, rewards, strict=True) if r is None]
        fills = iter(await asyncio.gather(*waits)) if waits else iter(())
        return [r if r is not None else next(fills) for r in rewards]
