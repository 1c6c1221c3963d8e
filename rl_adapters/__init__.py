"""Adapters that hand ``verifiers`` rewards to RL trainers, and the reward server.

Each trainer has its own module, imported on first use so that ``import verifiers`` (and
this package) stays free of torch and FastAPI:

- :mod:`verifiers.rl_adapters.trl`: :class:`~verifiers.rl_adapters.trl.TRLRewards`, reward
  functions for TRL's ``GRPOTrainer``/``RLOOTrainer``;
- :mod:`verifiers.rl_adapters.deepspeed`: a rank-aware ``reward_fn(prompts, responses) ->
  (rewards, valid)`` for DeepSpeed-style loops;
- :mod:`verifiers.rl_adapters.verl_manager`: ``VerifiersRewardManager``, a veRL 0.9 reward
  manager (imports veRL);
- :mod:`verifiers.rl_adapters.verl`: ``compute_score`` for veRL's own managers
  (``reward.custom_reward_function``);
- :mod:`verifiers.rl_adapters.openrlhf`: ``reward_func`` for OpenRLHF's ``--reward.remote_url
  file.py`` and the models of its HTTP protocol;
- :mod:`verifiers.rl_adapters.server`: ``verifiers serve`` (FastAPI + uvicorn).

The shared rule: a result the verifier could not judge (``error``) or that abstained
(``skipped``) never becomes a reward of 0, and it gives a zero gradient by the trainer's own
mechanism: TRL gets ``None`` (and ``TRLRewards.guard`` makes the row's other functions
abstain too), veRL and OpenRLHF get the group's judged mean (``_groups``), DeepSpeed loops
get a validity mask. Log keys are a fixed set per run (``_extra``).

Per-machine limit: with several ranks on one host, ``machine_concurrency`` caps the items in
verification across all of them (``flock``-held slot files under ``/dev/shm``); see
:class:`MachineSlots`.
"""

from __future__ import annotations

from ._machine_limit import MachineSlots, default_lock_dir
from ._rows import TaskDefaults, make_item, result_reward
from ._scorer import MachineConcurrency, Scorer

__all__ = [
    "MachineConcurrency",
    "MachineSlots",
    "Scorer",
    "TaskDefaults",
    "default_lock_dir",
    "make_item",
    "result_reward",
]
