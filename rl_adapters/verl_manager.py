"""A veRL 0.9 reward manager: batches through one warm engine, abstains with zero advantage.

Load it with veRL's own ``importlib`` hook (it subclasses veRL's ``RewardManagerBase``)::

    reward.reward_manager.source=importlib
    reward.reward_manager.name=VerifiersRewardManager
    reward.reward_manager.module.path=pkg://verifiers.rl_adapters.verl_manager
    reward.num_workers=1
    +reward.reward_kwargs.verifier=code.tests            # default for rows without a task
    +reward.reward_kwargs.components=[tests_passed]      # fixed component keys to log

(no ``reward.custom_reward_function.*`` needed: the manager scores by itself). What it does:

- **One warm engine.** ``run_single`` calls that arrive together (veRL's reward loop starts one
  task per sample) are coalesced into one :class:`~verifiers.rl_adapters.Scorer` call on the
  process-wide engine, so sandboxes stay warm across steps and the engine's own concurrency
  does the parallel work. ``reward.num_workers`` must be 1: the group rendezvous below needs
  every member of a group in one process (veRL sends a sample to a random worker). More
  workers are refused at start with that fix, never silently mis-scored.
- **Zero-gradient abstains.** A sample the verifier could not judge (``error``/``skipped``)
  gets the mean of its group's judged members (group = ``uid``, size =
  ``actor_rollout_ref.rollout.n``; see :mod:`verifiers.rl_adapters._groups`): zero advantage
  under GRPO/RLOO/Dr.GRPO, the group baseline unchanged, no NaN anywhere. It waits for its
  group at most ``group_wait_s`` (default 60). A sample without a ``uid`` has no group and
  gets 0.0 (and still ``verifiers_valid = 0``).
- **A fixed key set** in ``reward_extra_info`` (:mod:`verifiers.rl_adapters._extra`):
  ``verifiers_valid``, ``verifiers_pass``, ``verifiers_skipped``, ``verifiers_error_<kind>``
  and the configured components, identical for every sample, so veRL's stacking by the keys
  of sample 0 never fails. The sums are the counts; a log line per batch (logger
  ``verifiers.verl``) says how many abstained and why.

- **Refused at start** where that cannot hold: ``algorithm.adv_estimator`` outside
  :data:`ZERO_ADVANTAGE_ESTIMATORS` (GAE has no group baseline; REINFORCE++ and kin whiten over
  the batch after the group step), unless ``reward_kwargs.allow_nonzero_abstain=true`` accepts
  the finite group-mean fill; a row that names no verifier while no default is set (the
  first call raises: the dataset's doing, not the model's).

- **Scale out over the cluster** with ``+reward.reward_kwargs.ray={num_actors: 4}`` (or
  ``ray=true`` for one actor per node): the worker then scores through a
  :class:`verifiers.ray.RayScorer` on veRL's own Ray cluster, one warm engine per node, items
  routed by task (a GRPO group lands on one node's cache), a lost node's items retried on
  another, never scored. The manager itself stays the one place where groups meet (so
  ``num_workers`` is still 1); the engine settings of ``reward_kwargs`` are the actors'.
  ``ray`` takes :data:`RAY_KWARGS` (``cpus_per_actor``, ``cluster_concurrency``, ...);
  ``machine_concurrency`` does not apply there (use ``ray.cluster_concurrency``).
- **Episodes** (veRL tools, :mod:`verifiers.rl_adapters.verl_env`): a sample whose rollout
  drove a ``WorkspaceTool`` episode is not re-scored from its text: the episode's final
  result travels in the rollout's ``extra_fields`` (``verifiers_result``) and is what the
  manager rewards, abstains included (group-mean fill, zero advantage). A rollout that opened
  an episode but never finished it (``verifiers_request`` without a result: out of turns,
  never submitted) is the model's ``fail`` (reward 0), never an abstain.

``reward.reward_kwargs`` also takes ``spec``, ``verifiers_by_source``, ``group_wait_s`` and any
:class:`~verifiers.EngineSettings` field (``concurrency``, ``timeout_s``, ``sandbox``, ...).
An unknown key is an error at start.

Tested against veRL 0.9.1 (see docs/adapters.md); veRL is imported only by this module.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Hashable, Mapping
from typing import Any

from verifiers.rl_adapters._extra import extra_keys, extra_values, parse_components
from verifiers.rl_adapters._groups import GroupBaseline
from verifiers.rl_adapters._rows import result_reward
from verifiers.rl_adapters.verl import _SETTING_KEYS, _Rows, _scorer

from verifiers.errors import MissingDependency
from verifiers.types import Result

try:
    from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase
except ImportError as exc:  # pragma: no cover - exercised only without veRL
    raise MissingDependency(exc.name or "verl", "verl") from None

__all__ = ["MANAGER_KWARGS", "RAY_KWARGS", "VerifiersRewardManager"]

log = logging.getLogger("verifiers.verl")

ZERO_ADVANTAGE_ESTIMATORS = frozenset(
    {"grpo", "grpo_vectorized", "rloo", "rloo_vectorized", "gpg", "grpo_passk"}
)
"""veRL estimators under which the group-mean fill is exactly zero advantage (checked through
veRL's own estimator functions in tests/rl_adapters/test_rl_verl_trainer.py). The others
either have no group baseline (``gae``, ``reinforce_plus_plus``, ``remax``: the value function
or a greedy baseline decides) or reweight over the batch after the group step
(``reinforce_plus_plus_baseline`` whitens over the batch, ``opo`` weights by length, ``gdpo``
normalises per reward), so the fill is finite but not zero."""

RAY_KWARGS = frozenset(
    {
        "num_actors",
        "cpus_per_actor",
        "max_in_flight",
        "max_attempts",
        "call_timeout_s",
        "place_timeout_s",
        "cluster_concurrency",
        "limit_name",
        "lease_ttl_s",
        "placement",
        "start_timeout_s",
    }
)
"""The keys ``reward.reward_kwargs.ray`` may hold (:class:`verifiers.ray.RayScorer`'s
arguments; the address is veRL's own cluster, the settings are ``reward_kwargs``'s)."""

MANAGER_KWARGS = frozenset(
    {"verifier", "spec", "verifiers_by_source", "components", "group_wait_s"}
    | {"allow_nonzero_abstain", "ray"}
    | _SETTING_KEYS
    | {"machine_concurrency", "machine_key"}
)
"""The keys ``reward.reward_kwargs`` may hold for this manager."""

_LOG_EVERY_S = 30.0


def _plain(value: Any) -> Any:
    """OmegaConf containers as plain dicts/lists (so they hash, compare and serialise)."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - veRL depends on omegaconf
        return value
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


def manager_options(config: Any) -> dict[str, Any]:
    """``reward.reward_kwargs`` as a plain dict, checked.

    Raises:
        ValueError: an unknown key, ``reward.num_workers`` other than 1, or an estimator under
            which the abstain fill is not zero advantage (:data:`ZERO_ADVANTAGE_ESTIMATORS`)
            without ``allow_nonzero_abstain=true``.
    """
    reward = config.get("reward") if hasattr(config, "get") else None
    raw = _plain(reward.get("reward_kwargs")) if reward is not None else None
    options = dict(raw or {})
    unknown = sorted(set(options) - MANAGER_KWARGS)
    if unknown:
        raise ValueError(
            f"reward.reward_kwargs has unknown keys {unknown} for VerifiersRewardManager; "
            f"known: {sorted(MANAGER_KWARGS)}"
        )
    workers = reward.get("num_workers") if reward is not None else None
    if workers is not None and int(workers) != 1:
        raise ValueError(
            f"VerifiersRewardManager needs reward.num_workers=1 (got {workers}): a group's "
            "samples must reach one process for unjudged ones to get zero advantage; the "
            "engine's own concurrency (reward.reward_kwargs.concurrency) does the parallel work"
        )
    _ray_options(options)
    estimator = _estimator(config)
    if (
        estimator not in ZERO_ADVANTAGE_ESTIMATORS
        and options.get("allow_nonzero_abstain") is not True
    ):
        raise ValueError(
            f"algorithm.adv_estimator={estimator}: VerifiersRewardManager gives an unjudged "
            "sample its group's judged mean, which is zero advantage only under "
            f"{sorted(ZERO_ADVANTAGE_ESTIMATORS)}; under {estimator} it would still move the "
            "policy. Use one of those estimators, or set "
            "+reward.reward_kwargs.allow_nonzero_abstain=true to accept the group-mean fill "
            "(finite, never NaN, but not a zero gradient)"
        )
    return options


def _ray_options(options: Mapping[str, Any]) -> dict[str, Any] | None:
    """``reward_kwargs.ray`` as RayScorer arguments (``None``: no Ray), checked.

    Raises:
        ValueError: not a bool or a mapping, an unknown key, or ``machine_concurrency`` set
            beside it.
    """
    raw = options.get("ray")
    if raw is None or raw is False:
        return None
    if raw is True:
        chosen: dict[str, Any] = {}
    elif isinstance(raw, Mapping):
        chosen = dict(raw)
    else:
        raise ValueError(
            f"reward.reward_kwargs.ray={raw!r}: must be true, false or a mapping of "
            f"RayScorer arguments {sorted(RAY_KWARGS)}"
        )
    unknown = sorted(set(chosen) - RAY_KWARGS)
    if unknown:
        raise ValueError(
            f"reward.reward_kwargs.ray has unknown keys {unknown}; known: {sorted(RAY_KWARGS)}"
        )
    if "machine_concurrency" in options:
        raise ValueError(
            "reward.reward_kwargs.machine_concurrency limits one machine's engine and does not "
            "apply with reward_kwargs.ray (the engines run on the cluster's nodes): use "
            "reward.reward_kwargs.ray.cluster_concurrency for one cluster-wide limit"
        )
    return chosen


def _make_scorer(options: Mapping[str, Any]) -> Any:
    """The worker's scorer: one process-wide engine, or a RayScorer over the cluster."""
    ray_options = _ray_options(options)
    if ray_options is None:
        return _scorer(options)
    from verifiers.engine import EngineSettings
    from verifiers.ray import RayScorer

    overrides = {k: options[k] for k in _SETTING_KEYS if k in options}
    return RayScorer(settings=EngineSettings.from_env(**overrides), **ray_options)


def _estimator(config: Any) -> str:
    """``algorithm.adv_estimator`` (veRL's default, ``gae``, when the config has none)."""
    algorithm: Any = config.get("algorithm") if hasattr(config, "get") else None
    value: Any = algorithm.get("adv_estimator") if hasattr(algorithm, "get") else None
    return str(getattr(value, "value", value) or "gae")


def _group_size(config: Any) -> int:
    try:
        n = int(config.actor_rollout_ref.rollout.n)
    except (AttributeError, KeyError, TypeError, ValueError):
        n = 1
    return max(n, 1)


def _episode_result(non_tensor: Mapping[str, Any]) -> Result | None:
    """The final result of the sample's tool episode, if its rollout drove one.

    veRL's agent loop hands a sample's ``extra_fields`` to the reward worker as
    ``tool_extra_fields`` (streaming, one sample) or as columns of their own (the batch path);
    :mod:`verifiers.rl_adapters.verl_env` writes ``verifiers_result`` there when the episode
    finished and ``verifiers_request`` when it began. Only our tools write those keys; the
    model's text never reaches them.
    """
    fields = _plain(non_tensor.get("tool_extra_fields"))
    source: Mapping[str, Any] = fields if isinstance(fields, Mapping) else {}
    raw = source.get("verifiers_result", _plain(non_tensor.get("verifiers_result")))
    request = source.get("verifiers_request", _plain(non_tensor.get("verifiers_request")))
    if isinstance(raw, str):
        return Result.model_validate_json(raw)
    if isinstance(raw, Mapping):
        return Result.model_validate(dict(raw))
    if isinstance(request, str) and request:
        # The rollout opened an episode and ended without finishing it (out of turns or
        # tokens, never submitted): the model's doing, so a score of 0, never an abstain.
        return Result(
            id=request,
            reward=0.0,
            status="fail",
            feedback="the rollout ended before its episode was submitted or finished",
        )
    return None


class VerifiersRewardManager(RewardManagerBase):  # type: ignore[misc]
    """veRL reward manager scoring through ``verifiers`` (see the module docstring).

    Args:
        config: veRL's full trainer config.
        tokenizer: The policy's tokenizer (responses are decoded with special tokens skipped).
        compute_score: Ignored (veRL passes its default scorer); the manager scores itself.
        **kwargs: What veRL's reward loop passes besides (router address, RM tokenizer).

    Raises:
        ValueError: unknown ``reward.reward_kwargs`` keys or ``reward.num_workers`` != 1.
    """

    def __init__(self, config: Any, tokenizer: Any, compute_score: Any = None, **kwargs: Any):
        options = manager_options(config)
        super().__init__(config, tokenizer, compute_score)
        self.options = options
        self.components = parse_components(
            options.get("components"), "reward.reward_kwargs.components"
        )
        self.keys = extra_keys(self.components)
        self.rows = _Rows(options)
        self.scorer = _make_scorer(options)
        self.groups = GroupBaseline(
            _group_size(config), wait_s=float(options.get("group_wait_s", 60.0))
        )
        self._pending: list[tuple[dict[str, Any] | Result, asyncio.Future[Result]]] = []
        self._counts: dict[str, int] = {}
        self._logged_at = 0.0

    # -- one engine call for everything that arrives together ------------------------------

    async def _score(self, item: dict[str, Any] | Result) -> Result:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        self._pending.append((item, future))
        if len(self._pending) == 1:
            # After the tasks already scheduled in this loop turn have queued their items.
            loop.call_soon(self._flush)
        return await future

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if batch:
            asyncio.get_running_loop().create_task(self._run(batch))

    async def _run(
        self, batch: list[tuple[dict[str, Any] | Result, asyncio.Future[Result]]]
    ) -> None:
        try:
            results = await self.scorer.score_async([item for item, _ in batch])
        except Exception as exc:  # the engine itself failed: every item is an infra error
            results = [Result.errored("infra", f"scoring failed: {exc}") for _ in batch]
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)

    # -- veRL's entry point ------------------------------------------------------------------

    async def run_single(self, data: Any) -> dict[str, Any]:
        """Score the last sequence of ``data``: ``{"reward_score", "reward_extra_info"}``."""
        item_data = data[-1:][0]
        response_ids = item_data.batch["responses"]
        length = int(item_data.batch["attention_mask"][-response_ids.shape[-1] :].sum())
        tokenizer: Any = self.tokenizer
        text = str(tokenizer.decode(response_ids[:length], skip_special_tokens=True))
        non_tensor = item_data.non_tensor_batch
        reward_model = _plain(non_tensor.get("reward_model")) or {}
        ground_truth = (
            reward_model.get("ground_truth") if isinstance(reward_model, Mapping) else None
        )
        extra_info = _plain(non_tensor.get("extra_info"))
        item = self.rows.item(
            non_tensor.get("data_source"),
            text,
            ground_truth,
            extra_info if isinstance(extra_info, Mapping) else None,
        )
        episode = _episode_result(non_tensor)
        result = episode if episode is not None else await self._score(item)
        uid = non_tensor.get("uid")
        reward = result_reward(result)
        if uid is None:
            value = reward if reward is not None else 0.0
        else:
            key: Hashable = uid if isinstance(uid, Hashable) else str(uid)
            value = (await self.groups.settle([key], [reward]))[0]
        self._count(result)
        return {
            "reward_score": float(value),
            "reward_extra_info": extra_values(result, self.components),
        }

    def _count(self, result: Result) -> None:
        label = result.status if result.error is None else f"error/{result.error.kind}"
        self._counts[label] = self._counts.get(label, 0) + 1
        now = time.monotonic()
        if now - self._logged_at >= _LOG_EVERY_S:
            self._logged_at = now
            total = sum(self._counts.values())
            abstained = sum(
                n for k, n in self._counts.items() if k.startswith("error") or k == "skipped"
            )
            log.info(
                "verifiers: %d of %d samples abstained (zero advantage) since last report: %s",
                abstained,
                total,
                dict(sorted(self._counts.items())),
            )
            self._counts = {}
