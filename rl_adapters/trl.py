"""TRL reward functions (``GRPOTrainer``, ``RLOOTrainer``) backed by ``verifiers``.

TRL calls each reward function as ``f(prompts=, completions=, completion_ids=,
**dataset_columns, trainer_state=, log_extra=, log_metric=)`` and expects one ``float | None``
per completion; ``None`` becomes NaN, which TRL leaves out of the group baseline and of the
``rewards/<name>/mean`` log, and a row where every function returned ``None`` gets zero
advantage. ``async def`` functions run concurrently on TRL's own event loop.

:class:`TRLRewards` builds those functions::

    from verifiers.rl_adapters.trl import TRLRewards

    rewards = TRLRewards(verifier="code.tests", components=["tests_passed"])
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=rewards.funcs,
        args=GRPOConfig(..., reward_weights=rewards.weights),
        train_dataset=dataset,  # a "task" column (JSON string) or verifier/spec/reference
    )

- ``rewards.funcs[0]`` (named ``verifiers``) returns ``Result.reward``: the one reward TRL
  optimises. ``None`` for ``error`` and ``skipped``, never 0.0.
- One more function per name in ``components`` returns that component, so TRL logs
  ``rewards/verifiers/<component>/mean``. Their weight in ``rewards.weights`` is 0: they are
  logged, not optimised. Pass ``reward_weights=rewards.weights`` or they will be added in.
- All functions of one :class:`TRLRewards` share one scoring pass per batch.
- Every batch also logs, through TRL's ``log_metric``: ``verifiers/status/<status>`` (share of
  the batch), ``verifiers/error/<kind>`` (share), and ``verifiers/<component>`` (mean over
  rows that have it); and through ``log_extra``, the ``verifiers_status`` and
  ``verifiers_feedback`` columns of the completions table.

Under accelerate/DeepSpeed every rank calls the functions on its own slice; the
``machine_concurrency`` limit (see :mod:`verifiers.rl_adapters`) caps items in verification
per machine, across ranks.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from verifiers.engine import EngineSettings
from verifiers.types import Result, Status

from ._rows import MISSING, TaskDefaults, make_item, result_reward
from ._scorer import MachineConcurrency, Scorer, ScorerOwner

__all__ = ["TRLRewards"]

STATUSES: tuple[Status, ...] = ("pass", "fail", "error", "skipped")
ERROR_KINDS = ("bad_input", "infra", "timeout", "verifier")
FEEDBACK_CHARS = 500

RewardList = list[float | None]


class _Batch:
    """One scoring pass shared by every function of a :class:`TRLRewards` for one batch.

    TRL hands every reward function the very same ``prompts``/``completions`` list objects in
    one ``_calculate_rewards`` call; identity of those lists and of every column
    value (held strongly, so ids cannot be recycled) plus equality of a snapshot of the
    completions, the prompts and every column the rows' tasks are built from identifies the
    batch. Identity alone is not enough: a caller that mutates a column in place (a task
    string replaced, a task dict's reference edited) and calls again with the same list
    objects must be scored afresh, never handed the results of the old tasks. Completions
    and prompts are snapshotted as shallow copies; the task columns (``task``, ``verifier``,
    ``spec``, the reference and id columns) as shallow copies when they hold strings and
    numbers, as deep copies otherwise (dicts from an Arrow struct, say), so an edit inside a
    task dict is seen too.
    """

    def __init__(
        self,
        prompts: Any,
        completions: list[Any],
        columns: Mapping[str, Any],
        future: Future[list[Result]],
        watched: Sequence[str] = (),
    ) -> None:
        self.prompts = prompts
        self.completions = completions
        # completions and prompts: shallow copies (chat messages are not deep-copied per
        # batch; a message edited in place is the caller's own business, not another task)
        self.snapshot = list(completions)
        self.prompt_snapshot = list(prompts) if isinstance(prompts, list | tuple) else prompts
        self.columns = dict(columns)
        self.watched = {k: _snapshot(columns.get(k)) for k in watched}
        self.future = future
        self.logged = False

    def matches(self, prompts: Any, completions: list[Any], columns: Mapping[str, Any]) -> bool:
        return (
            self.prompts is prompts
            and self.completions is completions
            and self.columns.keys() == columns.keys()
            and all(self.columns[k] is v for k, v in columns.items())
            and self.snapshot == completions
            and _same(self.prompt_snapshot, prompts)
            and all(_same(snap, columns.get(k)) for k, snap in self.watched.items())
        )


_IMMUTABLE = (str, bytes, int, float, bool, type(None))


def _snapshot(values: Any) -> Any:
    """A copy of a column that a later in-place edit cannot reach (see :class:`_Batch`)."""
    if not isinstance(values, list | tuple):
        return values
    if all(type(v) in _IMMUTABLE for v in values):
        return list(values)
    return copy.deepcopy(list(values))


def _same(snapshot: Any, values: Any) -> bool:
    if isinstance(values, list | tuple):
        return isinstance(snapshot, list) and snapshot == list(values)
    return snapshot is values or bool(snapshot == values)


class TRLRewards(ScorerOwner):
    """Reward functions for TRL trainers, scoring through one long-lived engine.

    Args:
        verifier: Default verifier for rows without ``task``/``verifier`` columns.
        spec: Settings of the default verifier.
        checks: Several verifiers for rows without their own task (``Task.checks`` dicts).
        components: Component names to expose as their own reward functions (for logging).
        name: Name of the main function; TRL logs ``rewards/<name>/mean``.
        asynchronous: ``async def`` functions (TRL runs them concurrently on its loop) when
            True; plain functions when False.
        reference_column: Dataset column holding the reference for default/``verifier``
            rows (``reference`` unless told).
        id_column: Dataset column echoed as the trajectory id, when present.
        settings: Engine settings (default: ``EngineSettings.from_env()``).
        machine_concurrency: Machine-wide limit across ranks; see
            :data:`verifiers.rl_adapters.MachineConcurrency`.
        machine_key: Names the machine-wide budget (one per job).
        base_dir: Where relative artifact paths resolve.
        scorer: Use this :class:`~verifiers.rl_adapters.Scorer` instead of making one.
    """

    def __init__(
        self,
        *,
        verifier: str | None = None,
        spec: Mapping[str, Any] | None = None,
        checks: list[dict[str, Any]] | None = None,
        components: Sequence[str] = (),
        name: str = "verifiers",
        asynchronous: bool = True,
        reference_column: str = "reference",
        id_column: str = "id",
        settings: EngineSettings | None = None,
        machine_concurrency: MachineConcurrency = "auto",
        machine_key: str = "default",
        base_dir: str | None = None,
        scorer: Scorer | None = None,
    ) -> None:
        self.defaults = TaskDefaults(verifier=verifier, spec=spec, checks=checks)
        self.components = list(components)
        self.name = name
        self.asynchronous = asynchronous
        self.reference_column = reference_column
        self.id_column = id_column
        self._machine_concurrency: MachineConcurrency = machine_concurrency
        self._machine_key = machine_key
        self._use_scorer(
            scorer,
            settings,
            base_dir=base_dir,
            machine_concurrency=machine_concurrency,
            machine_key=machine_key,
        )
        self._lock = threading.Lock()
        self._batch: _Batch | None = None
        main = self._make(self.name, None)
        self.funcs: list[Callable[..., Any]] = [main] + [
            self._make(f"{self.name}/{component}", component) for component in self.components
        ]
        """The reward functions to hand to ``reward_funcs=``."""
        self.weights: list[float] = [1.0] + [0.0] * len(self.components)
        """The matching ``GRPOConfig(reward_weights=...)``: only the main reward is optimised."""

    # -- building the functions ---------------------------------------------------------

    def _make(self, func_name: str, component: str | None) -> Callable[..., Any]:
        cls = AsyncRewardFunction if self.asynchronous else RewardFunction
        return cls(self, func_name, component)

    def guard(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap another reward function so it returns ``None`` where the verifier abstains.

        TRL sums the reward functions of a row with ``nansum``: a ``None`` from the verifier
        next to a number from any other function (a format reward, a length penalty) makes
        the row count as scored, the verifier's share as 0, and a correct solution that hit an
        infra error is trained on like a wrong one. TRL gives zero advantage to a row only
        when *every* function returns ``None``; wrapping the others with ``guard`` makes them
        abstain on exactly the rows where the verifier does. The wrapper shares the batch's
        one scoring pass, keeps ``func``'s name (so TRL's logs do not change), is ``async``
        when ``func`` is, and pickles when ``func`` does (TRL's AsyncGRPO).
        """
        is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
            type(func).__call__
        )
        cls = AsyncGuardedReward if is_async else GuardedReward
        return cls(self, func)

    def __getstate__(self) -> dict[str, Any]:
        # Pickled for TRL's AsyncGRPO (its rollout worker is a spawned process): the
        # configuration travels, the engine does not; the child builds its own on first use.
        return {
            "defaults": self.defaults,
            "components": self.components,
            "name": self.name,
            "asynchronous": self.asynchronous,
            "reference_column": self.reference_column,
            "id_column": self.id_column,
            "settings": self.scorer.settings,
            "base_dir": self.scorer.base_dir,
            "machine_concurrency": self._machine_concurrency,
            "machine_key": self._machine_key,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.defaults = state["defaults"]
        self.components = list(state["components"])
        self.name = state["name"]
        self.asynchronous = state["asynchronous"]
        self.reference_column = state["reference_column"]
        self.id_column = state["id_column"]
        self._machine_concurrency = state["machine_concurrency"]
        self._machine_key = state["machine_key"]
        self._use_scorer(
            None,
            state["settings"],
            base_dir=state["base_dir"],
            machine_concurrency=self._machine_concurrency,
            machine_key=self._machine_key,
        )
        self._lock = threading.Lock()
        self._batch = None
        self.funcs = [self._make(self.name, None)] + [
            self._make(f"{self.name}/{c}", c) for c in self.components
        ]
        self.weights = [1.0] + [0.0] * len(self.components)

    def _abstained(self, batch: _Batch, results: list[Result], values: Any) -> RewardList:
        out: RewardList = []
        for result, value in zip(results, list(values), strict=True):
            out.append(None if result_reward(result) is None or value is None else float(value))
        return out

    # -- one pass per batch --------------------------------------------------------------

    def _batch_for(
        self, prompts: list[Any] | None, completions: list[Any], kwargs: dict[str, Any]
    ) -> _Batch:
        with self._lock:
            batch = self._batch
            if batch is not None and batch.matches(prompts, completions, kwargs):
                return batch
            items = self.items(prompts, completions, kwargs)
            future = self.scorer.submit(items)
            watched = ("task", "verifier", "spec", self.reference_column, self.id_column)
            batch = _Batch(prompts, completions, kwargs, future, watched)
            self._batch = batch
            return batch

    def items(
        self, prompts: list[Any] | None, completions: list[Any], columns: Mapping[str, Any]
    ) -> list[dict[str, Any] | Result]:
        """The trajectories (or ready ``bad_input`` results) for one TRL batch."""
        n = len(completions)

        def column(key: str) -> list[Any] | None:
            values = columns.get(key)
            if isinstance(values, list | tuple) and len(values) == n:
                return list(values)
            return None

        tasks = column("task")
        verifiers_ = column("verifier")
        specs = column("spec")
        references = column(self.reference_column)
        ids = column(self.id_column)
        state = columns.get("trainer_state")
        step = getattr(state, "global_step", None)
        metadata = {"step": step} if step is not None else {}
        items: list[dict[str, Any] | Result] = []
        for i in range(n):
            items.append(
                make_item(
                    completion=completions[i],
                    prompt=prompts[i] if prompts is not None and i < len(prompts) else None,
                    task=tasks[i] if tasks is not None else MISSING,
                    verifier=verifiers_[i] if verifiers_ is not None else MISSING,
                    spec=specs[i] if specs is not None else MISSING,
                    reference=references[i] if references is not None else MISSING,
                    id=ids[i] if ids is not None else None,
                    metadata=metadata,
                    defaults=self.defaults,
                )
            )
        return items

    def _finish(
        self,
        batch: _Batch,
        results: list[Result],
        component: str | None,
        kwargs: Mapping[str, Any],
    ) -> RewardList:
        if component is None:
            with self._lock:
                first = not batch.logged
                batch.logged = True
            if first:
                self._log(results, kwargs)
            return [result_reward(r) for r in results]
        out: RewardList = []
        for r in results:
            value = r.components.get(component) if result_reward(r) is not None else None
            out.append(None if value is None else float(value))
        return out

    def _log(self, results: list[Result], kwargs: Mapping[str, Any]) -> None:
        n = max(len(results), 1)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            for status in STATUSES:
                log_metric(
                    f"verifiers/status/{status}", sum(r.status == status for r in results) / n
                )
            for kind in ERROR_KINDS:
                count = sum(r.error is not None and r.error.kind == kind for r in results)
                log_metric(f"verifiers/error/{kind}", count / n)
            sums: dict[str, list[float]] = {}
            for r in results:
                if result_reward(r) is None:
                    continue
                for key, value in r.components.items():
                    sums.setdefault(key, []).append(float(value))
            for key in sorted(sums):
                log_metric(f"verifiers/{key}", sum(sums[key]) / len(sums[key]))
        log_extra = kwargs.get("log_extra")
        if callable(log_extra):
            log_extra("verifiers_status", [r.status for r in results])
            log_extra(
                "verifiers_feedback",
                [
                    (r.error.message if r.error is not None else r.feedback)[:FEEDBACK_CHARS]
                    for r in results
                ],
            )


class RewardFunction:
    """One reward function of a :class:`TRLRewards` (sync). Picklable: it carries its owner."""

    def __init__(self, owner: TRLRewards, name: str, component: str | None) -> None:
        self.owner = owner
        self.component = component
        self.__name__ = name  # TRL's logs name a reward by it

    def __call__(
        self, prompts: list[Any] | None = None, completions: list[Any] | None = None, **kwargs: Any
    ) -> RewardList:
        batch = self.owner._batch_for(prompts, completions or [], kwargs)
        return self.owner._finish(batch, batch.future.result(), self.component, kwargs)


class AsyncRewardFunction(RewardFunction):
    """One reward function of a :class:`TRLRewards`; TRL awaits it on its own loop."""

    async def __call__(  # type: ignore[override]
        self, prompts: list[Any] | None = None, completions: list[Any] | None = None, **kwargs: Any
    ) -> RewardList:
        batch = self.owner._batch_for(prompts, completions or [], kwargs)
        results = await asyncio.wrap_future(batch.future)
        return self.owner._finish(batch, results, self.component, kwargs)


class GuardedReward:
    """Another reward function, ``None`` where the verifier abstains (:meth:`TRLRewards.guard`)."""

    def __init__(self, owner: TRLRewards, func: Callable[..., Any]) -> None:
        self.owner = owner
        self.func = func
        self.__name__ = str(getattr(func, "__name__", type(func).__name__))

    def __call__(
        self, prompts: list[Any] | None = None, completions: list[Any] | None = None, **kwargs: Any
    ) -> RewardList:
        batch = self.owner._batch_for(prompts, completions or [], kwargs)
        values = self.func(prompts=prompts, completions=completions, **kwargs)
        return self.owner._abstained(batch, batch.future.result(), values)


class AsyncGuardedReward(GuardedReward):
    """:class:`GuardedReward` for an ``async`` reward function."""

    async def __call__(  # type: ignore[override]
        self, prompts: list[Any] | None = None, completions: list[Any] | None = None, **kwargs: Any
    ) -> RewardList:
        batch = self.owner._batch_for(prompts, completions or [], kwargs)
        values = await self.func(prompts=prompts, completions=completions, **kwargs)
        results = await asyncio.wrap_future(batch.future)
        return self.owner._abstained(batch, results, values)
