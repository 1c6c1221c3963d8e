"""A rank-aware reward function for DeepSpeed-style training loops (DeepSpeed-Chat and kin).

``reward_fn(prompts, responses) -> (rewards, valid)``: two 1-D tensors on the caller's
device, ``rewards`` float32 and ``valid`` bool. ``valid[i]`` is False where the verifier could
not judge (``error``) or abstained (``skipped``); there ``rewards[i]`` holds ``fill`` (NaN by
default, so a loop that forgets the mask fails loudly instead of training on a fake 0). Use
``torch.where(valid, rewards, baseline)`` or drop those samples.

With ``torch.distributed`` initialised (``deepspeed.init_distributed()``):

- ``inputs="local"`` (default): each rank passes *its own* samples and, by default
  (``gather=False``), gets back the rewards of exactly those samples, position for position.
  That is what DeepSpeed-Chat-style loops index: ``reward_score[i]`` belongs to the rank's
  local sample ``i``. The other mode is named ``gather=True``: every rank gets the whole
  batch's rewards concatenated in rank order (ranks may hold different counts), for loops
  that normalise over the global batch themselves. (The old default was ``gather=True``:
  under per-local-sample indexing every rank after rank 0 trained on rank 0's rewards.)
- ``inputs="replicated"``: every rank passes *the same full batch*; each scores one contiguous
  shard and, by default (``gather=True``), the shards are gathered so every rank sees the
  full batch (``gather=False``: each rank gets its shard's values only).

Gathering runs on the process group's device (CUDA for NCCL, CPU for gloo); the result is
moved to ``device``. Every rank must call the function the same number of times (it is a
collective).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from verifiers.engine import EngineSettings
from verifiers.errors import MissingDependency
from verifiers.types import Result

from ._rows import MISSING, TaskDefaults, make_item, result_reward
from ._scorer import MachineConcurrency, Scorer, ScorerOwner

if TYPE_CHECKING:
    import torch

__all__ = ["DeepSpeedReward"]


class Columns(TypedDict, total=False):
    """Per-sample columns besides the responses (each as long as ``responses``)."""

    tasks: Sequence[Any] | None
    """Each sample's task (dict, JSON string or :class:`~verifiers.Task`)."""
    references: Sequence[Any] | None
    """Each sample's reference for the default verifier."""


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingDependency("torch", "rl") from None
    return torch


class DeepSpeedReward(ScorerOwner):
    """``reward_fn(prompts, responses, tasks=None, references=None) -> (rewards, valid)``.

    Args:
        verifier: Default verifier for samples without their own task.
        spec: Its settings.
        checks: Several verifiers instead of one (``Task.checks`` dicts).
        inputs: ``"local"`` (each rank its own samples) or ``"replicated"`` (same batch
            everywhere, sharded for scoring).
        gather: Return the whole batch on every rank (True) or this rank's part (False).
            Default (``None``): False for ``inputs="local"``, True for ``"replicated"``.
        fill: The reward value at invalid positions (NaN unless told).
        device: Where the tensors go (default: the current CUDA device when the process
            group uses NCCL, else CPU). Overridable per call.
        settings: Engine settings. machine_concurrency / machine_key: see
            :class:`~verifiers.rl_adapters.Scorer`.
        scorer: Use this scorer instead of making one.
    """

    def __init__(
        self,
        *,
        verifier: str | None = None,
        spec: Mapping[str, Any] | None = None,
        checks: list[dict[str, Any]] | None = None,
        inputs: Literal["local", "replicated"] = "local",
        gather: bool | None = None,
        fill: float = math.nan,
        device: Any = None,
        settings: EngineSettings | None = None,
        machine_concurrency: MachineConcurrency = "auto",
        machine_key: str = "default",
        scorer: Scorer | None = None,
    ) -> None:
        if inputs not in ("local", "replicated"):
            raise ValueError(f"inputs must be 'local' or 'replicated', got {inputs!r}")
        self.defaults = TaskDefaults(verifier=verifier, spec=spec, checks=checks)
        self.inputs = inputs
        self.gather = (inputs == "replicated") if gather is None else gather
        self.fill = fill
        self.device = device
        self._use_scorer(
            scorer, settings, machine_concurrency=machine_concurrency, machine_key=machine_key
        )
        self.last_results: list[Result] = []
        """This rank's results from the last call (feedback, components, errors)."""

    def items(
        self, prompts: Sequence[Any] | None, responses: Sequence[Any], **columns: Unpack[Columns]
    ) -> list[dict[str, Any] | Result]:
        """Trajectories (or ready ``bad_input`` results) for the given samples."""
        tasks, references = columns.get("tasks"), columns.get("references")
        return [
            make_item(
                completion=responses[i],
                prompt=prompts[i] if prompts is not None else None,
                task=tasks[i] if tasks is not None else MISSING,
                reference=references[i] if references is not None else MISSING,
                defaults=self.defaults,
            )
            for i in range(len(responses))
        ]

    def __call__(
        self,
        prompts: Sequence[Any] | None,
        responses: Sequence[Any],
        *,
        device: Any = None,
        **columns: Unpack[Columns],
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Score, gather as configured, and return ``(rewards, valid)`` on ``device``.

        Raises:
            ValueError: ``prompts``/``tasks``/``references`` and ``responses`` differ in length.
        """
        torch = _torch()
        tasks, references = columns.get("tasks"), columns.get("references")
        n = len(responses)
        for name, seq in (("prompts", prompts), ("tasks", tasks), ("references", references)):
            if seq is not None and len(seq) != n:
                raise ValueError(f"{name} has {len(seq)} entries, responses has {n}")
        dist = torch.distributed
        distributed = dist.is_available() and dist.is_initialized()
        rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
        lo, hi = 0, n
        if self.inputs == "replicated" and world > 1:
            per = -(-n // world)
            lo, hi = min(rank * per, n), min((rank + 1) * per, n)

        def part(seq: Sequence[Any] | None) -> Sequence[Any] | None:
            return None if seq is None else seq[lo:hi]

        items = self.items(
            part(prompts), responses[lo:hi], tasks=part(tasks), references=part(references)
        )
        results = self.scorer.score(items)
        self.last_results = results
        comm = self._comm_device(torch, distributed)
        values = [result_reward(r) for r in results]
        rewards = torch.tensor(
            [self.fill if v is None else v for v in values], dtype=torch.float32, device=comm
        )
        valid = torch.tensor([v is not None for v in values], dtype=torch.bool, device=comm)
        if distributed and world > 1 and self.gather:
            rewards, valid = _all_gather(torch, rewards, valid, world, comm)
        target = device if device is not None else self.device
        if target is None:
            target = comm
        return rewards.to(target), valid.to(target)

    @staticmethod
    def _comm_device(torch: Any, distributed: bool) -> Any:
        if distributed and torch.distributed.get_backend() == "nccl":
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")


def _all_gather(torch: Any, rewards: Any, valid: Any, world: int, comm: Any) -> tuple[Any, Any]:
    """Concatenate every rank's ``(rewards, valid)`` in rank order; counts may differ."""
    dist = torch.distributed
    count = torch.tensor([rewards.numel()], dtype=torch.int64, device=comm)
    counts = [torch.zeros_like(count) for _ in range(world)]
    dist.all_gather(counts, count)
    sizes = [int(c.item()) for c in counts]
    longest = max(sizes) if sizes else 0
    # one padded float tensor per rank: rewards in row 0, validity (0/1) in row 1
    packed = torch.zeros((2, longest), dtype=torch.float32, device=comm)
    packed[0, : rewards.numel()] = rewards
    packed[1, : valid.numel()] = valid.to(torch.float32)
    gathered = [torch.zeros_like(packed) for _ in range(world)]
    dist.all_gather(gathered, packed)
    all_rewards = torch.cat([g[0, :size] for g, size in zip(gathered, sizes, strict=True)])
    all_valid = torch.cat([g[1, :size] for g, size in zip(gathered, sizes, strict=True)]) > 0.5
    return all_rewards, all_valid
